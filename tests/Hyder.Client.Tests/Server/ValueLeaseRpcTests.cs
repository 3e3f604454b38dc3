using System.Diagnostics;
using System.Diagnostics.Metrics;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Hyder.Log.Embedded;
using Hyder.Server;
using Hyder.Server.Cluster;
using Hyder.Server.Grpc;
using Hyder.Testing;
using Microsoft.AspNetCore.Builder;
using Xunit;
using Xunit.Abstractions;
using EngineOperation = Hyder.Server.Engine.Operation;
using TreeIsolation = Hyder.Tree.IsolationLevel;
using static Hyder.Client.Tests.Server.ExecuteStreamTests;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests.Server;

/// <summary>
/// A real transaction server that recycles written values (docs/value-storage.md) behind the gRPC
/// service: a one-shot outcome's values are lent until the response is written (unary Execute and
/// Read dispose it when the request ends, ExecuteStream when the slot's answer is written). Writers
/// overwrite the keys being read all along, with values that describe themselves (key and version,
/// repeated), and the server keeps the smallest state window, so a value released before its
/// response was serialized is reclaimed at once and reaches the client as the pool's poison (0xDB,
/// Debug builds) or as another key's bytes.
/// </summary>
public sealed class ValueLeaseRpcTests(ITestOutputHelper output)
{
    private const int Keys = 24;

    /// <summary>How the readers read.</summary>
    public enum ReadPath
    {
        /// <summary>Unary Execute: gets and a scan, one-shot.</summary>
        Execute,

        /// <summary>Unary Read: several keys on one snapshot.</summary>
        Read,

        /// <summary>ExecuteStream: the client's multiplexed one-shot transactions.</summary>
        ExecuteStream,

        /// <summary>Transact: interactive read-modify-writes (values valid until the transaction ends, no lease).</summary>
        Transact,

        /// <summary>Transact, pipelined: begin, the reads and the commit in one batch message, so the transaction ends before its answers are written.</summary>
        TransactBatch,
    }

    /// <summary>
    /// Readers on one path and writers on unary Execute (and, for ExecuteStream, on the shared
    /// stream too) for about two seconds: every value a reader receives is one written for its key,
    /// and once the calls are over every lease the server opened is closed.
    /// </summary>
    [Theory]
    [InlineData(ReadPath.Execute)]
    [InlineData(ReadPath.Read)]
    [InlineData(ReadPath.ExecuteStream)]
    [InlineData(ReadPath.Transact)]
    [InlineData(ReadPath.TransactBatch)]
    public async Task EveryValueReceivedWhileTheKeysAreOverwrittenIsTheOneWrittenAndEveryLeaseCloses(ReadPath path)
    {
        await using var rig = await Rig.StartAsync(slowStarts: true);
        var engine = rig.Engine;
        var leases = rig.Leases;
        var address = rig.Address;
        var settings = new HyderClientSettings { Endpoint = new Uri(address), Timeout = TimeSpan.FromSeconds(20), RetryDelay = TimeSpan.FromMilliseconds(1), MaxRetryDelay = TimeSpan.FromMilliseconds(20) };
        await using var unary = new HyderClient(settings);
        await using var multiplexed = new HyderClient(settings with { Multiplex = true });

        await unary.ExecuteAsync(IsolationLevel.Serializable, [.. Enumerable.Range(0, Keys).Select(k => HyderOperation.Put(Key(k), Encode(k, 0)))]);

        using var stop = new CancellationTokenSource();
        var received = 0L;
        var writes = 0L;
        var maxOpen = 0L;
        var writers = Enumerable.Range(0, 5).Select(w => Task.Run(async () =>
        {
            // Most writers run in the server's process, fast enough that the 16 ordinals a freed
            // state waits for pass within a response's serialization; one writes through gRPC.
            var client = w > 0 ? null : path == ReadPath.ExecuteStream ? multiplexed : unary;
            var rng = new Random(w);
            for (var i = 1; !stop.IsCancellationRequested; i++)
            {
                var version = (w * 10_000_000) + i;
                var a = rng.Next(Keys);
                var b = rng.Next(Keys);
                if (client is null)
                {
                    var outcome = await engine.ExecuteAsync(TreeIsolation.SnapshotIsolation, [EngineOperation.Put(Key(a), Encode(a, version)), EngineOperation.Put(Key(b), Encode(b, version))]);
                    Assert.False(outcome.HoldsSnapshot);
                    Interlocked.Increment(ref writes);
                    continue;
                }

                try
                {
                    await client.ExecuteAsync(IsolationLevel.SnapshotIsolation, [HyderOperation.Put(Key(a), Encode(a, version)), HyderOperation.Put(Key(b), Encode(b, version))]);
                    Interlocked.Increment(ref writes);
                }
                catch (TransactionAbortedException)
                {
                    // Two writers put one key at once (a write-write conflict): the next write goes on.
                }
            }
        })).ToArray();

        var deadline = Stopwatch.StartNew();
        var readers = Enumerable.Range(0, 4).Select(r => Task.Run(async () =>
        {
            var rng = new Random(100 + r);
            for (var i = 0; deadline.Elapsed < TimeSpan.FromSeconds(2) || i < 50; i++)
            {
                var first = rng.Next(Keys);
                var keys = Enumerable.Range(0, 6).Select(j => (first + (j * 5)) % Keys).ToArray();
                var count = path switch
                {
                    ReadPath.Execute => CheckCommit(keys, await unary.ExecuteAsync(IsolationLevel.SnapshotIsolation, Reads(keys, first))),
                    ReadPath.ExecuteStream => CheckCommit(keys, await multiplexed.ExecuteAsync(IsolationLevel.SnapshotIsolation, Reads(keys, first))),
                    ReadPath.Read => CheckRead(keys, await unary.ReadAsync(keys.Select(Key))),
                    ReadPath.TransactBatch => await BatchedReadsAsync(unary, keys),
                    _ => await ReadModifyWriteAsync(unary, keys, 20_000_000 + (r * 1_000_000) + i),
                };
                Interlocked.Add(ref received, count);
                Interlocked.Exchange(ref maxOpen, Math.Max(Interlocked.Read(ref maxOpen), leases.Read()));
            }
        })).ToArray();

        try
        {
            await Task.WhenAll(readers).WaitAsync(TimeSpan.FromSeconds(30));
        }
        finally
        {
            await stop.CancelAsync();
            await Task.WhenAll(writers).WaitAsync(TimeSpan.FromSeconds(30));
        }

        // Unary outcomes are disposed when their requests end, just after the client has the response.
        var closed = Stopwatch.StartNew();
        long open;
        while ((open = leases.Read()) != 0 && closed.Elapsed < TimeSpan.FromSeconds(5))
        {
            await Task.Delay(10);
        }

        var values = engine.Database.Values!;
        output.WriteLine($"{path}: {received} values received and checked, {writes} writes; at most {maxOpen} leases seen open, {open} open at the end; values taken {values.Taken}, reused {values.Reused}, returned {values.Returned}");
        Assert.Equal(0, open);
        Assert.True(received > 500, $"only {received} values were read");
        Assert.True(values.Reused > 0, "no value array was reused: the test recycled nothing");
    }

    /// <summary>
    /// A multiplexed stream whose client stops reading while its reads are answered, then cancels
    /// the call: the answers the server could not write held their leases until the call failed,
    /// and then released every one of them.
    /// </summary>
    [Fact]
    public async Task AnswersLeftUnwrittenWhenTheStreamFailsReleaseTheirLeases()
    {
        await using var rig = await Rig.StartAsync(slowStarts: false);
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = new Uri(rig.Address), Timeout = TimeSpan.FromSeconds(20) });
        await client.ExecuteAsync(IsolationLevel.Serializable, [.. Enumerable.Range(0, Keys).Select(k => HyderOperation.Put(Key(k), Encode(k, 0)))]);

        using var channel = GrpcChannel.ForAddress(rig.Address);
        using var cancel = new CancellationTokenSource();
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream(cancellationToken: cancel.Token);

        // Each answer is some 30 KB: HTTP/2 flow control stops the server's writes after a few,
        // and the rest wait in their slots, each holding its outcome's lease. The requests go out
        // from a task of their own: once every slot is taken the server stops reading, and the
        // writes wait (however slowly a loaded machine gets there).
        var written = 0;
        var blocked = Task.Run(async () =>
        {
            for (ulong id = 1; id <= 200; id++)
            {
                var request = new V1.ExecuteStreamRequest { Id = id, Request = new V1.ExecuteRequest() };
                request.Request.Operations.Add(Enumerable.Range(0, 20).Select(k => new V1.Operation { Kind = V1.OperationKind.Get, Key = ByteString.CopyFrom(Key(k)) }));
                await call.RequestStream.WriteAsync(request);
                Interlocked.Increment(ref written);
            }
        });

        // A quarter of the stream's 128 slots is plenty to show the release. (Twice a CI run saw
        // only 1 lease with all 200 requests written: the server's writer had put a burst of
        // answers into the response buffer unflushed, freeing their slots, until it flushed at
        // least every ExecuteStreamCall.MaxAnswersPerFlush answers; ExecuteStreamTests'
        // AClientThatStopsReadingStopsTheServerReadingEvenAfterABurstOfAnswers shows that bound.)
        await WaitForAsync(() => rig.Leases.Read() >= 32, TimeSpan.FromSeconds(30), () => $"only {rig.Leases.Read()} leases held by answers waiting to be written ({Volatile.Read(ref written)} of 200 requests written, the writer {(blocked.IsCompleted ? $"done: {blocked.Status}" : "waiting")})");
        var held = rig.Leases.Read();

        // One answer read is correct, then the client gives up on the call.
        Assert.True(await call.ResponseStream.MoveNext(CancellationToken.None));
        var first = call.ResponseStream.Current.Response;
        for (var k = 0; k < 20; k++)
        {
            AssertValue(k, first.Results[k].Value.ToByteArray());
        }

        await cancel.CancelAsync();
        try
        {
            await blocked.WaitAsync(TimeSpan.FromSeconds(10));
        }
        catch (Exception e) when (e is RpcException or OperationCanceledException or InvalidOperationException)
        {
            // The write that waited for the server fails with the call (or they all went through before).
        }

        await WaitForAsync(() => rig.Leases.Read() == 0, TimeSpan.FromSeconds(10), () => $"{rig.Leases.Read()} of the {held} leases held by unwritten answers are still open after the call was cancelled");
        output.WriteLine($"{held} leases held by unwritten answers before the call was cancelled, {rig.Leases.Read()} after");

        // The server goes on serving.
        var after = await client.ExecuteAsync(IsolationLevel.SnapshotIsolation, [HyderOperation.Get(Key(3))]);
        AssertValue(3, after.Results[0].Value);
        await WaitForAsync(() => rig.Leases.Read() == 0, TimeSpan.FromSeconds(5), () => $"{rig.Leases.Read()} leases open after a unary read");
    }

    private static async Task WaitForAsync(Func<bool> condition, TimeSpan timeout, Func<string> failure)
    {
        var waited = Stopwatch.StartNew();
        while (!condition())
        {
            Assert.True(waited.Elapsed < timeout, failure());
            await Task.Delay(10);
        }
    }

    /// <summary>Gets of <paramref name="keys"/> and a scan of four keys from <paramref name="first"/>.</summary>
    private static HyderOperation[] Reads(int[] keys, int first) =>
        [.. keys.Select(k => HyderOperation.Get(Key(k))), HyderOperation.Scan(Key(first), Key(first + 4))];

    private static int CheckCommit(int[] keys, CommitResult commit)
    {
        var count = 0;
        for (var i = 0; i < keys.Length; i++)
        {
            AssertValue(keys[i], commit.Results[i].Value);
            count++;
        }

        foreach (var row in commit.Results[keys.Length].Rows)
        {
            Assert.True(Decode(row.Value, out var key, out _) && Key(key).AsSpan().SequenceEqual(row.Key), $"scan row {Convert.ToHexString(row.Key)}: {Describe(row.Value)}");
            count++;
        }

        return count;
    }

    private static int CheckRead(int[] keys, IReadOnlyList<byte[]?> values)
    {
        Assert.Equal(keys.Length, values.Count);
        for (var i = 0; i < keys.Length; i++)
        {
            AssertValue(keys[i], values[i]);
        }

        return keys.Length;
    }

    /// <summary>
    /// An interactive transaction: reads the keys, writes the first, commits. Its values are valid
    /// until it ends; its commit may well abort (a conflict, or a snapshot more than the window
    /// behind), which is no matter here.
    /// </summary>
    private static async Task<int> ReadModifyWriteAsync(HyderClient client, int[] keys, int version)
    {
        var count = 0;
        await using var tx = await client.BeginAsync(IsolationLevel.SnapshotIsolation);
        foreach (var k in keys)
        {
            AssertValue(k, await tx.GetAsync(Key(k)));
            count++;
        }

        await tx.PutAsync(Key(keys[0]), Encode(keys[0], version));
        try
        {
            await tx.CommitAsync();
        }
        catch (TransactionAbortedException)
        {
        }

        return count;
    }

    /// <summary>
    /// A read-only pipelined transaction sent as one batch (begin, the reads, the commit): the
    /// commit ends it, and with it the loan of the values read, before the batch is answered.
    /// </summary>
    private static async Task<int> BatchedReadsAsync(HyderClient client, int[] keys)
    {
        await using var tx = client.BeginPipelined(IsolationLevel.SnapshotIsolation);
        Task<byte[]?>[] reads;
        Task<CommitResult> commit;
        using (tx.Batch())
        {
            reads = [.. keys.Select(k => tx.GetAsync(Key(k)))];
            commit = tx.CommitAsync();
        }

        var values = await Task.WhenAll(reads);
        await commit;
        for (var i = 0; i < keys.Length; i++)
        {
            AssertValue(keys[i], values[i]);
        }

        return keys.Length;
    }

    private static void AssertValue(int key, byte[]? value)
    {
        Assert.NotNull(value);
        Assert.True(Decode(value, out var found, out _) && found == key, $"key {key}: {Describe(value)}");
    }

    private static byte[] Key(int k) => [(byte)'k', (byte)(k >> 8), (byte)k];

    /// <summary>Values of about a kilobyte in three length classes, so freed arrays are taken again by other keys.</summary>
    private static readonly SelfDescribingValues s_values = new(key => 1000 + (key % 3 * 500), Keys);

    private static byte[] Encode(int key, int version) => s_values.Encode(key, version);

    private static bool Decode(ReadOnlySpan<byte> value, out int key, out int version) => s_values.Decode(value, out key, out version);

    private static string Describe(ReadOnlySpan<byte> value) => SelfDescribingValues.Describe(value);

    /// <summary>A recycling transaction server on an embedded log behind <see cref="HyderService"/>, and its lease gauge.</summary>
    private sealed class Rig : IAsyncDisposable
    {
        private Rig(EmbeddedLog log, TransactionServer engine, WebApplication app, string address, LeaseGauge leases)
        {
            Log = log;
            Engine = engine;
            App = app;
            Address = address;
            Leases = leases;
        }

        public EmbeddedLog Log { get; }

        public TransactionServer Engine { get; }

        public WebApplication App { get; }

        public string Address { get; }

        public LeaseGauge Leases { get; }

        /// <summary>Starts one.</summary>
        /// <param name="slowStarts">
        /// One response in four is slow to start, as on a busy server or a slow connection: its
        /// headers, and so the serialization of its message, wait 5 ms after the service method
        /// returned, so values released before then are reclaimed meanwhile (a multiplexed
        /// stream's answers are written after their transactions anyway).
        /// </param>
        public static async Task<Rig> StartAsync(bool slowStarts)
        {
            var serverId = $"lease-{Guid.NewGuid():N}";
            var leases = new LeaseGauge(serverId);
            var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
            var engine = await TransactionServer.StartAsync(log, new ServerOptions
            {
                ServerId = serverId,

                // The smallest window of retained states: a state no lease pins is reclaimed 16 ordinals on.
                Cluster = new ClusterSettings { StateWindow = 16 },
                RecycleValues = true,
                MaxInFlight = 256,
            });
            Assert.NotNull(engine.Database.Values);
            var requests = 0;
            var (app, address) = await StartApplicationAsync(engine, (context, next) =>
            {
                if (slowStarts && Interlocked.Increment(ref requests) % 4 == 0)
                {
                    context.Response.OnStarting(static () => Task.Delay(5));
                }

                return next(context);
            });
            return new Rig(log, engine, app, address, leases);
        }

        public async ValueTask DisposeAsync()
        {
            await App.DisposeAsync();
            await Engine.DisposeAsync();
            await Log.DisposeAsync();
            Leases.Dispose();
        }
    }

    /// <summary>The server's <c>hyder.outcome_leases_open</c> gauge, read on demand.</summary>
    private sealed class LeaseGauge : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly string _serverId;
        private readonly Lock _lock = new();
        private long _value = -1;

        public LeaseGauge(string serverId)
        {
            _serverId = serverId;
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == ServerMetrics.MeterName && instrument.Name == "hyder.outcome_leases_open")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag.Key == "server" && (string?)tag.Value == _serverId)
                    {
                        _value = value;
                    }
                }
            });
            _listener.Start();
        }

        /// <summary>The open leases now (-1 before the server's meter exists).</summary>
        public long Read()
        {
            lock (_lock)
            {
                _value = -1;
                _listener.RecordObservableInstruments();
                return _value;
            }
        }

        public void Dispose() => _listener.Dispose();
    }
}
