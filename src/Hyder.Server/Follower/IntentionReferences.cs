using Hyder.Tree.Serialization;

namespace Hyder.Server.Follower;

/// <summary>
/// The rule every server applies, before it fetches anything an intention's final block names, to
/// the ordinal and the log positions the block names: none may point at the intention itself, after
/// it, or into its own group-meld pair. Such an intention is not one an honest executor writes, and
/// without this rule it is not decided alike everywhere — a threaded deserializer would wait
/// forever for its snapshot, or a server would fetch a part the log does not hold yet on one server
/// and does on another — so the reader aborts it as <c>Rejected</c> with the reason returned here,
/// in both the threaded and the cooperative mode.
/// </summary>
/// <remarks>
/// The fields: the snapshot sequence s (an ordinal) and the part positions (log positions). The
/// nodes' versions (the position table, SCVs, SSVs, delete entries) name log positions too, but
/// the decoder resolves outside references against S(s), which holds only nodes of earlier
/// intentions, and meld compares the rest with the nodes of earlier states, so a version that
/// points forward or at the intention itself fails the same way on every server.
/// </remarks>
internal static class IntentionReferences
{
    /// <summary>
    /// Null when <paramref name="header"/>, the final block of intention
    /// <paramref name="ordinal"/> at log position <paramref name="position"/>, names only what
    /// precedes it; otherwise why not (the same text on every server).
    /// </summary>
    public static string? Check(IntentionHeader header, long ordinal, long position, bool groupMeld)
    {
        var s = header.SnapshotSequence;
        if (s >= ordinal)
        {
            return $"intention #{ordinal} @{position} names snapshot #{s}, which is not before it";
        }

        // Group meld pairs ordinals (2k − 1, 2k) and publishes the state of the first only with the
        // pair: no executor can have run the second on it, and waiting for it would wait for itself.
        if (groupMeld && ordinal % 2 == 0 && s == ordinal - 1)
        {
            return $"intention #{ordinal} @{position} names snapshot #{s}, the first of its own group-meld pair";
        }

        // Parts are appended before their final block.
        foreach (var part in header.PartPositions)
        {
            if (part >= position)
            {
                return $"intention #{ordinal} @{position} names part @{part}, which is not before it";
            }
        }

        return null;
    }
}
