using System.Diagnostics;
using Hyder.Log.Embedded;
using Hyder.Server;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// One configuration, end to end: a fresh in-memory embedded log and one server, the keys loaded
/// through the server, a warm-up, then a fixed measured window of closed-loop clients.
/// </summary>
internal static class ServerRun
{
    /// <summary>Runs <paramref name="config"/> and returns what the measured window saw.</summary>
    public static async Task<ServerResult> MeasureAsync(ServerConfig config, ServerWorkload w)
    {
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions { BlockSize = 8192 });
        var options = new ServerOptions
        {
            ServerId = "bench",
            Cluster = config.Cluster,
            MaxInFlight = Math.Max(512, 2 * w.Clients),

            // As hyder-server runs (docs/value-storage.md); the clients dispose each outcome.
            RecycleValues = true,
        };
        if (config.Threading is { } threading)
        {
            options.Threading = threading;
        }

        await using var server = await TransactionServer.StartAsync(log, options);

        var payload = new byte[w.PayloadBytes];
        new Random(7).NextBytes(payload);
        var loadClock = Stopwatch.StartNew();
        await LoadAsync(server, w, payload, config.Name);
        var loadSeconds = loadClock.Elapsed.TotalSeconds;

        var clients = new Client[w.Clients];
        using var stop = new CancellationTokenSource();
        var tasks = new Task[w.Clients];
        for (var i = 0; i < clients.Length; i++)
        {
            var client = clients[i] = new Client(server, w, config.Isolation, payload, seed: 1000 + i);
            tasks[i] = Task.Run(() => client.RunAsync(stop.Token));
        }

        Console.Error.WriteLine($"  [{config.Name}] loaded {w.Keys:N0} keys in {loadSeconds:F1} s; warm-up {w.Warmup.TotalSeconds:F0} s, then {w.Duration.TotalSeconds:F0} s measured with {w.Clients} clients");
        await Task.Delay(w.Warmup);

        var before = Snapshot.Take(server);
        Client.Measuring = true;
        var sampler = new BacklogSampler(server);
        await Task.Delay(w.Duration);
        Client.Measuring = false;
        var after = Snapshot.Take(server);
        var backlog = sampler.Stop();

        await stop.CancelAsync();
        await Task.WhenAll(tasks);
        if (server.Pipeline.Failure is { } failure)
        {
            throw new InvalidOperationException($"{config.Name}: the pipeline failed", failure);
        }

        return ServerResult.From(config, server, before, after, clients, backlog, loadSeconds);
    }

    /// <summary>Puts every key through the server, <see cref="ServerWorkload.LoadBatch"/> per transaction, a few transactions in flight.</summary>
    private static async Task LoadAsync(TransactionServer server, ServerWorkload w, byte[] payload, string name)
    {
        var keys = w.KeyTable;
        var batches = (w.Keys + w.LoadBatch - 1) / w.LoadBatch;
        var next = -1;
        var done = 0;
        var retries = 0;
        var clock = Stopwatch.StartNew();
        var lastReport = TimeSpan.Zero;
        async Task LoaderAsync()
        {
            var ops = new List<Operation>(w.LoadBatch);
            int b;
            while ((b = Interlocked.Increment(ref next)) < batches)
            {
                ops.Clear();
                for (var k = b * w.LoadBatch; k < Math.Min(w.Keys, (b + 1) * w.LoadBatch); k++)
                {
                    ops.Add(Operation.Put(keys[k], payload));
                }

                // Blind puts of distinct keys conflict with nothing; retry in case the outcome is unknown.
                while ((await server.ExecuteAsync(IsolationLevel.Serializable, ops)).Status != TransactionStatus.Committed)
                {
                    Interlocked.Increment(ref retries);
                }

                var d = Interlocked.Increment(ref done);
                if (clock.Elapsed - lastReport > TimeSpan.FromSeconds(5) || d == batches)
                {
                    lastReport = clock.Elapsed;
                    Console.Error.WriteLine($"  [{name}] loading: {Math.Min(w.Keys, (long)d * w.LoadBatch):N0} / {w.Keys:N0} keys, {clock.Elapsed.TotalSeconds:F0} s");
                }
            }
        }

        await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => Task.Run(LoaderAsync)));
        if (retries > 0)
        {
            Console.Error.WriteLine($"  [{name}] loading retried {retries} batches");
        }
    }

    /// <summary>A closed-loop client: one transaction at a time, keys uniform and distinct, nothing allocated per transaction.</summary>
    internal sealed class Client(TransactionServer server, ServerWorkload w, IsolationLevel isolation, byte[] payload, int seed)
    {
        private static volatile bool s_measuring;

        private readonly Operation[] _ops = new Operation[w.Reads + w.Writes];
        private readonly int[] _picked = new int[w.Reads + w.Writes];
        private readonly Random _rng = new(seed);

        /// <summary>Set while the measured window is open.</summary>
        public static bool Measuring
        {
            get => s_measuring;
            set => s_measuring = value;
        }

        public long Committed { get; private set; }

        public long Aborted { get; private set; }

        public long Unknown { get; private set; }

        public long Refused { get; private set; }

        /// <summary>Sum over measured transactions of ordinal − 1 − snapshot: the zone the transaction was born with.</summary>
        public long ZoneTotal { get; private set; }

        public long LatencyTicks { get; private set; }

        public async Task RunAsync(CancellationToken stop)
        {
            var keys = w.KeyTable;
            while (!stop.IsCancellationRequested)
            {
                for (var i = 0; i < _picked.Length; i++)
                {
                    int k;
                    do
                    {
                        k = _rng.Next(w.Keys);
                    }
                    while (Array.IndexOf(_picked, k, 0, i) >= 0);
                    _picked[i] = k;
                    _ops[i] = i < w.Reads ? Operation.Get(keys[k]) : Operation.Put(keys[k], payload);
                }

                var start = Stopwatch.GetTimestamp();
                TransactionOutcome outcome;
                try
                {
                    outcome = await server.ExecuteAsync(isolation, _ops, CancellationToken.None);

                    // Only the status and ordinals are read: the lent values go back at once.
                    outcome.Dispose();
                }
                catch (EngineException e) when (e.Code == EngineErrorCode.ResourceExhausted)
                {
                    if (Measuring)
                    {
                        Refused++;
                    }

                    continue;
                }

                if (!Measuring)
                {
                    continue;
                }

                LatencyTicks += Stopwatch.GetTimestamp() - start;
                switch (outcome.Status)
                {
                    case TransactionStatus.Committed:
                        Committed++;
                        break;
                    case TransactionStatus.Aborted:
                        Aborted++;
                        break;
                    default:
                        Unknown++;
                        break;
                }

                if (outcome.Ordinal > 0)
                {
                    ZoneTotal += outcome.Ordinal - 1 - outcome.SnapshotSequence;
                }
            }
        }
    }

    /// <summary>
    /// Samples, every millisecond, the ordinals read from the log but not yet melded: when final
    /// meld (with premeld, the pipeline) keeps up, the backlog is mostly zero.
    /// </summary>
    private sealed class BacklogSampler
    {
        private readonly Thread _thread;
        private volatile bool _stop;
        private long _samples;
        private long _busy;
        private long _total;

        public BacklogSampler(TransactionServer server)
        {
            _thread = new Thread(() =>
            {
                while (!_stop)
                {
                    var backlog = Math.Max(0, server.LastRead - server.LastMelded);
                    _samples++;
                    _busy += backlog > 0 ? 1 : 0;
                    _total += backlog;
                    Thread.Sleep(1);
                }
            })
            { IsBackground = true, Name = "backlog-sampler" };
            _thread.Start();
        }

        /// <summary>Stops and returns (share of samples with a backlog, mean backlog).</summary>
        public (double Busy, double Mean) Stop()
        {
            _stop = true;
            _thread.Join();
            return (_busy / (double)Math.Max(1, _samples), _total / (double)Math.Max(1, _samples));
        }
    }

    /// <summary>The server's and the process's counters at one instant.</summary>
    internal sealed record Snapshot(
        long Timestamp,
        long Commits,
        long[] AbortsByCause,
        long ConflictZone,
        MeldTotals Final,
        MeldTotals Premeld,
        MeldTotals Group,
        long Appended,
        long Allocated,
        int[] Collections,
        TimeSpan ProcessCpu,
        Dictionary<int, (string Group, double Seconds)> Threads,
        Hyder.Server.Diagnostics.StageBudget Budget)
    {
        public static Snapshot Take(TransactionServer server)
        {
            var causes = Enum.GetValues<AbortCause>();
            var aborts = new long[causes.Length];
            foreach (var c in causes)
            {
                aborts[(int)c] = server.Metrics.AbortsOf(c);
            }

            var premeld = default(MeldTotals);
            foreach (var op in server.Pipeline.PremeldOperators)
            {
                premeld += MeldTotals.Of(op.Counters);
            }

            using var process = Process.GetCurrentProcess();
            return new Snapshot(
                Stopwatch.GetTimestamp(),
                server.Metrics.Commits,
                aborts,
                server.Metrics.ConflictZoneTotal,
                MeldTotals.Of(server.Database.FinalMeld.Counters),
                premeld,
                server.Pipeline.GroupOperator is { } g ? MeldTotals.Of(g.Counters) : default,
                server.Metrics.Appended,
                GC.GetTotalAllocatedBytes(precise: true),
                [GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2)],
                process.TotalProcessorTime,
                Hyder.Server.Diagnostics.ThreadTimes.Capture(),
                Hyder.Server.Diagnostics.StageBudget.Take(server));
        }
    }

    /// <summary>A meld operator's counters, read without stopping it (each field is a plain long written by its thread).</summary>
    internal readonly record struct MeldTotals(long Melds, long Commits, long Nodes, long Ephemeral, long Zone)
    {
        public static MeldTotals Of(MeldCounters c) => new(
            Volatile.Read(ref c.Melds),
            Volatile.Read(ref c.Commits),
            Volatile.Read(ref c.IntentionNodesVisited) + Volatile.Read(ref c.StateNodesVisited),
            Volatile.Read(ref c.EphemeralNodesCreated),
            Volatile.Read(ref c.ConflictZoneTotal));

        public static MeldTotals operator +(MeldTotals a, MeldTotals b) =>
            new(a.Melds + b.Melds, a.Commits + b.Commits, a.Nodes + b.Nodes, a.Ephemeral + b.Ephemeral, a.Zone + b.Zone);

        public static MeldTotals operator -(MeldTotals a, MeldTotals b) =>
            new(a.Melds - b.Melds, a.Commits - b.Commits, a.Nodes - b.Nodes, a.Ephemeral - b.Ephemeral, a.Zone - b.Zone);
    }
}
