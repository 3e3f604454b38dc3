using System.Globalization;

namespace Hyder.Checker;

/// <summary>Dependency kinds between transactions (Adya), plus real-time order.</summary>
[Flags]
public enum EdgeKind
{
    /// <summary>No edge.</summary>
    None = 0,

    /// <summary>Write-write: the target installed the next (or a later) version of a key the source wrote.</summary>
    WW = 1,

    /// <summary>Write-read: the target read a version the source wrote.</summary>
    WR = 2,

    /// <summary>Read-write (anti-dependency): the source read a version the target's write overwrote.</summary>
    RW = 4,

    /// <summary>Real time: the source completed before the target was invoked.</summary>
    Realtime = 8,

    /// <summary>The three data dependencies.</summary>
    Data = WW | WR | RW,
}

/// <summary>
/// One inferred dependency, with the key and values that justify it. <see cref="Before"/> and
/// <see cref="After"/> depend on the kind: ww, the source's version and the target's later
/// version; wr, the version read (both fields); rw, the last version the source saw (null:
/// none / nil) and the target's later version. Real-time edges carry no key.
/// </summary>
public readonly record struct Edge(int From, int To, EdgeKind Kind, bool IsList, long Key, long? Before, long? After)
{
    /// <summary>A real-time edge.</summary>
    public static Edge Realtime(int from, int to) => new(from, to, EdgeKind.Realtime, false, 0, null, null);

    /// <summary>Short name of the kind: ww, wr, rw, rt.</summary>
    public string KindName => Kind switch
    {
        EdgeKind.WW => "ww",
        EdgeKind.WR => "wr",
        EdgeKind.RW => "rw",
        _ => "rt",
    };

    /// <summary>
    /// One line saying why the edge exists, e.g. <c>T1 -rw-> T2: T1 read list 5 up to 2 and missed
    /// 3, appended next by T2</c>. <paramref name="txns"/> is the history's transactions, indexed by id.
    /// </summary>
    public string Describe(IReadOnlyList<Txn> txns)
    {
        var from = $"T{From}";
        var to = $"T{To}";
        var obj = IsList ? $"list {Key}" : $"register {Key}";
        var why = (Kind, IsList) switch
        {
            (EdgeKind.WW, true) => $"on {obj}, {to} appended {V(After)} after {from}'s {V(Before)}",
            (EdgeKind.WW, false) => $"on {obj}, {to} wrote {V(After)}, a later version than {from}'s {V(Before)}",
            (EdgeKind.WR, true) => $"{to} read {obj} up to {V(After)}, which {from} appended",
            (EdgeKind.WR, false) => $"{to} read {obj} = {V(After)}, which {from} wrote",
            (EdgeKind.RW, true) => $"{from} read {obj} {(Before is null ? "as empty" : $"up to {V(Before)}")} and missed {V(After)}, appended next by {to}",
            (EdgeKind.RW, false) => $"{from} read {obj} = {V(Before)}, and {to} wrote a later version {V(After)}",
            _ => $"{from} completed (event {txns[From].CompleteIndex}) before {to} was invoked (event {txns[To].InvokeIndex})",
        };
        return $"{from} -{KindName}-> {to}: {why}";
    }

    private static string V(long? v) => v?.ToString(CultureInfo.InvariantCulture) ?? "nil";
}
