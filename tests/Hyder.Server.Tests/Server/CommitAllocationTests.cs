using Hyder.Log.Embedded;
using Hyder.Log.Storage;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// The bytes the whole process allocates per committed transaction on the embedded path the YCSB
/// tool's main job takes: an interactive 8-read, 2-write serializable transaction on one server
/// over an embedded log on disk with group commit, many transactions in flight. The written
/// values are one shared array and the keys a prepared table, so what is counted is the
/// server's own garbage (the transaction's objects, the intention's encoding, the log append,
/// the reader, the outcome), not the client's data (docs/benchmarks/server.md, "The executor's bytes").
/// Runs alone: it counts every thread's allocations.
/// </summary>
[Collection(nameof(AllocationTests))]
[Trait("Category", "ReleaseOnly")]
public sealed class CommitAllocationTests(ITestOutputHelper output)
{
    private const int Keys = 20_000;
    private const int Clients = 32;

    /// <summary>
    /// The ceiling asserted, above the ~900 B measured (up to 1,261 B on a machine at load 40): loose enough for a busy machine's timers
    /// (garbage per second weighs more per commit when commits are slow), tight enough to catch a
    /// block copy or a few per-commit objects coming back.
    /// </summary>
    private const double MaxBytesPerCommit = 1536;

    [Fact]
    public async Task TheServerAllocatesUnderOneAndAHalfKiBPerInteractiveCommit()
    {
        var (perCommit, _) = await MeasureAsync(recycleValues: false);
        Assert.True(perCommit < MaxBytesPerCommit, $"{perCommit:F0} B allocated per commit");
    }

    /// <summary>
    /// With recycled values (docs/value-storage.md) the server copies each 1 KiB value it is given
    /// into an array of its value pool: were those arrays not reused, each commit would allocate
    /// 2 KiB more than the test above; reused, the bound is the same.
    /// </summary>
    [Fact]
    public async Task WithRecycledValuesTheValuesWrittenCostNoAllocationInSteadyState()
    {
        var (perCommit, reused) = await MeasureAsync(recycleValues: true);
        Assert.True(perCommit < MaxBytesPerCommit, $"{perCommit:F0} B allocated per commit with recycled values");
        Assert.True(reused > 6_000, $"only {reused} value arrays were reused while about 12,000 values were written");
    }

    /// <summary>Bytes allocated per commit in steady state, and value arrays reused meanwhile.</summary>
    private async Task<(double PerCommit, long Reused)> MeasureAsync(bool recycleValues)
    {
        var directory = Path.Combine(Path.GetTempPath(), $"hyder-commit-alloc-{Guid.NewGuid():N}");
        try
        {
            await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions { DataDirectory = directory, Fsync = FsyncPolicy.GroupCommit });
            await using var server = await TransactionServer.StartAsync(log, new ServerOptions { ServerId = "alloc", Cluster = new ClusterSettings(), MaxInFlight = 512, RecycleValues = recycleValues });
            var keys = Enumerable.Range(0, Keys).Select(k => System.Text.Encoding.ASCII.GetBytes($"user{k:D12}")).ToArray();
            var value = new byte[1024];
            for (var k = 0; k < Keys; k += 500)
            {
                var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [.. keys.Skip(k).Take(500).Select(key => Operation.Put(key, value))]);
                Assert.Equal(TransactionStatus.Committed, outcome.Status);
            }

            // Warm up: the node pools fill from final meld's reclamation (about 15,000 commits
            // here), the buffers and the JIT settle.
            var warm = await RunAsync(server, keys, value, 24_000);
            var gen2 = GC.CollectionCount(2);
            var reusedBefore = server.Database.Values?.Reused ?? 0;
            var before = GC.GetTotalAllocatedBytes(precise: true);
            var committed = await RunAsync(server, keys, value, 6_000);
            var allocated = GC.GetTotalAllocatedBytes(precise: true) - before;
            var reused = (server.Database.Values?.Reused ?? 0) - reusedBefore;
            var perCommit = (double)allocated / committed;
            output.WriteLine($"{committed} commits ({warm} warm-up), values recycled {recycleValues}: {allocated} bytes allocated in the process, {perCommit:F0} B per commit, {reused} value arrays reused, {GC.CollectionCount(2) - gen2} gen2 collections");
            Console.WriteLine($"commit allocation (values recycled {recycleValues}): {perCommit:F0} B per interactive 8R2W commit");
            Assert.Null(server.Pipeline.Failure);
            return (perCommit, reused);
        }
        finally
        {
            if (Directory.Exists(directory))
            {
                Directory.Delete(directory, recursive: true);
            }
        }
    }

    /// <summary>
    /// A flush intention (the maintenance loop's, on any thread-pool thread) takes its nodes from
    /// an executor's pool joined to final meld's exchange, not from the thread's own
    /// <c>NodePool.Current</c>: that would be a fresh 64 Ki-node pool (a 512 KiB array) on every
    /// new thread, and it would allocate every node it hands out, since nothing refills it.
    /// </summary>
    [Fact]
    public async Task AFlushOnAFreshThreadTakesNoPoolOfItsOwn()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings(), o =>
        {
            o.FlushEvery = 0;
            o.FlushMaxNodes = 100_000;
        });
        var server = cluster.Servers[0];
        var keys = Enumerable.Range(0, 200).Select(TestCluster.Key).ToArray();
        var value = new byte[8];
        async Task ClientAsync(int seed)
        {
            var random = new Random(seed);
            for (var t = 0; t < 60; t++)
            {
                await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(keys[random.Next(keys.Length)]), Operation.Put(keys[random.Next(keys.Length)], value)]);
            }
        }

        await Task.WhenAll(Enumerable.Range(0, 4).Select(c => Task.Run(() => ClientAsync(c))));

        // The clients may have run one after another (no ephemeral node then): a round that makes
        // some for certain. Transactions begun on one state write different keys; each after the
        // first melds into a state its snapshot lacks, so meld merges their paths into new nodes.
        var round = new List<IInteractiveTransaction>();
        for (var i = 0; i < 4; i++)
        {
            var tx = server.Begin(IsolationLevel.Serializable);
            await tx.ExecuteAsync(Operation.Put(keys[(i * 50) + 1], value));
            round.Add(tx);
        }

        var outcomes = await Task.WhenAll(round.Select(tx => tx.CommitAsync().AsTask()));
        Assert.All(outcomes, o => Assert.Equal(TransactionStatus.Committed, o.Status));
        foreach (var tx in round)
        {
            await tx.DisposeAsync();
        }

        await cluster.QuiesceAsync();

        // The flush's transaction begins before its first wait (admission has a free slot), on
        // the thread that calls it: a new thread, which has no pool yet.
        long allocated = 0;
        Task<int>? flush = null;
        var thread = new Thread(() =>
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            flush = server.FlushAsync();
            allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        });
        thread.Start();
        thread.Join();
        var copied = await flush!;
        output.WriteLine($"a flush of {copied} ephemeral nodes allocated {allocated} B on the calling thread before its first wait");
        Assert.True(copied > 0, "the workload left no ephemeral node to flush");
        Assert.True(allocated < 256 * 1024, $"{allocated} B allocated on the thread that called FlushAsync: a pool of its own is back");
    }

    /// <summary>Runs <paramref name="transactions"/> transactions from <see cref="Clients"/> concurrent clients; returns how many committed.</summary>
    private static async Task<int> RunAsync(TransactionServer server, byte[][] keys, byte[] value, int transactions)
    {
        var next = 0;
        var committed = 0;
        async Task ClientAsync(int seed)
        {
            var random = new Random(seed);
            while (Interlocked.Increment(ref next) <= transactions)
            {
                var tx = server.Begin(IsolationLevel.Serializable);
                await using (tx.ConfigureAwait(false))
                {
                    for (var r = 0; r < 8; r++)
                    {
                        await tx.ExecuteAsync(Operation.Get(keys[random.Next(keys.Length)])).ConfigureAwait(false);
                    }

                    for (var w = 0; w < 2; w++)
                    {
                        await tx.ExecuteAsync(Operation.Put(keys[random.Next(keys.Length)], value)).ConfigureAwait(false);
                    }

                    var outcome = await tx.CommitAsync().ConfigureAwait(false);
                    if (outcome.Status == TransactionStatus.Committed)
                    {
                        Interlocked.Increment(ref committed);
                    }
                }
            }
        }

        var clients = new Task[Clients];
        for (var c = 0; c < clients.Length; c++)
        {
            var seed = c;
            clients[c] = Task.Run(() => ClientAsync(seed));
        }

        await Task.WhenAll(clients);
        return committed;
    }
}
