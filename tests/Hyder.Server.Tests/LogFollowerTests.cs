using System.Collections.Concurrent;
using Hyder.Log;
using Hyder.Log.Embedded;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Follower;
using Hyder.Testing;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;
using Microsoft.Extensions.Logging.Abstractions;
using Xunit;

namespace Hyder.Server.Tests;

/// <summary>
/// The log follower on its own, without a transaction server: a log, a database and a pipeline,
/// and a host that stands for the server (docs/server.md, "Threads"). Each test writes the log a
/// server would meet and reads the decisions final meld made.
/// </summary>
public sealed class LogFollowerTests
{
    private static readonly TimeSpan s_limit = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task ASecondCopyOfAnIntentionIsRejectedNamingTheFirstCopy()
    {
        await using var log = await OpenLogAsync();
        var block = IntentionBlock(Key(1), [1]).ToArray();
        await log.AppendAsync(block);
        await log.AppendAsync(IntentionBlock(Key(2), [2]));
        await log.AppendAsync(block);

        await using var rig = Rig.Start(log, new ClusterSettings());
        var outcomes = await rig.OutcomesAsync(3);

        Assert.True(outcomes[1].Committed);
        Assert.True(outcomes[2].Committed);
        Assert.False(outcomes[3].Committed);
        Assert.Equal(AbortCause.Rejected, outcomes[3].Cause);
        Assert.StartsWith("intention #3 @3 is a second copy of intention #1 (nonce ", outcomes[3].RejectReason);
        Assert.Null(rig.Follower.Failure);
    }

    [Fact]
    public async Task AFollowerWhoseDeserializerFailsReportsItAndStops()
    {
        // An intention at position 0, where a server keeps its settings record: sealing it there
        // throws in the deserializer, outside the rules' rejections. The submitter waiting for
        // that ordinal must see the failure, or the follower never stops (the rig fails its
        // dispose after 30 s).
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await log.AppendAsync(IntentionBlock(Key(1), [1]));
        await log.AppendAsync(IntentionBlock(Key(2), [2]));

        await using var rig = Rig.Start(log, new ClusterSettings(), readFrom: 0);
        await Until(() => rig.Follower.Failure is not null);

        Assert.IsNotType<IntentionRejectedException>(rig.Follower.Failure);
        Assert.IsType<ArgumentOutOfRangeException>(rig.Follower.Failure);
    }

    [Fact]
    public async Task AHoleIsFilledAfterTheHoleTimeoutAndTakesNoOrdinal()
    {
        await using var inner = await OpenLogAsync();
        await inner.AppendAsync(IntentionBlock(Key(1), [1]));
        await inner.AppendAsync(IntentionBlock(Key(2), [2])); // @2: a writer that never finished, for the follower
        await inner.AppendAsync(IntentionBlock(Key(3), [3]));
        await using var log = new HoleLog(inner, hole: 2);

        await using var rig = Rig.Start(log, new ClusterSettings(), o => o.HoleTimeout = TimeSpan.FromMilliseconds(20));
        var outcomes = await rig.OutcomesAsync(2);

        Assert.Equal(1, log.Fills);
        Assert.True(outcomes[1].Committed);
        Assert.True(outcomes[2].Committed);
        Assert.Equal(2, rig.Follower.LastRead);
        Assert.Equal(4, rig.Follower.ReadPosition);

        // The intention @3 took ordinal 2: the key of the filled position is not in the state.
        var state = rig.Database.PinCurrent();
        try
        {
            using var tx = rig.Database.BeginAt(state, IsolationLevel.SnapshotIsolation);
            Assert.True(tx.TryGet(Key(3), out _));
            Assert.False(tx.TryGet(Key(2), out _));
        }
        finally
        {
            rig.Database.Release(state);
        }
    }

    [Fact]
    public async Task WithGroupMeldAFillerCompletesAWaitingPairOnlyWhileTransactionsAreInFlight()
    {
        await using var inner = await OpenLogAsync();
        await inner.AppendAsync(IntentionBlock(Key(1), [1]));
        await using var log = new CountingLog(inner);
        await using var rig = Rig.Start(log, new ClusterSettings { GroupMeld = true }, o => o.FillerAfter = TimeSpan.FromMilliseconds(1));

        // Ordinal 1 waits for its partner. Nothing is in flight here: the reader looks at the
        // tail again and again after the filler's idle time and appends nothing.
        await Until(() => rig.Follower.ReadPosition == 2);
        var quiet = System.Diagnostics.Stopwatch.StartNew();
        await Until(() => quiet.ElapsedMilliseconds >= 10);
        var looks = log.Tails;
        await Until(() => log.Tails >= looks + 3);
        Assert.Equal(2, await inner.TailAsync());
        Assert.True(rig.Pipeline.LastMelded < 1, $"ordinal 1 was melded without its partner (last melded #{rig.Pipeline.LastMelded})");

        // A transaction of this server waits: the reader appends one filler, which ends the pair.
        rig.Host.InFlight = 1;
        var outcomes = await rig.OutcomesAsync(2);
        Assert.True(outcomes[1].Committed);
        Assert.True(outcomes[2].Committed);
        Assert.Equal(1, rig.Metrics.Fillers);
        Assert.Equal(new long[] { 1 }, rig.Counted.Order());
        Assert.Equal(new long[] { 2 }, rig.Controls.Order());
    }

    [Fact]
    public async Task AFollowerBehindTheTrimStopsWithTheClearError()
    {
        await using var log = await OpenLogAsync();
        for (var i = 0; i < 3; i++)
        {
            await log.AppendAsync(IntentionBlock(Key(i), [1]));
        }

        await log.PrefixTrimAsync(3);
        await using var rig = Rig.Start(log, new ClusterSettings());
        await rig.Follower.Reading.WaitAsync(s_limit);

        var failure = Assert.IsType<TrimmedLogException>(rig.Follower.Failure);
        Assert.Equal(1, failure.Position);
        Assert.Equal(
            "server follower must read log position @1, which the log has trimmed: the server is behind the trim and cannot go on from here; restart it, and it starts from the latest checkpoint",
            failure.Message);
        Assert.Equal(0, rig.Follower.LastRead);
    }

    [Fact]
    public async Task AFollowerThatNeedsATrimmedPartStopsWithTheClearError()
    {
        await using var log = await OpenLogAsync();
        var settings = new ClusterSettings { BlockSize = 512 };
        var encoded = Encode(Key(1), new byte[2_000], settings.BlockSize);
        Assert.True(encoded.Parts.Count >= 2);
        var positions = new long[encoded.Parts.Count];
        for (var i = 0; i < positions.Length; i++)
        {
            positions[i] = await log.AppendAsync(encoded.Parts[i]);
        }

        var final = await log.AppendAsync(encoded.Finish(positions));
        await log.PrefixTrimAsync(final);

        // A follower that starts at the final block (as from a checkpoint whose barrier is below
        // the parts) decodes it the way its peers did, with its parts, and cannot.
        await using var rig = Rig.Start(log, settings, readFrom: final);
        await rig.Follower.Reading.WaitAsync(s_limit);

        var failure = Assert.IsType<TrimmedLogException>(rig.Follower.Failure);
        Assert.Equal(positions[0], failure.Position);
        Assert.Contains($"must read log position @{positions[0]}, which the log has trimmed", failure.Message);
    }

    [Fact]
    public async Task ThisServersOwnIntentionIsTakenByItsNonceAndFiledAtItsOrdinal()
    {
        await using var log = await OpenLogAsync();
        await log.AppendAsync(IntentionBlock(Key(1), [1]));
        await using var rig = Rig.Start(log, new ClusterSettings());

        // As an executor of the follower's server does: run, validate, encode, register, append.
        var tx = rig.Database.Begin();
        tx.Put(Key(2), [2]);
        var intention = tx.Complete()!;
        IntentionValidator.ValidateBeforeAppend(intention);
        var encoded = IntentionEncoder.Encode(intention, new ClusterSettings().BlockSize);
        var pending = PendingTransaction.Rent(intention, cooperative: false);
        rig.Host.Locals[encoded.Nonce] = pending;
        await log.AppendAsync(encoded.Finish([]));
        var outcomes = await rig.OutcomesAsync(2);

        Assert.True(outcomes[2].Committed);
        Assert.Empty(rig.Host.Locals);
        Assert.Equal((2L, pending), Assert.Single(rig.Host.Filed));
        Assert.Equal(2, pending.Ordinal);
    }

    [Fact]
    public async Task ThisServersOwnIntentionsWithNothingQueuedAheadAreSubmittedByTheReaderInOrder()
    {
        await using var log = await OpenLogAsync();
        await using var rig = Rig.Start(log, new ClusterSettings());
        var pendings = new List<PendingTransaction>();
        for (var i = 1; i <= 3; i++)
        {
            var tx = rig.Database.Begin();
            tx.Put(Key(i), [(byte)i]);
            var intention = tx.Complete()!;
            IntentionValidator.ValidateBeforeAppend(intention);
            var encoded = IntentionEncoder.Encode(intention, new ClusterSettings().BlockSize);
            var pending = PendingTransaction.Rent(intention, cooperative: false);
            pendings.Add(pending);
            rig.Host.Locals[encoded.Nonce] = pending;
            await log.AppendAsync(encoded.Finish([]));
            var outcomes = await rig.OutcomesAsync(i);
            Assert.True(outcomes[i].Committed);
        }

        // No peer's intention was queued for the submitter ahead of any of them.
        Assert.Equal(3, rig.Follower.SubmittedByReader);
        Assert.Equal([(1L, pendings[0]), (2L, pendings[1]), (3L, pendings[2])], rig.Host.Filed.ToArray());
    }

    [Fact]
    public async Task EveryJobGoesBackToThePoolOnceSubmittedAndARejectedOnesDecisionDoesNotCarryOver()
    {
        // One intention at a time, so that each job the reader rents is the one the previous
        // ordinal gave back: the rejected second copy's job is the next intention's.
        await using var log = await OpenLogAsync();
        await using var rig = Rig.Start(log, new ClusterSettings());
        var block = IntentionBlock(Key(1), [1]).ToArray();
        byte[][] blocks = [block, IntentionBlock(Key(2), [2]).ToArray(), block, IntentionBlock(Key(3), [3]).ToArray(), IntentionBlock(Key(4), [4]).ToArray()];
        var outcomes = new Dictionary<long, MeldOutcome>();
        for (var i = 0; i < blocks.Length; i++)
        {
            await log.AppendAsync(blocks[i]);
            outcomes = await rig.OutcomesAsync(i + 1);
            await Until(() => rig.Follower.JobsReturned == i + 1);
        }

        Assert.True(outcomes[1].Committed);
        Assert.True(outcomes[2].Committed);
        Assert.Equal(AbortCause.Rejected, outcomes[3].Cause);
        Assert.True(outcomes[4].Committed, outcomes[4].RejectReason);
        Assert.True(outcomes[5].Committed, outcomes[5].RejectReason);
        Assert.Equal(5, rig.Follower.JobsReturned);
    }

    private static byte[] Key(int i) => Server.TestCluster.Key(i);

    /// <summary>An in-memory log with the settings record at position 0, as a server leaves it (no intention is at position 0).</summary>
    private static async Task<EmbeddedLog> OpenLogAsync()
    {
        var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await log.AppendAsync(Blocks.Control(ControlKind.Settings, []));
        return log;
    }

    private static EncodedIntention Encode(byte[] key, byte[] value, int blockSize)
    {
        var db = new Database();
        var tx = db.Begin();
        tx.Put(key, value);
        return IntentionEncoder.Encode(tx.Complete()!, blockSize);
    }

    /// <summary>A one-block intention that puts <paramref name="key"/> on the empty state (snapshot 0).</summary>
    private static ReadOnlyMemory<byte> IntentionBlock(byte[] key, byte[] value) => Encode(key, value, new ClusterSettings().BlockSize).Finish([]);

    private static async Task Until(Func<bool> condition)
    {
        using var limit = new CancellationTokenSource(s_limit);
        while (!condition())
        {
            await Task.Delay(1, limit.Token);
        }
    }

    /// <summary>A follower on a database and a pipeline of its own, with a host that records what the follower asked of it.</summary>
    private sealed class Rig : IAsyncDisposable
    {
        private readonly ConcurrentDictionary<long, MeldOutcome> _outcomes = new();
        private readonly CancellationTokenSource _stop = new();

        private Rig(ISharedLog log, ClusterSettings settings, Action<ServerOptions>? configure, long readFrom)
        {
            var options = new ServerOptions { ServerId = "follower", Cluster = settings };
            configure?.Invoke(options);
            Database = new Database();
            Metrics = new ServerMetrics(options.ServerId);
            Pipeline = new ThreadedPipeline(Database, settings.Pipeline, new PipelineRuntime
            {
                Window = options.PipelineWindow,
                RequireValidated = true,
                Melded = (ordinal, outcome, current) =>
                {
                    Follower!.StateMelded(ordinal, current);
                    (Follower.TakeControl(ordinal) ? Controls : Counted).Add(ordinal);
                    _outcomes[ordinal] = outcome;
                },
            });
            Follower = new LogFollower(log, options, settings, Database, Pipeline, null, Metrics, NullLogger.Instance, Host, readFrom, 0, 0, _stop.Token);
        }

        public FakeHost Host { get; } = new();

        public Database Database { get; }

        public ServerMetrics Metrics { get; }

        public ThreadedPipeline Pipeline { get; }

        public LogFollower Follower { get; }

        /// <summary>Ordinals final meld counted as intentions.</summary>
        public ConcurrentBag<long> Counted { get; } = [];

        /// <summary>Ordinals the follower named control records'.</summary>
        public ConcurrentBag<long> Controls { get; } = [];

        public static Rig Start(ISharedLog log, ClusterSettings settings, Action<ServerOptions>? configure = null, long readFrom = 1)
        {
            var rig = new Rig(log, settings, configure, readFrom);
            rig.Follower.Start();
            return rig;
        }

        /// <summary>Final meld's outcomes of ordinals 1..<paramref name="count"/>, once it has melded them.</summary>
        public async Task<Dictionary<long, MeldOutcome>> OutcomesAsync(int count)
        {
            try
            {
                await Until(() => Pipeline.LastMelded >= count || (Follower.Failure ?? Pipeline.Failure) is not null);
            }
            catch (OperationCanceledException)
            {
                Assert.Fail($"#{count} was not melded: {Progress}");
            }

            Assert.True((Follower.Failure ?? Pipeline.Failure) is null, Progress);
            return _outcomes.ToDictionary();
        }

        private string Progress => $"read to @{Follower.ReadPosition}, #{Follower.LastRead}; melded #{Pipeline.LastMelded}; follower failure: {Follower.Failure}; pipeline failure: {Pipeline.Failure}";

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            await Follower.Reading;

            // A follower whose deserializer or submitter failed may leave a thread waiting: the
            // test reports the failure rather than waiting for it.
            var stopped = Task.Run(() =>
            {
                Follower.CompleteAndJoin();
                Pipeline.Dispose();
            });
            if (await Task.WhenAny(stopped, Task.Delay(s_limit)) != stopped)
            {
                Assert.Fail($"the follower did not stop: {Progress}");
            }

            await stopped;
            Follower.ReleaseStates();
            Metrics.Dispose();
            _stop.Dispose();
        }
    }

    private sealed class FakeHost : IFollowerHost
    {
        private int _inFlight;

        public int InFlight
        {
            get => Volatile.Read(ref _inFlight);
            set => Volatile.Write(ref _inFlight, value);
        }

        public ConcurrentDictionary<long, PendingTransaction> Locals { get; } = new();

        public ConcurrentQueue<(long Ordinal, PendingTransaction Local)> Filed { get; } = new();

        public PendingTransaction? TakeLocal(long nonce) => Locals.TryRemove(nonce, out var local) ? local : null;

        public void FileLocal(PendingTransaction local, long ordinal)
        {
            local.Ordinal = ordinal;
            Filed.Enqueue((ordinal, local));
        }

        public CheckpointRequest? FindCheckpointRequest(ulong id) => null;

        public void AskForCheckpointAgain(CheckpointRequest request) => throw new InvalidOperationException("no checkpoint was asked for");

        public void BarrierSubmitted(PipelineBarrier barrier, Job marker) => barrier.Release();

        public void CheckpointRead(long position, ReadOnlySpan<byte> block)
        {
        }

        public void SubmitReturned()
        {
        }
    }

    /// <summary>A log whose position <c>hole</c> stays unwritten (a writer that took the position and crashed) until it is filled.</summary>
    private sealed class HoleLog(ISharedLog inner, long hole) : DelegatingLog(inner)
    {
        private int _fills;

        public int Fills => Volatile.Read(ref _fills);

        public override ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
            address != hole ? base.ReadAsync(address, destination, cancellationToken)
            : ValueTask.FromResult(new LogRead(Fills == 0 ? LogEntryKind.Unwritten : LogEntryKind.Filled, 0));

        public override ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default)
        {
            Assert.Equal(hole, address);
            Interlocked.Increment(ref _fills);
            return ValueTask.FromResult(LogEntryKind.Filled);
        }
    }

    /// <summary>A log that counts the reader's looks at its tail.</summary>
    private sealed class CountingLog(ISharedLog inner) : DelegatingLog(inner)
    {
        private int _tails;

        public int Tails => Volatile.Read(ref _tails);

        public override ValueTask<long> TailAsync(CancellationToken cancellationToken = default)
        {
            Interlocked.Increment(ref _tails);
            return base.TailAsync(cancellationToken);
        }
    }
}
