namespace Hyder.Checker;

/// <summary>Consistency models the checker judges a history against, weakest first.</summary>
public enum ConsistencyModel
{
    /// <summary>Adya PL-1: forbids G0 (and the data anomalies).</summary>
    ReadUncommitted,

    /// <summary>Adya PL-2: forbids G0, G1a, G1b, G1c.</summary>
    ReadCommitted,

    /// <summary>Snapshot isolation: also forbids G-single, lost updates and G-nonadjacent; allows other G2-item cycles (write skew).</summary>
    SnapshotIsolation,

    /// <summary>
    /// Adya PL-2.99: forbids G2-item too. Over single keys (no predicates) it forbids what
    /// serializable forbids; the difference, predicate G2, does not show in these workloads.
    /// </summary>
    RepeatableRead,

    /// <summary>Adya PL-3: no G0, G1a, G1b, G1c, G-single (nor lost update), G2-item.</summary>
    Serializable,

    /// <summary>Serializable in an order consistent with real time: no cycle even with real-time edges.</summary>
    StrictSerializable,
}

/// <summary>Which anomalies each model forbids.</summary>
public static class ConsistencyModels
{
    private static readonly string[] s_readUncommitted = [.. Anomalies.DataAnomalies, Anomalies.G0];
    private static readonly string[] s_readCommitted = [.. s_readUncommitted, Anomalies.G1a, Anomalies.G1b, Anomalies.G1c];
    private static readonly string[] s_snapshot = [.. s_readCommitted, Anomalies.GSingle, Anomalies.LostUpdate, Anomalies.GNonadjacent];
    private static readonly string[] s_serializable = [.. s_snapshot, Anomalies.G2Item];
    private static readonly string[] s_strict = [.. s_serializable, .. Anomalies.Cycles.Select(Anomalies.Realtime)];

    /// <summary>The anomaly names <paramref name="model"/> forbids.</summary>
    public static IReadOnlySet<string> Forbidden(ConsistencyModel model) => new HashSet<string>(model switch
    {
        ConsistencyModel.ReadUncommitted => s_readUncommitted,
        ConsistencyModel.ReadCommitted => s_readCommitted,
        ConsistencyModel.SnapshotIsolation => s_snapshot,
        ConsistencyModel.RepeatableRead or ConsistencyModel.Serializable => s_serializable,
        _ => s_strict,
    }, StringComparer.Ordinal);
}
