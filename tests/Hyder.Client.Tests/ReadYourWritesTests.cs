using Grpc.Core;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests;

/// <summary>
/// The client half of read your writes (docs/api.md): what the client learns from each answer goes
/// into its <see cref="HyderSession"/>, and every request that takes a snapshot carries it as
/// <c>min_ordinal</c> unless <see cref="HyderClientSettings.ReadYourWrites"/> is off.
/// </summary>
public sealed class ReadYourWritesTests
{
    [Fact]
    public async Task EveryRequestAfterACommitCarriesItsOrdinal()
    {
        await using var server = await TestServer.StartAsync();
        var client = server.Client;
        Assert.Equal(0, client.Session.Ordinal);

        // Nothing seen yet: the first request asks for nothing.
        await client.ReadAsync([Of("a")]);
        Assert.Empty(server.Engine.MinOrdinals);

        var commit = await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        Assert.True(commit.Ordinal > 0);
        Assert.Equal(commit.Ordinal, client.Session.Ordinal);

        var values = await client.ReadAsync([Of("a")]);
        Assert.Equal("1", Text(values[0]));
        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("a"))]);
        await foreach (var _ in client.ScanAsync(null, null))
        {
        }

        await using (var tx = await client.BeginAsync())
        {
            await tx.GetAsync(Of("a"));
        }

        Assert.Equal([commit.Ordinal, commit.Ordinal, commit.Ordinal, commit.Ordinal], server.Engine.MinOrdinals);
    }

    [Fact]
    public async Task AnInteractiveCommitRaisesTheSessionAndAnOlderOrdinalNeverLowersIt()
    {
        await using var server = await TestServer.StartAsync();
        var client = server.Client;
        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        var first = client.Session.Ordinal;

        CommitResult second;
        await using (var tx = await client.BeginAsync())
        {
            await tx.PutAsync(Of("b"), Of("2"));
            second = await tx.CommitAsync();
        }

        Assert.True(second.Ordinal > first);
        Assert.Equal(second.Ordinal, client.Session.Ordinal);
        client.Session.Observe(first);
        Assert.Equal(second.Ordinal, client.Session.Ordinal);
    }

    [Fact]
    public async Task WithReadYourWritesOffNothingIsSentButTheSessionStillKnowsTheCommit()
    {
        await using var server = await TestServer.StartAsync(configure: s => s with { ReadYourWrites = false });
        var client = server.Client;
        var commit = await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        await client.ReadAsync([Of("a")]);
        await using (var tx = await client.BeginAsync())
        {
            await tx.GetAsync(Of("a"));
        }

        Assert.Empty(server.Engine.MinOrdinals);
        Assert.Equal(commit.Ordinal, client.Session.Ordinal);
    }

    [Fact]
    public async Task ClientsSharingASessionCarryEachOthersCommits()
    {
        var session = new HyderSession();
        await using var one = await TestServer.StartAsync(configure: s => s with { Session = session });
        await using var two = await TestServer.StartAsync(configure: s => s with { Session = session });
        var commit = await one.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        Assert.Same(session, two.Client.Session);

        // The second fake has melded nothing of the first one's log: it refuses with UNAVAILABLE,
        // which a read retries until it gives up.
        var e = await Assert.ThrowsAsync<HyderException>(() => two.Client.ReadAsync([Of("a")]));
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        Assert.Contains($"not #{commit.Ordinal}", e.Message, StringComparison.Ordinal);
        Assert.All(two.Engine.MinOrdinals, m => Assert.Equal(commit.Ordinal, m));
        Assert.NotEmpty(two.Engine.MinOrdinals);
    }

    [Fact]
    public async Task ANegativeMinOrdinalIsRefusedAsAnInvalidArgumentNamingTheField()
    {
        await using var server = await TestServer.StartAsync();
        var e = await Assert.ThrowsAsync<RpcException>(async () => await server.Client.Stub.ReadAsync(new V1.ReadRequest { Keys = { Google.Protobuf.ByteString.CopyFromUtf8("a") }, MinOrdinal = -1 }));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("min_ordinal", e.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public void TheConnectionStringTurnsReadYourWritesOffAndRefusesAnythingButABoolean()
    {
        Assert.True(HyderClientSettings.Parse("Endpoint=http://h:1").ReadYourWrites);
        Assert.False(HyderClientSettings.Parse("Endpoint=http://h:1;ReadYourWrites=false").ReadYourWrites);
        Assert.True(HyderClientSettings.Parse("Endpoint=http://h:1;readyourwrites=True").ReadYourWrites);
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse("Endpoint=http://h:1;ReadYourWrites=maybe"));
    }
}
