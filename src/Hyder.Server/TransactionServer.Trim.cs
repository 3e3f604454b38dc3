using Hyder.Log;
using Hyder.Server.Core;
using Hyder.Tree;
using Hyder.Tree.Serialization;
using Microsoft.Extensions.Logging;

namespace Hyder.Server;

/// <summary>
/// Self-contained checkpoints and the trim of the log below them (docs/server.md, "Trimming the
/// log"; meld paper App. B).
/// </summary>
public sealed partial class TransactionServer
{
    private readonly Lock _trimLock = new();

    /// <summary>Format-4 checkpoints the reader passed, in log order: final block position and the lowest position each needs.</summary>
    private readonly List<(long Position, long NeedsFrom)> _checkpointsSeen = [];

    private long _trimmedBelow;
    private int _policyTrimRunning;

    /// <summary>The trim mark this server last issued (0: none).</summary>
    public long TrimmedBelow => Interlocked.Read(ref _trimmedBelow);

    /// <summary>The log position of the checkpoint's final block this server started from (null: it replayed the log from its first record).</summary>
    public long? StartedFromCheckpoint { get; private set; }

    /// <summary>
    /// The trim rule, from the log alone: the mark may go up to the lowest position the
    /// <paramref name="keepCheckpoints"/> latest self-contained checkpoints (by final block) need
    /// from (where a server starting from one resumes reading), less <see cref="ServerOptions.TrimMargin"/>.
    /// Null while this server has read fewer such checkpoints.
    /// </summary>
    public long? TrimMark(int keepCheckpoints)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(keepCheckpoints, 1);
        lock (_trimLock)
        {
            if (_checkpointsSeen.Count < keepCheckpoints)
            {
                return null;
            }

            // The lowest of the k latest: two servers' checkpoints may finish in either order, so
            // a later final block can need an earlier position.
            var lowest = long.MaxValue;
            for (var i = _checkpointsSeen.Count - keepCheckpoints; i < _checkpointsSeen.Count; i++)
            {
                lowest = Math.Min(lowest, _checkpointsSeen[i].NeedsFrom);
            }

            return Math.Max(0, lowest - _options.TrimMargin);
        }
    }

    /// <summary>
    /// The admin trim: prefix-trims the shared log at <see cref="TrimMark"/> (every unit deletes
    /// the segment files and index pages wholly below it) and forgets the checkpoints below it.
    /// Idempotent and monotonic: any server may issue it, and a lower mark changes nothing.
    /// Returns the mark in effect.
    /// </summary>
    public async Task<long> TrimAsync(int keepCheckpoints = 1, CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        if (TrimMark(keepCheckpoints) is not { } mark || mark <= TrimmedBelow)
        {
            return TrimmedBelow;
        }

        await _log.PrefixTrimAsync(mark, cancellationToken).ConfigureAwait(false);
        lock (_trimLock)
        {
            if (mark > _trimmedBelow)
            {
                Interlocked.Exchange(ref _trimmedBelow, mark);
            }

            _checkpointsSeen.RemoveAll(c => c.NeedsFrom < mark);
        }

        TrimLog.Trimmed(_logger, _options.ServerId, mark, keepCheckpoints);
        return mark;
    }

    /// <summary>
    /// The admin command's trim (<see cref="Engine.ITransactionEngine.TrimLogAsync"/>): as
    /// <see cref="TrimAsync"/>, but a count out of range or more checkpoints than this server knows
    /// are refused with a reason instead of trimming nothing.
    /// </summary>
    public async ValueTask<long> TrimLogAsync(int keepCheckpoints, CancellationToken cancellationToken = default)
    {
        if (keepCheckpoints is < 1 or > Engine.ITransactionEngine.MaxTrimKeepCheckpoints)
        {
            throw new Engine.EngineException(Engine.EngineErrorCode.InvalidArgument, $"a trim keeps 1 to {Engine.ITransactionEngine.MaxTrimKeepCheckpoints} checkpoints, not {keepCheckpoints}");
        }

        ThrowIfStopping();
        if (TrimMark(keepCheckpoints) is null)
        {
            int known;
            lock (_trimLock)
            {
                known = _checkpointsSeen.Count;
            }

            throw new Engine.EngineException(Engine.EngineErrorCode.FailedPrecondition, $"server {_options.ServerId} knows {known} self-contained checkpoint(s) above the trim, and the trim keeps the latest {keepCheckpoints}: write a checkpoint first (the Checkpoint call) or keep fewer");
        }

        try
        {
            return await TrimAsync(keepCheckpoints, cancellationToken).ConfigureAwait(false);
        }
        catch (SharedLogException e)
        {
            throw new Engine.EngineException(Engine.EngineErrorCode.Unavailable, $"the log did not take the trim: {e.Message}");
        }
    }

    /// <summary>A restarted server knows the checkpoint it started from (its follower, the barrier marker's position the part rule needs).</summary>
    private void StartedFrom(Startup.Restart? restart)
    {
        if (restart is null)
        {
            return;
        }

        StartedFromCheckpoint = restart.Position;
        if (restart.SelfContained)
        {
            _checkpointsSeen.Add((restart.Position, restart.Info.ResumePosition));
        }
    }

    /// <summary>The reader passed a checkpoint's final block: a format-4 one counts for the trim rule, and the policy may trim.</summary>
    private void NoteCheckpoint(long position, ReadOnlySpan<byte> block)
    {
        if (block.Length <= 4 || block[4] != BlockFormat.CheckpointVersion)
        {
            return;
        }

        CheckpointFinal f;
        try
        {
            f = CheckpointReader.ReadFinal(block);
        }
        catch (IntentionFormatException)
        {
            return;
        }

        if (f.LastPart >= position || f.NeedsFrom > f.FirstPart)
        {
            return;
        }

        lock (_trimLock)
        {
            // A server started from a checkpoint reads its blocks again.
            if (_checkpointsSeen.Count > 0 && _checkpointsSeen[^1].Position >= position)
            {
                return;
            }

            _checkpointsSeen.Add((position, f.NeedsFrom));
        }

        // A cooperative server starts the trim inline: it runs until its first log call and goes
        // on where that call completes (the stepping thread), like the reader.
        var keep = _options.TrimKeepCheckpoints;
        if (keep > 0 && Interlocked.Exchange(ref _policyTrimRunning, 1) == 0)
        {
            _ = _cooperative ? PolicyTrimAsync(keep) : Task.Run(() => PolicyTrimAsync(keep));
        }
    }

    /// <summary>Trims by policy until the mark is reached, also for checkpoints read while a trim ran (one runs at a time).</summary>
    private async Task PolicyTrimAsync(int keep)
    {
        while (true)
        {
            try
            {
                await TrimAsync(keep, _stop.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is SharedLogException or OperationCanceledException or Engine.EngineException)
            {
                TrimLog.TrimFailed(_logger, _options.ServerId, e.Message);
                Volatile.Write(ref _policyTrimRunning, 0);
                return;
            }

            Volatile.Write(ref _policyTrimRunning, 0);
            if (!(TrimMark(keep) > TrimmedBelow) || Interlocked.Exchange(ref _policyTrimRunning, 1) != 0)
            {
                return;
            }
        }
    }

    /// <summary>Writes a self-contained checkpoint of <paramref name="state"/> into the log, part by part as the tree is walked (off the meld threads).</summary>
    private async Task<(long At, int Blocks)> AppendCheckpointAsync(DatabaseState state, CheckpointInfo info)
    {
        var writer = new CheckpointWriter(state, info.Encode(), _settings.BlockSize);
        long first = -1, last = -1;
        foreach (var part in writer.Parts())
        {
            last = await _log.AppendAsync(part, StopToken).ConfigureAwait(false);
            if (first < 0)
            {
                first = last;
            }
        }

        var at = await _log.AppendAsync(writer.Finish(first, last, info.ResumePosition), StopToken).ConfigureAwait(false);
        return (at, writer.PartCount + 1);
    }
}

/// <summary>A server had to read a log position that was trimmed: it is behind the trim and must start again from a checkpoint.</summary>
public sealed class TrimmedLogException : Exception
{
    /// <summary>Creates one.</summary>
    public TrimmedLogException(string message, long position, Exception? inner = null)
        : base(message, inner)
    {
        Position = position;
    }

    /// <summary>The trimmed position.</summary>
    public long Position { get; }
}

internal static partial class TrimLog
{
    [LoggerMessage(Level = LogLevel.Information, Message = "{Server}: trimmed the log below @{Mark} (keeping the last {Keep} checkpoints)")]
    public static partial void Trimmed(ILogger logger, string server, long mark, int keep);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Server}: the trim policy's trim failed: {Reason}")]
    public static partial void TrimFailed(ILogger logger, string server, string reason);
}
