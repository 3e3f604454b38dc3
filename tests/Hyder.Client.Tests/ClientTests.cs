using Grpc.Core;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>Every client method against HyderService over the fake engine, through gRPC on loopback.</summary>
public sealed class ClientTests : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task OneShotTransactionWritesAndReturnsOneResultPerOperation()
    {
        var commit = await Client.ExecuteAsync(IsolationLevel.Serializable, [
            HyderOperation.Put(Of("a"), Of("1")),
            HyderOperation.Put(Of("b"), Of("2")),
            HyderOperation.Get(Of("a")),
            HyderOperation.Get(Of("zz")),
            HyderOperation.Scan(Of("a"), Of("c")),
            HyderOperation.Delete(Of("b")),
        ]);

        Assert.True(commit.Ordinal > 0);
        Assert.Equal(6, commit.Results.Count);
        Assert.Equal("1", Text(commit.Results[2].Value));
        Assert.False(commit.Results[3].Found);
        Assert.Null(commit.Results[3].Value);
        Assert.Equal(["a", "b"], commit.Results[4].Rows.Select(r => Text(r.Key)));
        Assert.True(commit.Results[5].Found);
        Assert.Equal("1", Text(_server.Engine.Peek(Of("a"))));
        Assert.Null(_server.Engine.Peek(Of("b")));
    }

    [Fact]
    public async Task ReadOnlyOneShotTransactionCommitsWithoutAnOrdinal()
    {
        var commit = await Client.ExecuteAsync(IsolationLevel.SnapshotIsolation, [HyderOperation.Get(Of("nothing"))]);
        Assert.Equal(0, commit.Ordinal);
        Assert.False(commit.Results[0].Found);
    }

    [Fact]
    public async Task SnapshotReadReturnsValuesInKeyOrderWithNullForAbsentKeys()
    {
        await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("k1"), Of("v1")), HyderOperation.Put(Of("k3"), Of("v3"))]);
        var values = await Client.ReadAsync([Of("k3"), Of("k2"), Of("k1")]);
        Assert.Equal(["v3", "<absent>", "v1"], values.Select(Text));
    }

    [Fact]
    public async Task StreamedScanCrossesBatchesAndHonoursBoundsAndLimit()
    {
        for (var chunk = 0; chunk < 2; chunk++)
        {
            await Client.ExecuteAsync(IsolationLevel.Serializable, Enumerable.Range(chunk * 60, 60).Select(i => HyderOperation.Put(Of($"row{i:D4}"), Of(new string('x', i)))));
        }

        var all = await Client.ScanAsync(null, null).ToListAsync();
        Assert.Equal(120, all.Count);
        Assert.Equal(all.Select(r => Text(r.Key)).Order(StringComparer.Ordinal), all.Select(r => Text(r.Key)));

        var bounded = await Client.ScanAsync(Of("row0010"), Of("row0020")).ToListAsync();
        Assert.Equal(Enumerable.Range(10, 10).Select(i => $"row{i:D4}"), bounded.Select(r => Text(r.Key)));
        Assert.Equal(new string('x', 15), Text(bounded[5].Value));

        var limited = await Client.ScanAsync(Of("row0100"), null, limit: 7).ToListAsync();
        Assert.Equal(Enumerable.Range(100, 7).Select(i => $"row{i:D4}"), limited.Select(r => Text(r.Key)));
    }

    [Fact]
    public async Task StreamedScanLongerThanOneBatchArrivesWhole()
    {
        // 600 rows: more than the server's default batch of 256, so at least three messages.
        for (var chunk = 0; chunk < 10; chunk++)
        {
            await Client.ExecuteAsync(IsolationLevel.ReadCommitted, Enumerable.Range(chunk * 60, 60).Select(i => HyderOperation.Put(Of($"s{i:D5}"), Of("v"))));
        }

        var rows = await Client.ScanAsync(Of("s"), Of("t")).ToListAsync();
        Assert.Equal(Enumerable.Range(0, 600).Select(i => $"s{i:D5}"), rows.Select(r => Text(r.Key)));
    }

    [Fact]
    public async Task InteractiveTransactionSeesItsOwnWritesAndCommits()
    {
        await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("x1"), Of("old"))]);
        await using (var tx = await Client.BeginAsync(IsolationLevel.Serializable))
        {
            Assert.True(tx.IsActive);
            Assert.Equal("old", Text(await tx.GetAsync(Of("x1"))));
            await tx.PutAsync(Of("x1"), Of("new"));
            await tx.PutAsync(Of("x2"), Of("two"));
            Assert.Equal("new", Text(await tx.GetAsync(Of("x1"))));
            Assert.Null(await tx.GetAsync(Of("x9")));
            Assert.Equal(["x1", "x2"], (await tx.ScanAsync(Of("x"), Of("y"))).Select(r => Text(r.Key)));
            Assert.False(await tx.DeleteAsync(Of("x9")));
            Assert.True(await tx.DeleteAsync(Of("x2")));
            Assert.Null(_server.Engine.Peek(Of("x2")));
            var commit = await tx.CommitAsync();
            Assert.True(commit.Ordinal > 0);
            Assert.False(tx.IsActive);
        }

        Assert.Equal("new", Text(_server.Engine.Peek(Of("x1"))));
        Assert.Null(_server.Engine.Peek(Of("x2")));
    }

    [Fact]
    public async Task DisposingAnUncommittedTransactionAbortsIt()
    {
        await using (var tx = await Client.BeginAsync())
        {
            await tx.PutAsync(Of("never"), Of("1"));
        }

        Assert.Null(_server.Engine.Peek(Of("never")));

        await using var explicitAbort = await Client.BeginAsync();
        await explicitAbort.PutAsync(Of("never"), Of("2"));
        await explicitAbort.AbortAsync();
        Assert.False(explicitAbort.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => explicitAbort.GetAsync(Of("never")));
        Assert.Null(_server.Engine.Peek(Of("never")));
    }

    [Fact]
    public async Task ManyInteractiveTransactionsInARowReuseTheConnection()
    {
        // Each transaction's stream ends on the server before the client half-closes. Few streams
        // per connection make Kestrel refuse new streams after 100 left-behind ones within 5 s
        // instead of 200 (Kestrel keeps refused streams 5 s): a leak fails this test unless a
        // transaction takes over 50 ms.
        await using var server = await TestServer.StartAsync(configureServer: o => o.ConfigureKestrel = k => k.Limits.Http2.MaxStreamsPerConnection = 10);
        var key = Of("in-a-row");
        string? lastCommitted = null;
        for (var i = 0; i < 300; i++)
        {
            try
            {
                await using var tx = await server.Client.BeginAsync(IsolationLevel.Serializable);
                Assert.Equal(lastCommitted ?? "<absent>", Text(await tx.GetAsync(key)));
                await tx.PutAsync(key, Of($"v{i}"));
                switch (i % 3)
                {
                    case 0:
                        await tx.CommitAsync();
                        lastCommitted = $"v{i}";
                        break;
                    case 1:
                        await tx.AbortAsync();
                        break;
                    default:
                        Assert.True(tx.IsActive); // disposed while active
                        break;
                }
            }
            catch (Exception e)
            {
                throw new InvalidOperationException($"Transaction {i} failed after {i} in a row succeeded.", e);
            }
        }

        Assert.Equal("v297", lastCommitted);
        await using var reader = await server.Client.BeginAsync(IsolationLevel.Serializable);
        Assert.Equal(lastCommitted, Text(await reader.GetAsync(key)));
        Assert.Equal(lastCommitted, Text(server.Engine.Peek(key)));
    }

    [Fact]
    public async Task ConcurrentTransactionsConflictAndTheLoserGetsATypedAbort()
    {
        await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("hot"), Of("0"))]);
        await using var first = await Client.BeginAsync(IsolationLevel.Serializable);
        await using var second = await Client.BeginAsync(IsolationLevel.Serializable);
        await first.GetAsync(Of("hot"));
        await second.GetAsync(Of("hot"));
        await first.PutAsync(Of("hot"), Of("first"));
        await second.PutAsync(Of("hot"), Of("second"));
        await first.CommitAsync();
        var e = await Assert.ThrowsAsync<TransactionAbortedException>(() => second.CommitAsync());
        Assert.Contains(e.Cause, new[] { AbortCause.WriteWrite, AbortCause.ReadWrite });
        Assert.Equal(StatusCode.Aborted, e.StatusCode);
        Assert.True(e.Ordinal > 0);
        Assert.False(string.IsNullOrEmpty(e.Detail));
        Assert.Equal("first", Text(_server.Engine.Peek(Of("hot"))));
    }

    [Fact]
    public async Task InjectedAbortOfAOneShotTransactionCarriesCauseAndDetail()
    {
        _server.Engine.AbortNext(1, Hyder.Tree.Meld.AbortCause.Phantom);
        var e = await Assert.ThrowsAsync<TransactionAbortedException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("p"), Of("1"))]));
        Assert.Equal(AbortCause.Phantom, e.Cause);
        Assert.Equal("injected by the test", e.Detail);
        Assert.Null(_server.Engine.Peek(Of("p")));
    }

    [Fact]
    public async Task StatusStateHashAndCheckpoint()
    {
        var before = await Client.GetStateHashAsync();
        var commit = await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("h"), Of("1"))]);
        var after = await Client.GetStateHashAsync(atLeastOrdinal: commit.Ordinal);
        Assert.Equal(commit.Ordinal, after.Ordinal);
        Assert.Equal(commit.Ordinal, after.Sequence);
        Assert.NotEqual(before.Hash, after.Hash);

        // The server runs in this process: a forced gen-2 collection must show in its count.
        var gen2 = GC.CollectionCount(2);
        GC.Collect(2);
        var status = await Client.GetStatusAsync();
        Assert.Equal("fake-1", status.ServerId);
        Assert.True(status.Gen2Collections > gen2, $"gen-2 collections {status.Gen2Collections}, {gen2} before a forced one");
        Assert.True(status.ManagedHeapBytes > 0);
        Assert.True(status.WorkingSetBytes >= status.ManagedHeapBytes / 2, $"working set {status.WorkingSetBytes}, heap {status.ManagedHeapBytes}");
        Assert.Equal(commit.Ordinal, status.LastMelded);
        Assert.Equal(commit.Ordinal, status.CommittedSequence);
        Assert.Equal(1, status.Committed);
        Assert.Equal("in-process", status.Pipeline);
        Assert.Equal(["fake-2", "fake-3"], status.Peers);

        Assert.Equal(commit.Ordinal, await Client.CheckpointAsync());
        Assert.Equal(1, _server.Engine.Checkpoints);
    }
}
