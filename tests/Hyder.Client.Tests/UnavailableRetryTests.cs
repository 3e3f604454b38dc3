using Grpc.Core;
using Hyder.Server.Engine;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>
/// UNAVAILABLE is retried only where running a call twice cannot change anything. The fake engine
/// fails exactly one call: a retried call succeeds, a write that was not retried leaves nothing.
/// </summary>
public sealed class UnavailableRetryTests : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    private FakeEngine Engine => _server.Engine;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync(configure: s => s with { MaxRetries = 3 });

    public async Task DisposeAsync() => await _server.DisposeAsync();

    private void FailOnce() => Engine.FailNext(new EngineException(EngineErrorCode.Unavailable, "the log is unreachable"));

    [Fact]
    public async Task ReadsStatusAndStateHashAreRetried()
    {
        await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("r"), Of("v"))]);
        FailOnce();
        Assert.Equal("v", Text((await Client.ReadAsync([Of("r")]))[0]));
        FailOnce();
        Assert.Equal("fake-1", (await Client.GetStatusAsync()).ServerId);
        FailOnce();
        await Client.GetStateHashAsync();
        FailOnce();
        var result = await Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("r")), HyderOperation.Scan(null, null)]);
        Assert.Equal("v", Text(result.Results[0].Value));
        FailOnce();
        var rows = new List<KeyValuePair<byte[], byte[]>>();
        await foreach (var row in Client.ScanAsync(null, null))
        {
            rows.Add(row);
        }

        Assert.Single(rows);
    }

    [Fact]
    public async Task TheBeginOfAnInteractiveTransactionIsRetriedButNotItsCommit()
    {
        FailOnce();
        await using (var tx = await Client.BeginAsync())
        {
            await tx.PutAsync(Of("t"), Of("1"));
            await tx.CommitAsync();
        }

        Assert.Equal("1", Text(Engine.Peek(Of("t"))));
    }

    [Fact]
    public async Task AOneShotTransactionThatWritesIsNeverRetried()
    {
        FailOnce();
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("w")), HyderOperation.Put(Of("w"), Of("1"))]));
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);

        // A retry would have found the engine healthy and written the key.
        Assert.Null(Engine.Peek(Of("w")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task RetriesStopAtMaxRetries()
    {
        await using var server = await TestServer.StartAsync(configure: s => s with { MaxRetries = 0 });
        server.Engine.FailNext(new EngineException(EngineErrorCode.Unavailable, "down"));
        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.GetStatusAsync());
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
    }
}
