using Hyder.Log;
using Hyder.Log.Client;
using Hyder.Tree.Serialization;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// The shared log as one server incarnation sees it: the production <see cref="LogClient"/> over
/// the simulated network, plus what the simulation needs around it. Every acknowledged append is
/// recorded for the invariants; every block read must pass the block format's own checks; a
/// slow-meld fault stalls each read; a crash halts the incarnation (every later call, and every
/// call in flight when it returns, fails as a dead process would, so the abandoned server's loops
/// end at their next step). Cancellation tokens are not passed on: the simulation cancels nothing,
/// and a cancelled delay on the virtual clock would continue on the thread pool.
/// </summary>
internal sealed class SimLog(SimCluster cluster, string server, LogClient inner) : ISharedLog
{
    private readonly HashSet<long> _intentions = [];
    private long _skipped = -1;

    private bool _writingCheckpoint;
    private int _trimsInFlight;

    /// <summary>The incarnation crashed.</summary>
    public bool Halted { get; private set; }

    /// <summary>The incarnation's process dies: every later call fails. A checkpoint write or a trim in flight is counted as interrupted.</summary>
    public void Halt()
    {
        if (Halted)
        {
            return;
        }

        Halted = true;
        if (_writingCheckpoint)
        {
            cluster.Stats.CrashesDuringCheckpointWrite++;
            cluster.Trace.Add($"{server} crashed during a checkpoint write");
        }

        if (_trimsInFlight > 0)
        {
            cluster.Stats.CrashesDuringTrim++;
            cluster.Trace.Add($"{server} crashed during a trim");
        }
    }

    public int BlockSize => inner.BlockSize;

    public async ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        var bytes = block.ToArray();
        if (BlockHeader.TryParse(bytes, out var part, out _) && part.Kind == BlockKind.CheckpointPart)
        {
            _writingCheckpoint = true;
        }

        var address = await inner.AppendAsync(bytes, CancellationToken.None);

        // The log acknowledged it, whether or not the server still lives to hear it.
        cluster.Invariants.Acknowledged(server, address, bytes);
        if (BlockHeader.TryParse(bytes, out var header, out _) && header.Kind == BlockKind.Checkpoint)
        {
            _writingCheckpoint = false;
            cluster.Stats.CheckpointsWritten++;
        }

        cluster.Trace.Add($"{server} appended {bytes.Length} B @{address}");
        ThrowIfHalted();
        return address;
    }

    public async ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        var stall = cluster.MeldStall(server);
        if (stall > TimeSpan.Zero)
        {
            await Task.Delay(stall, cluster.Scheduler.Time, CancellationToken.None);
            ThrowIfHalted();
        }

        var read = await inner.ReadAsync(address, destination, CancellationToken.None);
        ThrowIfHalted();
        if (read.Kind != LogEntryKind.Data)
        {
            return read;
        }

        var block = destination.Span[..read.Length];
        if (!BlockHeader.TryParse(block, out var header, out var error))
        {
            cluster.Violation($"{server} read a block at @{address} that fails its own checks ({error}); the log's CRCs must have rejected it");
            return read;
        }

        if (header.Kind == BlockKind.Intention && cluster.Options.PlantSkipOrdinal > 0 && server == cluster.LastServerName)
        {
            // The planted bug of the mutation test: this server never sees one intention (it reads as junk).
            _intentions.Add(address);
            if (_skipped < 0 && _intentions.Count == cluster.Options.PlantSkipOrdinal)
            {
                _skipped = address;
            }

            if (_skipped == address)
            {
                return new LogRead(LogEntryKind.Filled, 0);
            }
        }

        return read;
    }

    public async ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        var kind = await inner.FillAsync(address, CancellationToken.None);
        ThrowIfHalted();
        return kind;
    }

    public ValueTask TrimAsync(long address, CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        return inner.TrimAsync(address, CancellationToken.None);
    }

    public async ValueTask PrefixTrimAsync(long before, CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        before += cluster.Options.PlantTrimBeyondRule;

        // Issued: some units may trim even if the call fails, so the invariants excuse the range
        // from now on.
        cluster.Invariants.TrimIssued(before);
        cluster.Trace.Add($"{server} trims below @{before}");
        _trimsInFlight++;
        try
        {
            await inner.PrefixTrimAsync(before, CancellationToken.None);
        }
        finally
        {
            _trimsInFlight--;
        }

        cluster.Stats.Trims++;
        cluster.Trace.Add($"{server} trimmed below @{before}");
        ThrowIfHalted();
    }

    public async ValueTask<long> TailAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfHalted();
        var tail = await inner.TailAsync(CancellationToken.None);
        ThrowIfHalted();
        return tail;
    }

    public IAsyncEnumerable<LogRecord> SubscribeAsync(long from, CancellationToken cancellationToken = default) =>
        throw new NotSupportedException("the transaction server reads the log position by position");

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    private void ThrowIfHalted()
    {
        if (Halted)
        {
            throw new SharedLogException($"{server} crashed: this incarnation's process is gone");
        }
    }
}
