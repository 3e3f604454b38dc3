using Microsoft.Extensions.Logging;

namespace Hyder.Server.Core;

/// <summary>The server's log lines (source-generated: nothing is formatted when the level is off).</summary>
internal static partial class ServerLog
{
    [LoggerMessage(Level = LogLevel.Information, Message = "New log: wrote the cluster settings ({Settings}) at @{Position}")]
    public static partial void WroteSettings(this ILogger logger, Cluster.ClusterSettings settings, long position);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The checkpoint at @{Position} cannot be loaded ({Reason}); looking for an older one")]
    public static partial void CheckpointUnreadable(this ILogger logger, long position, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Server}: restarting from the checkpoint @{Position}: state after #{Barrier} (sequence {Sequence}), reading from @{Resume}")]
    public static partial void Restarting(this ILogger logger, string server, long position, long barrier, long sequence, long resume);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Server}: caught up with the log: melded up to @{Tail} (ordinal #{Ordinal}) in {Seconds:0.0} s")]
    public static partial void CaughtUp(this ILogger logger, string server, long tail, long ordinal, double seconds);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Server}: serving; cluster: {Settings}; pipeline threads: {Threading}")]
    public static partial void Serving(this ILogger logger, string server, Cluster.ClusterSettings settings, Tree.Pipeline.ResolvedThreading threading);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Server}: the pipeline failed")]
    public static partial void PipelineFailed(this ILogger logger, Exception e, string server);

    [LoggerMessage(Level = LogLevel.Critical, Message = "{Server}: the {Stage} failed; the server stops serving")]
    public static partial void StageFailed(this ILogger logger, Exception e, string server, string stage);

    [LoggerMessage(Level = LogLevel.Critical, Message = "{Server}: deserializer {Lane} failed; the server stops serving")]
    public static partial void DeserializerFailed(this ILogger logger, Exception e, string server, int lane);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Server}: the block at @{Position} is not a Hyder block ({Reason}); skipped, as on every server")]
    public static partial void SkippedBlock(this ILogger logger, string server, long position, string? reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Server}: a peer's broadcast block for @{Position} differs from the log's ({Reason}); the log's is used")]
    public static partial void BroadcastMismatch(this ILogger logger, string server, long position, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Server}: checkpoint of the state after #{Barrier} written at @{Position} ({Blocks} blocks)")]
    public static partial void CheckpointWritten(this ILogger logger, string server, long barrier, long position, int blocks);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Server}: writing the checkpoint after #{Barrier} failed")]
    public static partial void CheckpointFailed(this ILogger logger, Exception e, string server, long barrier);
}
