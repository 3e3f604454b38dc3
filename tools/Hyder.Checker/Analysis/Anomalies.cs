namespace Hyder.Checker;

/// <summary>
/// Names of the anomalies the checker reports, with a one-line definition each. Cycle anomalies
/// follow Adya's phenomena as Elle reports them; the others say the data, not the dependency
/// graph, is impossible.
/// </summary>
public static class Anomalies
{
    /// <summary>A cycle of write-write edges only (dirty write).</summary>
    public const string G0 = "G0";

    /// <summary>Aborted read: a committed transaction observed a value written by a transaction that failed.</summary>
    public const string G1a = "G1a";

    /// <summary>Intermediate read: a transaction observed a value that its writer later overwrote within the same transaction.</summary>
    public const string G1b = "G1b";

    /// <summary>A cycle of write-write and write-read edges, at least one write-read (circular information flow).</summary>
    public const string G1c = "G1c";

    /// <summary>A cycle with exactly one anti-dependency (read skew, lost update).</summary>
    public const string GSingle = "G-single";

    /// <summary>A cycle with two or more anti-dependencies (write skew).</summary>
    public const string G2Item = "G2-item";

    /// <summary>
    /// Lost update (registers): two committed transactions read the same version of a key and both
    /// then wrote it. Whichever write came second overwrote a version its writer never saw: a
    /// G-single in every possible version order, even when the order itself is unknown.
    /// </summary>
    public const string LostUpdate = "lost-update";

    /// <summary>
    /// A cycle with two or more anti-dependencies, no two of them next to each other. Snapshot
    /// isolation cannot produce it: under SI, every dependency cycle has two consecutive
    /// anti-dependencies (Fekete et al., 2005), so this is the write skew SI does not excuse.
    /// </summary>
    public const string GNonadjacent = "G-nonadjacent";

    /// <summary>Suffix of a cycle that needs a real-time edge: allowed by serializable, not by strict serializable.</summary>
    public const string RealtimeSuffix = "-realtime";

    /// <summary>Two reads of one list that cannot both be prefixes of one order of appends.</summary>
    public const string IncompatibleOrder = "incompatible-order";

    /// <summary>A read observed a value that no transaction ever wrote to that key.</summary>
    public const string GarbageRead = "garbage-read";

    /// <summary>A list read contains the same element twice.</summary>
    public const string DuplicateElements = "duplicate-elements";

    /// <summary>A transaction's read disagrees with its own earlier reads and writes of the key.</summary>
    public const string Internal = "internal";

    /// <summary>The cycle anomalies, weakest dependency mix first.</summary>
    public static IReadOnlyList<string> Cycles { get; } = [G0, G1c, GSingle, G2Item];

    /// <summary>Anomalies that no model allows: the store returned data it could not have had.</summary>
    public static IReadOnlyList<string> DataAnomalies { get; } = [IncompatibleOrder, GarbageRead, DuplicateElements, Internal];

    /// <summary>The real-time variant of a cycle anomaly (G-single-realtime).</summary>
    public static string Realtime(string cycle) => cycle + RealtimeSuffix;
}
