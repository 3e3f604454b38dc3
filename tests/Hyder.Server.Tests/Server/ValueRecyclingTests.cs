using System.Buffers.Binary;
using System.Collections.Concurrent;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Testing;
using Hyder.Tree.Meld;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// A server that recycles written values (<see cref="ServerOptions.RecycleValues"/>,
/// docs/value-storage.md): a one-shot outcome lends its values and holds its snapshot until
/// disposed, and final meld gives displaced values back to the pool once nothing can reach them.
/// Every value written describes itself (its key and a version, repeated), so an array freed too
/// early shows as a wrong value: the pool's poison (0xDB, Debug builds) or another key's bytes.
/// </summary>
public sealed class ValueRecyclingTests(ITestOutputHelper output)
{
    private static readonly Action<ServerOptions> s_recycle = o => o.RecycleValues = true;

    /// <summary>
    /// The smallest state window: a server keeps the last W states pinned for decoding peers'
    /// intentions (16,384 by default), so only with a small one does reclamation, and with it the
    /// recycling of values, come right behind the newest state instead of thousands of ordinals back.
    /// </summary>
    private static ClusterSettings Settings => new() { StateWindow = 16 };

    /// <summary>
    /// One read's outcome is held while thousands of overwrites of its keys (and of others) commit:
    /// the values it lent stay as they were read, the lease is counted while held and not after,
    /// and then the displaced arrays really go back to the pool and are taken again.
    /// </summary>
    [Fact]
    public async Task AHeldOutcomesValuesSurviveThousandsOfOverwritesAndAreRecycledOnceItIsDisposed()
    {
        const int keys = 32;
        await using var cluster = await TestCluster.StartAsync(1, Settings, s_recycle);
        var server = cluster.Servers[0];
        var values = server.Database.Values!;
        await WriteAllAsync(server, keys, version: 0);

        // A get, a scan of four keys and a get of the transaction's own write.
        var held = await server.ExecuteAsync(IsolationLevel.Serializable, [
            Operation.Get(Key(0)),
            Operation.Scan(Key(1), Key(5), 0),
            Operation.Put(Key(5), Encode(5, 1_000_000)),
            Operation.Get(Key(5)),
        ]);
        Assert.Equal(TransactionStatus.Committed, held.Status);
        var lent = Lent(held);
        Assert.Equal([0, 1, 2, 3, 4, 5], lent.Select(v => v.Key));
        var expected = lent.Select(v => v.Value.ToArray()).ToArray();
        Assert.All(lent, v => Assert.Equal(Encode(v.Key, v.Version), v.Value));

        // Thousands of overwrites of those keys and others: the state window (16) moves past the
        // held snapshot many times over, so only the lease keeps the values it lent alive.
        await OverwriteAsync(server, keys, writers: 8, transactions: 250, firstVersion: 1);
        for (var i = 0; i < lent.Count; i++)
        {
            Assert.True(expected[i].AsSpan().SequenceEqual(lent[i].Value), $"the lent value of key {lent[i].Key} changed while its outcome was held: {Describe(lent[i].Value)}");
        }

        Assert.True(held.HoldsSnapshot);
        Assert.Equal(1, server.Leases.Open);

        held.Dispose();
        Assert.False(held.HoldsSnapshot);
        Assert.Equal(0, server.Leases.Open);

        // Released: the next melds reclaim the states it held, whose displaced values go back to
        // the pool, and the writes after them take those arrays again.
        var returnedBefore = values.Returned;
        var reusedBefore = values.Reused;
        await OverwriteAsync(server, keys, writers: 4, transactions: 100, firstVersion: 10_000);
        output.WriteLine($"values taken {values.Taken}, reused {values.Reused}, returned {values.Returned}; {server.Database.RetainedStates} states retained");
        Assert.True(values.Returned > returnedBefore, $"no value went back to the pool after the lease was released ({values.Returned} returned)");
        Assert.True(values.Reused > reusedBefore, $"no value array was taken again ({values.Reused} reused of {values.Taken})");
        Assert.Equal(0, server.Leases.Open);

#if DEBUG
        // The arrays the outcome lent were freed (poisoned, perhaps taken again): this is what a
        // lease released too early looks like to a reader, and what the checks here would see.
        for (var i = 0; i < lent.Count; i++)
        {
            Assert.False(expected[i].AsSpan().SequenceEqual(lent[i].Value), $"key {lent[i].Key}'s lent array was never recycled");
        }
#endif
    }

    /// <summary>Only an outcome that carries values read holds its snapshot, only the original holds it, and only once.</summary>
    [Fact]
    public async Task OnlyAnOutcomeWithValuesReadHoldsItsSnapshotAndReleasesItOnce()
    {
        await using var cluster = await TestCluster.StartAsync(1, Settings, s_recycle);
        var server = cluster.Servers[0];
        await WriteAllAsync(server, 4, version: 0);

        // Write-only, a get that found nothing, an empty scan: nothing lent.
        using (var write = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(0), Encode(0, 1)), Operation.Delete(Key(3))]))
        {
            Assert.Equal(TransactionStatus.Committed, write.Status);
            Assert.False(write.HoldsSnapshot);
            Assert.Equal(0, server.Leases.Open);
        }

        using (var missing = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(3)), Operation.Scan(Key(100), Key(200), 0)]))
        {
            Assert.Equal(TransactionStatus.Committed, missing.Status);
            Assert.False(missing.Results[0].Found);
            Assert.False(missing.HoldsSnapshot);
            Assert.Equal(0, server.Leases.Open);
        }

        // An aborted transaction that read a value: its outcome has no results, so holds nothing.
        var aborted = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Add(Key(1_000), 5, max: 1)]);
        Assert.Equal(TransactionStatus.Aborted, aborted.Status);
        Assert.Equal(AbortCause.BoundViolated, aborted.Cause);
        Assert.Empty(aborted.Results);
        Assert.False(aborted.HoldsSnapshot);
        Assert.Equal(0, server.Leases.Open);
        aborted.Dispose();
        Assert.Equal(0, server.Leases.Open);

        // A read that commits holds; a copy shares its values but neither holds nor releases.
        var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Put(Key(2), Encode(2, 1))]);
        Assert.Equal(TransactionStatus.Committed, read.Status);
        Assert.True(read.HoldsSnapshot);
        Assert.Equal(1, server.Leases.Open);
        var copy = read with { Detail = "a copy" };
        Assert.Same(read.Results, copy.Results);
        Assert.False(copy.HoldsSnapshot);
        copy.Dispose();
        Assert.True(read.HoldsSnapshot);
        Assert.Equal(1, server.Leases.Open);
        Assert.Equal(Encode(1, 0), read.Results[0].Value);

        // Disposed twice: released once.
        read.Dispose();
        read.Dispose();
        Assert.False(read.HoldsSnapshot);
        Assert.Equal(0, server.Leases.Open);
        var second = await server.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Get(Key(1))]);
        Assert.Equal(1, server.Leases.Open);
        read.Dispose();
        Assert.Equal(1, server.Leases.Open);
        second.Dispose();
        Assert.Equal(0, server.Leases.Open);

        // A server that keeps callers' arrays lends nothing.
        await using var plain = await TestCluster.StartAsync(1, Settings);
        var other = plain.Servers[0];
        await WriteAllAsync(other, 2, version: 0);
        var kept = await other.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(0)), Operation.Scan(Key(0), null, 0)]);
        Assert.Null(other.Database.Values);
        Assert.Equal(Encode(0, 0), kept.Results[0].Value);
        Assert.False(kept.HoldsSnapshot);
        Assert.Equal(0, other.Leases.Open);
        kept.Dispose();
        Assert.Equal(0, other.Leases.Open);
    }

    /// <summary>
    /// Readers and writers at once on one recycling server: one-shot reads (gets, scans, reads of
    /// the transaction's own writes, some outcomes held a little before they are checked), blind
    /// writes and read-modify-writes. Every value read is one that was written for its key, and
    /// every lease is released.
    /// </summary>
    [Fact]
    public async Task ConcurrentOneShotReadersOnlyEverSeeValuesWrittenForTheirKeys()
    {
        const int keys = 48;
        await using var cluster = await TestCluster.StartAsync(1, Settings, s_recycle);
        var server = cluster.Servers[0];
        var values = server.Database.Values!;
        await WriteAllAsync(server, keys, version: 0);

        var checkedValues = 0L;
        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var writers = Enumerable.Range(0, 4).Select(w => Task.Run(async () =>
        {
            var rng = new Random(w);
            for (var i = 0; i < 1_000; i++)
            {
                var version = (w + 1) * 100_000 + i;
                var a = rng.Next(keys);
                var b = rng.Next(keys);
                if (rng.Next(3) == 0)
                {
                    // Read-modify-write: what it read is checked, then the outcome released.
                    Operation[] operations = [Operation.Get(Key(a)), Operation.Put(Key(a), Encode(a, version)), Operation.Put(Key(b), Encode(b, version))];
                    using var rmw = await server.ExecuteAsync(IsolationLevel.Serializable, operations, stop.Token);
                    if (rmw.Status == TransactionStatus.Committed)
                    {
                        Interlocked.Add(ref checkedValues, Check(rmw, operations));
                    }
                }
                else
                {
                    using var blind = await server.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Put(Key(a), Encode(a, version)), Operation.Put(Key(b), Encode(b, version))], stop.Token);
                    Assert.False(blind.HoldsSnapshot);
                }
            }
        })).ToArray();

        var readers = Enumerable.Range(0, 4).Select(r => Task.Run(async () =>
        {
            var rng = new Random(100 + r);
            for (var i = 0; i < 1_200; i++)
            {
                var k = rng.Next(keys);
                Operation[] operations = (i % 4) switch
                {
                    0 => [Operation.Get(Key(k)), Operation.Get(Key((k + 1) % keys)), Operation.Get(Key((k + 7) % keys))],
                    1 => [Operation.Scan(Key(k), Key(k + 8), 0)],
                    2 => [Operation.Get(Key(k)), Operation.Put(Key(k), Encode(k, 900_000 + (r * 1_000) + i)), Operation.Get(Key(k))],
                    _ => [Operation.Get(Key(k)), Operation.Scan(Key(0), null, 0)],
                };
                var outcome = await server.ExecuteAsync(i % 2 == 0 ? IsolationLevel.Serializable : IsolationLevel.SnapshotIsolation, operations, stop.Token);
                try
                {
                    if (outcome.Status != TransactionStatus.Committed)
                    {
                        Assert.False(outcome.HoldsSnapshot);
                        continue;
                    }

                    if (i % 16 == 0)
                    {
                        // Held while others commit and meld.
                        await Task.Delay(2, stop.Token);
                    }

                    Interlocked.Add(ref checkedValues, Check(outcome, operations));
                }
                finally
                {
                    outcome.Dispose();
                }
            }
        })).ToArray();

        await Task.WhenAll([.. writers, .. readers]);
        output.WriteLine($"{checkedValues} values checked; values taken {values.Taken}, reused {values.Reused}, returned {values.Returned}; {server.Metrics.Commits} commits, {server.Metrics.Aborts} aborts");
        Assert.Equal(0, server.Leases.Open);
        Assert.True(checkedValues > 5_000, $"only {checkedValues} values were read");
        Assert.True(values.Returned > 0 && values.Reused > 0, $"{values.Returned} returned, {values.Reused} reused: nothing was recycled");

        // What is left is what was written: every key's value describes that key.
        await cluster.QuiesceAsync();
        var rows = 0;
        await foreach (var row in server.ScanAsync(null, null, 0))
        {
            Assert.True(Decode(row.Value, out var key, out _) && Key(key).AsSpan().SequenceEqual(row.Key), $"key {Convert.ToHexString(row.Key)} holds {Describe(row.Value)}");
            rows++;
        }

        Assert.Equal(keys, rows);
    }

    public static TheoryData<int, int, bool> Pipelines => new()
    {
        { 0, 0, false },
        { 2, 1, true },
    };

    /// <summary>
    /// Twin servers on one log, one recycling values and one keeping them as the GC's: random puts,
    /// overwrites, deletes, reinserts and commutative operations (some on keys that held plain
    /// values) from both, with reads checked on both. After every ordinal they made the same
    /// decision and hold the same state, byte for byte: a value array freed while a state still
    /// held it would show in the recycling server's hash once poisoned or taken again.
    /// </summary>
    [Theory]
    [MemberData(nameof(Pipelines))]
    public async Task TwinServersOneRecyclingValuesReachTheSameStateAfterEveryOrdinal(int t, int d, bool group)
    {
        const int keys = 96;
        var seen = new[] { new ConcurrentDictionary<long, string>(), new ConcurrentDictionary<long, string>() };
        var next = 0;
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings { PremeldThreads = t, Distance = d, GroupMeld = group, BlockSize = 1024, StateWindow = 32 }, o =>
        {
            // server-1 recycles, server-2 does not; each records its decisions and states.
            o.RecycleValues = o.ServerId == "server-1";
            o.FlushEvery = 300;
            var record = seen[next++];
            o.MeldedHook = (v, m, s) => record[v] = $"{(m.Committed ? "commit" : m.Cause)}, state #{s.Sequence} {TreeInspector.StateHash(s.Root):X}";
        });
        var recycling = cluster.Servers[0];
        Assert.NotNull(recycling.Database.Values);
        Assert.Null(cluster.Servers[1].Database.Values);

        var checkedValues = 0L;
        var clients = Enumerable.Range(0, 6).Select(c => Task.Run(async () =>
        {
            var server = cluster.Servers[c % 2];
            var rng = new Random(c);
            for (var i = 0; i < 300; i++)
            {
                var version = c * 10_000 + i;
                var operations = new List<Operation>();
                for (var n = rng.Next(1, 4); n > 0; n--)
                {
                    var k = rng.Next(keys);
                    operations.Add((rng.Next(10), k % 8 == 0) switch
                    {
                        // Keys 0, 8, 16, ... are counters, now and then overwritten with a plain 8-byte value or deleted.
                        (0, true) => Operation.Put(Key(k), BitConverter.GetBytes((long)version)),
                        (1, true) => Operation.Delete(Key(k)),
                        (2, true) => Operation.MaxOf(Key(k), version),
                        (3 or 4 or 5, true) => Operation.Add(Key(k), 1 + (version % 5)),
                        (_, true) => Operation.Get(Key(k)),
                        (0 or 1, false) => Operation.Delete(Key(k)),
                        (2 or 3, false) => Operation.Get(Key(k)),
                        (4, false) => Operation.Scan(Key(k), Key(k + 6), 0),
                        _ => Operation.Put(Key(k), Encode(k, version)),
                    });
                }

                var isolation = rng.Next(3) == 0 ? IsolationLevel.SnapshotIsolation : IsolationLevel.Serializable;
                using var outcome = await server.ExecuteAsync(isolation, operations);
                if (outcome.Status == TransactionStatus.Committed)
                {
                    Interlocked.Add(ref checkedValues, Check(outcome, operations, skipCounters: true));
                }
            }
        })).ToArray();
        await Task.WhenAll(clients);

        var hashes = await cluster.QuiesceAsync();
        var pool = recycling.Database.Values!;
        output.WriteLine($"{seen[0].Count} ordinals, {recycling.Metrics.Commits} commits, {recycling.Metrics.Aborts} aborts, {checkedValues} values checked; values taken {pool.Taken}, reused {pool.Reused}, returned {pool.Returned}");
        Assert.Equal(hashes[0], hashes[1]);
        await AssertSameCurrentStateAsync(cluster);
        Assert.Equal(0, recycling.Leases.Open);
        Assert.Equal(0, cluster.Servers[1].Leases.Open);
        Assert.True(checkedValues > 200, $"only {checkedValues} values were read");
        Assert.True(recycling.Database.Values!.Returned > 0, "the recycling server freed no value");

        // A filler or maintenance flush may land after the quiesce, and each server records an
        // ordinal just after it publishes it: compare every ordinal up to the last both recorded.
        var last = Math.Min(seen[0].Keys.Max(), seen[1].Keys.Max());
        var common = 0;
        for (var s = 0; s < 2; s++)
        {
            foreach (var (v, mine) in seen[s])
            {
                if (v <= last)
                {
                    Assert.True(seen[1 - s].TryGetValue(v, out var other) && other == mine, $"#{v}: server-{s + 1} {mine} | server-{2 - s} {other}");
                    common += s == 0 ? 1 : 0;
                }
            }
        }

        Assert.True(common > 600, $"only {common} ordinals both servers melded");

        // And the data, row by row (a scan of a recycling server returns copies).
        var rows = new List<KeyValuePair<byte[], byte[]>>[2];
        for (var s = 0; s < 2; s++)
        {
            rows[s] = [];
            await foreach (var row in cluster.Servers[s].ScanAsync(null, null, 0))
            {
                rows[s].Add(row);
            }
        }

        Assert.Equal(rows[1].Count, rows[0].Count);
        for (var i = 0; i < rows[0].Count; i++)
        {
            Assert.Equal(rows[1][i].Key, rows[0][i].Key);
            Assert.Equal(rows[1][i].Value, rows[0][i].Value);
        }
    }

    /// <summary>
    /// A server decodes its peers' intentions from the log: their values go into its own value
    /// pool and come back to it like its own writes, and every value it then reads is the one
    /// written. (Without this a cluster of N servers would recycle only 1/N of its writes.)
    /// </summary>
    [Fact]
    public async Task APeersWritesDecodedFromTheLogAreRecycledByTheServerThatDecodesThem()
    {
        const int keys = 32;
        await using var cluster = await TestCluster.StartAsync(2, Settings, s_recycle);
        var (writer, reader) = (cluster.Servers[0], cluster.Servers[1]);
        var values = reader.Database.Values!;
        await WriteAllAsync(writer, keys, version: 0);
        await OverwriteAsync(writer, keys, writers: 4, transactions: 300, firstVersion: 1);
        await cluster.QuiesceAsync();
        output.WriteLine($"the decoding server: values taken {values.Taken}, reused {values.Reused}, returned {values.Returned}");
        Assert.True(values.Taken >= 1_000, $"the decoding server took only {values.Taken} value arrays for its peer's 2,432 writes");
        Assert.True(values.Returned > 0 && values.Reused > 0, $"the peer's values did not come back to the decoding server's pool ({values.Returned} returned, {values.Reused} reused)");

        using var read = await reader.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Scan(Key(0), Key(keys), 0)]);
        var rows = read.Results[0].Rows!;
        Assert.Equal(keys, rows.Count);
        foreach (var row in rows)
        {
            Assert.True(Decode(row.Value, out var key, out _), Describe(row.Value));
            Assert.Equal(BinaryPrimitives.ReadInt32BigEndian(row.Key), key);
        }
    }

    /// <summary>
    /// The two servers' current states, pinned, compared once both are at the same state: a
    /// maintenance flush may still be appended after the cluster went quiet, and one server can
    /// meld it before the other.
    /// </summary>
    private static async Task AssertSameCurrentStateAsync(TestCluster cluster)
    {
        for (var attempt = 0; ; attempt++)
        {
            var (a, b) = (cluster.Servers[0].Database, cluster.Servers[1].Database);
            var (sa, sb) = (a.PinCurrent(), b.PinCurrent());
            try
            {
                if (sa.Sequence == sb.Sequence)
                {
                    Assert.Equal(TreeInspector.StateHash(sa.Root), TreeInspector.StateHash(sb.Root));
                    return;
                }
            }
            finally
            {
                a.Release(sa);
                b.Release(sb);
            }

            Assert.True(attempt < 100, $"the servers stayed at different states: #{sa.Sequence} and #{sb.Sequence}");
            await cluster.QuiesceAsync();
        }
    }

    /// <summary>Puts every key's value at <paramref name="version"/>, in one transaction.</summary>
    private static async Task WriteAllAsync(TransactionServer server, int keys, int version)
    {
        var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [.. Enumerable.Range(0, keys).Select(k => Operation.Put(Key(k), Encode(k, version)))]);
        Assert.Equal(TransactionStatus.Committed, outcome.Status);
    }

    /// <summary>Concurrent blind overwrites of two random keys each, versions from <paramref name="firstVersion"/> on.</summary>
    private static async Task OverwriteAsync(TransactionServer server, int keys, int writers, int transactions, int firstVersion)
    {
        await Task.WhenAll(Enumerable.Range(0, writers).Select(w => Task.Run(async () =>
        {
            var rng = new Random(firstVersion + w);
            for (var i = 0; i < transactions; i++)
            {
                var version = firstVersion + (w * transactions) + i;
                var a = rng.Next(keys);
                var b = i % 4 == 0 ? 0 : rng.Next(keys);
                var outcome = await server.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Put(Key(a), Encode(a, version)), Operation.Put(Key(b), Encode(b, version + 1))]);
                Assert.NotEqual(TransactionStatus.Unknown, outcome.Status);
                Assert.False(outcome.HoldsSnapshot);
            }
        })));
    }

    /// <summary>The values an outcome lent (gets' and scans' rows), each with the key it was read at and the version it says it is.</summary>
    private static List<(int Key, int Version, byte[] Value)> Lent(TransactionOutcome outcome)
    {
        var lent = new List<(int, int, byte[])>();
        foreach (var r in outcome.Results)
        {
            if (r.Value is { } value)
            {
                Assert.True(Decode(value, out var key, out var version), Describe(value));
                lent.Add((key, version, value));
            }

            foreach (var row in r.Rows ?? [])
            {
                Assert.True(Decode(row.Value, out var key, out var version), Describe(row.Value));
                lent.Add((key, version, row.Value));
            }
        }

        return lent;
    }

    /// <summary>
    /// Checks every value a committed outcome lent: a get's names the key it was read at, a scan's
    /// rows the row's key (counters, keys divisible by 8 with 8-byte values, are skipped when
    /// asked); returns how many were checked.
    /// </summary>
    private static int Check(TransactionOutcome outcome, IReadOnlyList<Operation> operations, bool skipCounters = false)
    {
        Assert.Equal(TransactionStatus.Committed, outcome.Status);
        var results = outcome.Results;
        Assert.Equal(operations.Count, results.Count);
        var count = 0;
        for (var i = 0; i < results.Count; i++)
        {
            if (results[i].Value is { } value && !(skipCounters && value.Length == 8))
            {
                Assert.Equal(OperationKind.Get, operations[i].Kind);
                Assert.True(Decode(value, out var key, out _) && Key(key).AsSpan().SequenceEqual(operations[i].Key), $"get {Convert.ToHexString(operations[i].Key)}: {Describe(value)}");
                count++;
            }

            foreach (var row in results[i].Rows ?? [])
            {
                if (skipCounters && row.Value.Length == 8)
                {
                    continue;
                }

                Assert.True(Decode(row.Value, out var key, out _) && Key(key).AsSpan().SequenceEqual(row.Key), $"scan {i}, row {Convert.ToHexString(row.Key)}: {Describe(row.Value)}");
                count++;
            }
        }

        return count;
    }

    /// <summary>Values in three short length classes, so freed arrays are taken again by other keys.</summary>
    private static readonly SelfDescribingValues s_values = new(key => 64 + (key % 3 * 40));

    internal static byte[] Encode(int key, int version) => s_values.Encode(key, version);

    internal static bool Decode(ReadOnlySpan<byte> value, out int key, out int version) => s_values.Decode(value, out key, out version);

    private static string Describe(ReadOnlySpan<byte> value) => SelfDescribingValues.Describe(value);
}
