using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Tree;
using Hyder.Tree.Serialization;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Core;

/// <summary>What a server does before it serves: agree on the settings, find a checkpoint.</summary>
internal static class Startup
{
    /// <summary>How long a scan at start waits at a hole below the tail before filling it.</summary>
    private static readonly TimeSpan DefaultHoleTimeout = TimeSpan.FromMilliseconds(500);

    /// <summary>A checkpoint found in the log, loaded.</summary>
    public sealed record Restart(long Position, Node? Root, CheckpointInfo Info)
    {
        /// <summary>A format-4 checkpoint: it needs nothing of the log below its resume position.</summary>
        public bool SelfContained { get; init; }
    }

    /// <summary>
    /// The log's first record must be the cluster settings: on a new log this server writes its
    /// own (when two servers race, the lower address wins for both); on an existing one they must
    /// equal this server's.
    /// </summary>
    public static async Task<(ClusterSettings Settings, long Position)> AgreeOnSettingsAsync(
        ISharedLog log, ClusterSettings mine, ILogger logger, TimeProvider time, CancellationToken cancellationToken)
    {
        var buffer = new byte[log.BlockSize];
        (long Position, int Length)? first;
        try
        {
            first = await FirstDataBlockAsync(log, buffer, time, cancellationToken).ConfigureAwait(false);
        }
        catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
        {
            // The log was trimmed past its settings record: the checkpoint a server must start
            // from states them (CheckTrimmedStart).
            return (mine, -1);
        }

        if (first is null)
        {
            var at = await log.AppendAsync(Blocks.Control(ControlKind.Settings, mine.Encode()), cancellationToken).ConfigureAwait(false);
            logger.WroteSettings(mine, at);
            first = await FirstDataBlockAsync(log, buffer, time, cancellationToken).ConfigureAwait(false)
                ?? throw new ServerStartException("the log lost the settings record just appended");
        }

        var (position, length) = first.Value;
        var theirs = ReadSettings(buffer.AsSpan(0, length), position);
        if (theirs != mine)
        {
            throw new ServerStartException(
                $"this server's cluster settings ({mine}) differ from the log's ({theirs}, @{position}); every server of a cluster must run the log's settings");
        }

        return (theirs, position);
    }

    /// <summary>
    /// The cluster settings in the log's first record. Not async: its spans must not be in the
    /// scope of an await (a Debug build keeps every local of an async method across its awaits).
    /// </summary>
    private static ClusterSettings ReadSettings(ReadOnlySpan<byte> block, long position)
    {
        if (!Blocks.TryParse(block, out var kind, out var error) || kind != BlockKind.Control
            || !ControlRecord.TryDecode(Blocks.ControlPayload(block), out var control, out var body) || control != ControlKind.Settings)
        {
            throw new ServerStartException(
                $"the log's first record (@{position}) is not a Hyder cluster settings record{(error is null ? "" : $" ({error})")}: this log was not made by a Hyder transaction server");
        }

        try
        {
            return ClusterSettings.Decode(body);
        }
        catch (FormatException e)
        {
            throw new ServerStartException($"the log's settings record (@{position}) cannot be read: {e.Message}", e);
        }
    }

    private static async Task<(long Position, int Length)?> FirstDataBlockAsync(ISharedLog log, byte[] buffer, TimeProvider time, CancellationToken cancellationToken)
    {
        var tail = await log.TailAsync(cancellationToken).ConfigureAwait(false);
        for (long p = 0; p < tail; p++)
        {
            var read = await ReadSettledAsync(log, p, buffer, DefaultHoleTimeout, time, cancellationToken).ConfigureAwait(false);
            if (read.Kind == LogEntryKind.Data)
            {
                return (p, read.Length);
            }
        }

        return null;
    }

    /// <summary>Reads an address below the tail, filling it if it stays unwritten (a writer that crashed).</summary>
    /// <remarks>
    /// With a custom <paramref name="time"/> (the simulation's virtual clock) the pause between
    /// reads takes no cancellation token: cancelling a delay on a custom clock continues on the
    /// thread pool. The read after it sees the cancellation.
    /// The log reader calls it for every block and it nearly always completes at once: a
    /// <see cref="ValueTask{TResult}"/> from a pooling builder allocates nothing then.
    /// </remarks>
    [System.Runtime.CompilerServices.AsyncMethodBuilder(typeof(System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder<>))]
    public static async ValueTask<LogRead> ReadSettledAsync(ISharedLog log, long position, Memory<byte> buffer, TimeSpan holeTimeout, TimeProvider time, CancellationToken cancellationToken)
    {
        var started = time.GetTimestamp();
        while (true)
        {
            var read = await log.ReadAsync(position, buffer, cancellationToken).ConfigureAwait(false);
            if (read.Kind != LogEntryKind.Unwritten)
            {
                return read;
            }

            if (time.GetElapsedTime(started) >= holeTimeout)
            {
                if (await log.FillAsync(position, cancellationToken).ConfigureAwait(false) == LogEntryKind.Filled)
                {
                    return new LogRead(LogEntryKind.Filled, 0);
                }
            }
            else
            {
                await (time == TimeProvider.System
                    ? Task.Delay(1, cancellationToken)
                    : Task.Delay(TimeSpan.FromMilliseconds(1), time, CancellationToken.None)).ConfigureAwait(false);
            }
        }
    }

    /// <summary>
    /// A log trimmed past its settings record (<see cref="AgreeOnSettingsAsync"/> answered position
    /// −1) can only be joined from a checkpoint, which states the cluster's settings.
    /// </summary>
    public static void CheckTrimmedStart(Restart? restart, ClusterSettings mine)
    {
        if (restart is null)
        {
            throw new ServerStartException(
                "the log is trimmed past its first record and no checkpoint above the trim mark could be loaded: a server can join a trimmed log only from a checkpoint");
        }

        if (restart.Info.Settings is not { } body)
        {
            throw new ServerStartException($"the log is trimmed past its first record and the checkpoint @{restart.Position} does not state the cluster settings");
        }

        var theirs = ClusterSettings.Decode(body);
        if (theirs != mine)
        {
            throw new ServerStartException(
                $"this server's cluster settings ({mine}) differ from the log's ({theirs}, as the checkpoint @{restart.Position} states them); every server of a cluster must run the log's settings");
        }
    }

    /// <summary>The latest checkpoint in the log (scanning back from the tail), loaded; null when there is none.</summary>
    /// <remarks>
    /// A format-4 checkpoint loads asynchronously, so a cooperative server (the simulation's, on
    /// one thread) starts from one too; <paramref name="inline"/>: load a format-3 checkpoint,
    /// whose reads block, on the calling thread rather than on the thread pool.
    /// </remarks>
    public static async Task<Restart?> FindCheckpointAsync(ISharedLog log, long settingsPosition, ILogger logger, bool inline, CancellationToken cancellationToken)
    {
        var tail = await log.TailAsync(cancellationToken).ConfigureAwait(false);
        var buffer = new byte[log.BlockSize];
        var source = new LogNodeSource(log);
        for (var p = tail - 1; p > settingsPosition; p--)
        {
            LogRead read;
            try
            {
                read = await log.ReadAsync(p, buffer, cancellationToken).ConfigureAwait(false);
            }
            catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
            {
                break;
            }

            if (read.Kind != LogEntryKind.Data || !Blocks.TryParse(buffer.AsSpan(0, read.Length), out var kind, out _) || kind != BlockKind.Checkpoint)
            {
                continue;
            }

            var final = buffer.AsSpan(0, read.Length).ToArray();
            try
            {
                if (await NeedsTrimmedAsync(log, final, buffer, cancellationToken).ConfigureAwait(false) is { } needs)
                {
                    // A checkpoint of an earlier barrier that finished after the one the trim
                    // kept: an older checkpoint above the mark is still a valid start.
                    logger.CheckpointUnreadable(p, $"it needs log position @{needs}, which the log has trimmed");
                    continue;
                }

                var (root, metadata) = await Blocks.LoadCheckpointAsync(final, source, inline, cancellationToken).ConfigureAwait(false);
                return new Restart(p, root, CheckpointInfo.Decode(metadata)) { SelfContained = final[4] == BlockFormat.CheckpointVersion };
            }
            catch (Exception e) when (e is FormatException or Tree.Serialization.IntentionFormatException or SharedLogException)
            {
                logger.CheckpointUnreadable(p, e.Message);
            }
        }

        return null;
    }

    /// <summary>The lowest position a format-4 checkpoint needs, if the log has trimmed it (null: not trimmed, or format 3).</summary>
    private static async Task<long?> NeedsTrimmedAsync(ISharedLog log, byte[] final, byte[] buffer, CancellationToken cancellationToken)
    {
        if (final.Length <= 4 || final[4] != BlockFormat.CheckpointVersion)
        {
            return null;
        }

        var needs = CheckpointReader.ReadFinal(final).NeedsFrom;
        try
        {
            await log.ReadAsync(needs, buffer, cancellationToken).ConfigureAwait(false);
            return null;
        }
        catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
        {
            return needs;
        }
    }
}
