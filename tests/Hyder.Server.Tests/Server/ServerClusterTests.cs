using System.Collections.Concurrent;
using System.Text;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>Several transaction servers on one log compute one database (Hyder II §3-§5).</summary>
public sealed class ServerClusterTests
{
    public static TheoryData<int, int, bool> Pipelines => new()
    {
        { 0, 0, false },
        { 0, 0, true },
        { 1, 1, false },
        { 2, 2, true },
    };

    /// <summary>
    /// Clients on every server run read-modify-write transactions on a few hundred keys; every
    /// committed transaction is visible on every server and the servers' states are identical,
    /// ephemeral ids included.
    /// </summary>
    [Theory]
    [MemberData(nameof(Pipelines))]
    public async Task ServersOnOneLogCommitTheSameTransactionsAndReachTheSameState(int t, int d, bool group)
    {
        await using var cluster = await TestCluster.StartAsync(3, new ClusterSettings { PremeldThreads = t, Distance = d, GroupMeld = group, BlockSize = 1024 });
        var committed = new ConcurrentDictionary<string, byte[]>();
        var aborted = 0;
        var tasks = new List<Task>();
        for (var c = 0; c < 6; c++)
        {
            var server = cluster.Servers[c % 3];
            var client = c;
            tasks.Add(Task.Run(async () =>
            {
                var rng = new Random(client);
                for (var i = 0; i < 60; i++)
                {
                    var k1 = Key(rng.Next(300));
                    var k2 = Key(rng.Next(300));
                    var value = Value($"c{client}-{i}");
                    var outcome = await server.ExecuteAsync(
                        rng.Next(4) == 0 ? IsolationLevel.SnapshotIsolation : IsolationLevel.Serializable,
                        [Operation.Get(k1), Operation.Put(k1, value), Operation.Put(k2, value)]);
                    if (outcome.Status == TransactionStatus.Committed)
                    {
                        Assert.True(outcome.Ordinal > 0);
                        committed[$"{outcome.Ordinal}"] = value;
                    }
                    else
                    {
                        Assert.Equal(TransactionStatus.Aborted, outcome.Status);
                        Interlocked.Increment(ref aborted);
                    }
                }
            }));
        }

        await Task.WhenAll(tasks);
        var hashes = await cluster.QuiesceAsync();
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));
        Assert.True(committed.Count > 100, $"only {committed.Count} commits");

        // Every server sees every committed write (the last committed value of each key agrees too: same hash).
        foreach (var server in cluster.Servers)
        {
            Assert.Equal(cluster.Servers[0].Metrics.Commits, server.Metrics.Commits);
            Assert.Equal(cluster.Servers[0].Metrics.Aborts, server.Metrics.Aborts);
        }

        var rows = new List<KeyValuePair<byte[], byte[]>>();
        await foreach (var row in cluster.Servers[2].ScanAsync(null, null, 0))
        {
            rows.Add(row);
        }

        var values = rows.Select(r => Encoding.UTF8.GetString(r.Value)).ToHashSet();
        Assert.All(values, v => Assert.Contains(v, committed.Values.Select(b => Encoding.UTF8.GetString(b))));
    }

    [Fact]
    public async Task AServerServesOnlyOnceItHasMeldedTheLogItStartedOn()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings());
        for (var i = 0; i < 400; i++)
        {
            await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(i), Value($"v{i}")), Operation.Put(Key(-1), Value($"last {i}"))]);
        }

        // A second server, and a restart of the first, must not answer from a state older than the log.
        var joined = await cluster.AddServerAsync();
        Assert.Equal("last 399", Encoding.UTF8.GetString((await joined.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(-1))])).Results[0].Value!));
        Assert.True(joined.LastMelded >= cluster.Servers[0].LastMelded);
    }

    [Fact]
    public async Task ConcurrentAddsOfOneCounterAllCommitAndSumOnEveryServer()
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings());
        var counter = Key(7);
        var snapshotHolders = new List<IInteractiveTransaction>();

        // Every transaction takes its snapshot before any commits: as read-modify-writes all but one would abort.
        for (var i = 0; i < 20; i++)
        {
            var tx = cluster.Servers[i % 2].Begin(IsolationLevel.Serializable);
            tx.Execute(Operation.Add(counter, i + 1));
            snapshotHolders.Add(tx);
        }

        foreach (var tx in snapshotHolders)
        {
            Assert.Equal(TransactionStatus.Committed, (await tx.CommitAsync()).Status);
            await tx.DisposeAsync();
        }

        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        foreach (var server in cluster.Servers)
        {
            var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(counter)]);
            Assert.Equal(210L, BitConverter.ToInt64(read.Results[0].Value));
        }

        var bad = await Assert.ThrowsAsync<EngineException>(async () => await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Add([], 1)]));
        Assert.Equal(EngineErrorCode.InvalidArgument, bad.Code);
    }

    /// <summary>
    /// Found by the simulation (seed 17, profile default): a server restarted on a quiet group-meld
    /// log whose last ordinal is the first of a pair waited for the partner that nobody appends,
    /// so its start never finished.
    /// </summary>
    [Fact]
    public async Task AServerStartsOnAQuietGroupMeldLogThatEndsInsideAPair()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings { GroupMeld = true });
        await cluster.Log.AppendAsync(Core.Blocks.Control(ControlKind.Filler, []));
        var server = await cluster.AddServerAsync().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(1, server.LastRead);
        Assert.Equal(0, server.LastMelded);
    }

    [Fact]
    public async Task FillersAndCheckpointMarkersAreNotCountedAsIntentions()
    {
        // Group meld: a lone transaction waits for a partner, so the server appends a filler.
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings { GroupMeld = true });
        var server = cluster.Servers[0];
        Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("a"))])).Status);
        await server.CheckpointAsync();
        await using (var tx = server.Begin(IsolationLevel.Serializable))
        {
            tx.Execute(Operation.Get(Key(1)));
            Assert.Equal(TransactionStatus.Committed, (await tx.CommitAsync()).Status);
        }

        await cluster.QuiesceAsync();
        Assert.True(server.Metrics.Fillers > 0);
        Assert.True(server.LastMelded > 2, $"melded {server.LastMelded}: the filler and the checkpoint marker take ordinals");
        Assert.Equal(1, server.Metrics.Commits);
        Assert.Equal(0, Enum.GetValues<AbortCause>().Sum(c => server.Metrics.AbortsOf(c)));
        Assert.Equal(1, server.Metrics.ReadOnlyCommits);
    }

    [Fact]
    public async Task RandomDelaysBetweenStagesChangeNoDecisionAndNoByte()
    {
        var settings = new ClusterSettings { PremeldThreads = 2, Distance = 1, GroupMeld = true, BlockSize = 1024 };
        var seen = new[] { new ConcurrentDictionary<long, string>(), new ConcurrentDictionary<long, string>() };
        void Record(int server, long v, MeldOutcome o, DatabaseState s) =>
            seen[server][v] = $"{(o.Committed ? "commit" : o.Cause)}, state #{s.Sequence} {TreeInspector.StateHash(s.Root):X}";

        await using var cluster = await TestCluster.StartAsync(1, settings, o => o.MeldedHook = (v, m, s) => Record(0, v, m, s));
        await cluster.AddServerAsync(o =>
        {
            o.MeldedHook = (v, m, s) => Record(1, v, m, s);
            o.StageDelay = (stage, v) =>
            {
                var h = (uint)HashCode.Combine(stage, v);
                if (h % 7 == 0)
                {
                    Thread.Sleep(1);
                }
                else
                {
                    Thread.SpinWait((int)(h % 3000));
                }
            };
        });
        await Workload(cluster, clients: 4, transactions: 60);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Equal(seen[0].Count, seen[1].Count);
        foreach (var (v, first) in seen[0])
        {
            Assert.True(seen[1].TryGetValue(v, out var second) && second == first, $"#{v}: {first} | {second}");
        }
    }

    [Fact]
    public async Task AServerRestartedFromACheckpointUnderLoadReachesItsPeersHash()
    {
        var settings = new ClusterSettings { PremeldThreads = 2, Distance = 2, GroupMeld = true, BlockSize = 512 };
        await using var cluster = await TestCluster.StartAsync(2, settings, o => o.CheckpointEvery = 100);
        await Workload(cluster, clients: 4, transactions: 60);
        for (var i = 0; i < 200 && cluster.Servers.Sum(s => s.Metrics.Checkpoints) == 0; i++)
        {
            await Task.Delay(50);
        }

        Assert.True(cluster.Servers.Sum(s => s.Metrics.Checkpoints) > 0, "no periodic checkpoint was written");

        var load = Workload(cluster, clients: 3, transactions: 80, servers: [0]);
        var barrier = await cluster.Servers[0].CheckpointAsync();
        Assert.True(barrier > 0);
        await load;

        // A third server joins from the checkpoint (and the second restarts) while the first keeps loading.
        var second = cluster.Servers[1];
        await second.DisposeAsync();
        cluster.Servers.RemoveAt(1);
        var more = Workload(cluster, clients: 2, transactions: 60, servers: [0]);
        var restarted = await cluster.AddServerAsync();
        await more;
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.True(restarted.Metrics.Commits < cluster.Servers[0].Metrics.Commits, "the restarted server started from the checkpoint, not the log's start");
    }

    /// <summary>
    /// Not only the end: after every ordinal both servers made the same decision and hold the
    /// same state, though one of them decodes what the other ran locally.
    /// </summary>
    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(2, 1, true)]
    public async Task EveryOrdinalGetsTheSameDecisionAndStateOnEveryServer(int t, int d, bool group)
    {
        var seen = new[] { new ConcurrentDictionary<long, string>(), new ConcurrentDictionary<long, string>() };
        var next = 0;
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings { PremeldThreads = t, Distance = d, GroupMeld = group, BlockSize = 1024 }, o =>
        {
            // From the first ordinal on: each server records into its own dictionary.
            var record = seen[next++];
            o.MeldedHook = (v, m, s) =>
                record[v] = $"{(m.Committed ? "commit" : m.Cause + " " + m.RejectReason)}, state #{s.Sequence} {TreeInspector.StateHash(s.Root):X}";
        });

        await Workload(cluster, clients: 4, transactions: 40);
        await cluster.QuiesceAsync();
        Assert.True(seen[0].Count > 100);
        Assert.Equal(seen[0].Count, seen[1].Count);
        foreach (var (v, first) in seen[0])
        {
            Assert.True(seen[1].TryGetValue(v, out var second) && second == first, $"#{v}: {first} | {second}");
        }

        Assert.Equal(0, cluster.Servers[0].Metrics.AbortsOf(AbortCause.Rejected));
    }

    /// <summary>
    /// A server that joins late, with nothing but the log (no checkpoint), replays every intention
    /// its peers ran — decoding what they ran locally, with premeld and group meld on — and makes
    /// the same decision for every ordinal. (A log cannot be replayed under other pipeline
    /// settings: intentions name ephemeral nodes, whose ids depend on t, d and group meld.)
    /// </summary>
    [Fact]
    public async Task ALateServerReplayingTheLogMakesTheSameDecisions()
    {
        var settings = new ClusterSettings { PremeldThreads = 2, Distance = 1, GroupMeld = true, BlockSize = 1024 };
        var live = new ConcurrentDictionary<long, string>();
        var first = true;
        await using var cluster = await TestCluster.StartAsync(2, settings, o =>
        {
            if (first)
            {
                o.MeldedHook = (v, m, s) => live[v] = $"{(m.Committed ? "commit" : m.Cause)} #{s.Sequence}";
                first = false;
            }
        });
        await Workload(cluster, clients: 4, transactions: 40);
        await cluster.QuiesceAsync();

        var replayed = new ConcurrentDictionary<long, string>();
        await cluster.AddServerAsync(o =>
        {
            o.RecoverFromCheckpoint = false;
            o.MeldedHook = (v, o, s) => replayed[v] = $"{(o.Committed ? "commit" : o.Cause)} #{s.Sequence}";
        });
        var hashes = await cluster.QuiesceAsync();
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));
        Assert.Equal(live.Count, replayed.Count);
        foreach (var (v, decision) in live)
        {
            Assert.True(replayed.TryGetValue(v, out var r) && r == decision, $"#{v}: {decision} | {r}");
        }
    }

    /// <summary>
    /// Flush intentions (meld paper §5) copy the state's ephemeral nodes into the log: after one
    /// on a quiet cluster no ephemeral node is left, on every server alike, and the periodic
    /// flusher commits its own under load.
    /// </summary>
    [Fact]
    public async Task FlushIntentionsReplaceEphemeralNodesOnEveryServer()
    {
        var settings = new ClusterSettings { PremeldThreads = 1, Distance = 1, BlockSize = 1024 };
        await using (var periodic = await TestCluster.StartAsync(2, settings, o => o.FlushEvery = 40))
        {
            await Workload(periodic, clients: 4, transactions: 60);

            // The flusher looks every 50 ms: a fast server can finish the workload before it looked.
            await Hyder.Server.Tests.Cluster.WaitUntil(() => periodic.Servers.Sum(s => s.Metrics.Flushes) > 0, "the periodic flusher committed nothing");
            var periodicHashes = await periodic.QuiesceAsync();
            Assert.All(periodicHashes, h => Assert.Equal(periodicHashes[0], h));
        }

        await using var cluster = await TestCluster.StartAsync(2, settings, o =>
        {
            o.FlushEvery = 0;
            o.FlushMaxNodes = 100_000;
        });
        await Workload(cluster, clients: 4, transactions: 60);

        // Whether the workload's last melds leave ephemeral nodes depends on how its transactions
        // overlapped (a fast server runs them nearly one after another). Two writers on one
        // snapshot leave some for certain: the second melds into a state the first changed since,
        // so meld makes the nodes above both writes anew (meld paper §4).
        var first = cluster.Servers[0].Begin(IsolationLevel.Serializable);
        var second = cluster.Servers[1].Begin(IsolationLevel.Serializable);
        first.Execute(Operation.Put(Key(1), Value("first")));
        second.Execute(Operation.Put(Key(498), Value("second")));
        Assert.Equal(TransactionStatus.Committed, (await first.CommitAsync()).Status);
        Assert.Equal(TransactionStatus.Committed, (await second.CommitAsync()).Status);
        await first.DisposeAsync();
        await second.DisposeAsync();
        await cluster.QuiesceAsync();
        Assert.True(EphemeralNodes(cluster.Servers[0].Database.Current.Root) > 0, "the workload left no ephemeral node to flush");

        var copied = await cluster.Servers[1].FlushAsync();
        Assert.True(copied > 0);
        var hashes = await cluster.QuiesceAsync();
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));
        Assert.All(cluster.Servers, s => Assert.Equal(0, EphemeralNodes(s.Database.Current.Root)));
    }

    private static int EphemeralNodes(Node? n) => n is null ? 0 : (n.Vn.IsEphemeral ? 1 : 0) + EphemeralNodes(n.Left) + EphemeralNodes(n.Right);

    [Fact]
    public async Task AServerWithOtherSettingsRefusesToStart()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings { PremeldThreads = 1, Distance = 1 });
        var e = await Assert.ThrowsAsync<ServerStartException>(() =>
            TransactionServer.StartAsync(cluster.Log, Options("other", new ClusterSettings { PremeldThreads = 2, Distance = 1 })));
        Assert.Contains("differ from the log's", e.Message);
        Assert.Contains("t=2", e.Message);
    }

    [Fact]
    public async Task AdmissionControlHoldsTheInFlightLimit()
    {
        // While the burst is admitted, final meld holds its first transaction (the hook runs on its
        // thread), so the ones admitted stay in flight and the rest must be refused, however fast
        // the server would otherwise finish them.
        using var release = new ManualResetEventSlim();
        var holding = 0;
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings(), o =>
        {
            o.MaxInFlight = 3;
            o.AdmissionTimeout = TimeSpan.FromMilliseconds(1);
            o.MeldedHook = (_, _, _) =>
            {
                if (Volatile.Read(ref holding) == 1)
                {
                    release.Wait(TimeSpan.FromSeconds(30));
                }
            };
        });
        var server = cluster.Servers[0];
        var max = 0;
        using var sampling = new CancellationTokenSource();
        var sampler = Task.Run(() =>
        {
            while (!sampling.IsCancellationRequested)
            {
                max = Math.Max(max, server.InFlight);
            }
        });
        var refused = 0;
        Volatile.Write(ref holding, 1);
        var burst = Task.WhenAll(Enumerable.Range(0, 40).Select(i => Task.Run(async () =>
        {
            try
            {
                await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(i), Value("x"))]);
            }
            catch (EngineException e) when (e.Code == EngineErrorCode.ResourceExhausted)
            {
                Interlocked.Increment(ref refused);
            }
        })));
        await Hyder.Server.Tests.Cluster.WaitUntil(() => Volatile.Read(ref refused) > 0, "nothing was refused while final meld held the admitted transactions");
        Volatile.Write(ref holding, 0);
        release.Set();
        await burst;
        await sampling.CancelAsync();
        await sampler;
        Assert.InRange(max, 1, 3);
        Assert.True(refused > 0, "nothing was refused");
        Assert.Equal(refused, server.Metrics.Refused);
    }

    [Fact]
    public async Task BadRequestsAreRefusedWithAReasonAndNothingIsApplied()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings());
        var server = cluster.Servers[0];
        var big = new byte[server.Limits.MaxValueBytes + 1];
        var bad = new (IReadOnlyList<Operation> Ops, string Reason)[]
        {
            ([Operation.Put(Key(1), Value("a")), Operation.Put([], Value("b"))], "key must not be empty"),
            ([Operation.Put(Key(1), Value("a")), Operation.Put(Key(2), big)], "limit is"),
            ([Operation.Put(Key(1), Value("a")), new Operation(OperationKind.Put, Key(3))], "needs a value"),
            ([], "at least one operation"),
            ([.. Enumerable.Range(0, server.Limits.MaxOperations + 1).Select(i => Operation.Get(Key(i)))], "operations in one transaction"),
            ([Operation.Scan(Key(1), null, -1)], "scan limit"),
        };
        foreach (var (ops, reason) in bad)
        {
            var e = await Assert.ThrowsAsync<EngineException>(async () => await server.ExecuteAsync(IsolationLevel.Serializable, ops));
            Assert.Equal(EngineErrorCode.InvalidArgument, e.Code);
            Assert.Contains(reason, e.Message);
        }

        var ok = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Put(Key(9), Value("z"))]);
        Assert.Equal(TransactionStatus.Committed, ok.Status);
        Assert.False(ok.Results[0].Found);
    }

    [Fact]
    public async Task GarbageAndHostileBlocksInTheLogAreSkippedOrRejectedAlikeOnEveryServer()
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings { BlockSize = 1024 });
        await Workload(cluster, clients: 2, transactions: 10);
        await cluster.Log.AppendAsync(new byte[] { 1, 2, 3, 4, 5 });
        var good = Tree.Serialization.BlockFormat.WriteControl([2]);
        await cluster.Log.AppendAsync(good);
        await Workload(cluster, clients: 2, transactions: 10);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.All(cluster.Servers, s => Assert.Equal(1, s.Metrics.SkippedBlocks));
        var after = await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(77), Value("still serving"))]);
        Assert.Equal(TransactionStatus.Committed, after.Status);
    }

    [Fact]
    public async Task InteractiveTransactionsSeeTheirOwnWritesAndConflictsAbortWithTheirCause()
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings());
        var a = cluster.Servers[0];
        var b = cluster.Servers[1];
        await a.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("v0"))]);
        await cluster.QuiesceAsync();

        await using var t1 = a.Begin(IsolationLevel.Serializable);
        await using var t2 = b.Begin(IsolationLevel.Serializable);
        Assert.Equal("v0", Encoding.UTF8.GetString(t1.Execute(Operation.Get(Key(1))).Value!));
        Assert.Equal("v0", Encoding.UTF8.GetString(t2.Execute(Operation.Get(Key(1))).Value!));
        t1.Execute(Operation.Put(Key(1), Value("v1")));
        Assert.Equal("v1", Encoding.UTF8.GetString(t1.Execute(Operation.Get(Key(1))).Value!));
        t2.Execute(Operation.Put(Key(1), Value("v2")));
        var o1 = await t1.CommitAsync();
        var o2 = await t2.CommitAsync();
        Assert.Equal(TransactionStatus.Committed, o1.Status);
        Assert.Equal(TransactionStatus.Aborted, o2.Status);
        Assert.True(o2.Cause is AbortCause.ReadWrite or AbortCause.WriteWrite, o2.Cause.ToString());
        Assert.Contains("conflict", o2.Detail);
        Assert.Throws<EngineException>(() => t1.Execute(Operation.Get(Key(1))));
    }

    internal static async Task Workload(TestCluster cluster, int clients, int transactions, int[]? servers = null)
    {
        servers ??= [.. Enumerable.Range(0, cluster.Servers.Count)];
        var snapshot = cluster.Servers.ToArray();
        await Task.WhenAll(Enumerable.Range(0, clients).Select(c => Task.Run(async () =>
        {
            var rng = new Random(c * 31 + transactions);
            var server = snapshot[servers[c % servers.Length]];
            for (var i = 0; i < transactions; i++)
            {
                var ops = new List<Operation>();
                for (var r = 0; r < 3; r++)
                {
                    ops.Add(Operation.Get(Key(rng.Next(500))));
                }

                ops.Add(Operation.Put(Key(rng.Next(500)), Value($"{c}:{i}:{new string('x', rng.Next(200))}")));
                if (rng.Next(5) == 0)
                {
                    ops.Add(Operation.Delete(Key(rng.Next(500))));
                }

                if (rng.Next(7) == 0)
                {
                    ops.Add(Operation.Scan(Key(rng.Next(500)), null, 5));
                }

                var outcome = await server.ExecuteAsync(rng.Next(3) == 0 ? IsolationLevel.SnapshotIsolation : IsolationLevel.Serializable, ops);
                Assert.NotEqual(TransactionStatus.Unknown, outcome.Status);
            }
        })));
    }
}
