using Grpc.Core;
using Hyder.Tree.Commutative;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>The commutative operations through the client, HyderService and gRPC on loopback, over the fake engine.</summary>
public sealed class CommutativeClientTests : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync(configure: s => s with { MaxRetries = 3 });

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task OneShotAndInteractiveOperationsCarryEveryFieldToTheEngine()
    {
        var commit = await Client.ExecuteAsync(IsolationLevel.Serializable, [
            HyderOperation.Add(Of("n"), 40, min: 0, max: 100),
            HyderOperation.Max(Of("hi"), -3),
            HyderOperation.Min(Of("lo"), 9),
            HyderOperation.OPut(Of("o"), 5, Of("five")),
            HyderOperation.TopKInsert(Of("t"), 2, 1, Of("one")),
        ]);
        Assert.Equal(5, commit.Results.Count);
        Assert.All(commit.Results, r => Assert.True(r.Found));

        await Client.ReadWriteAsync(async tx =>
        {
            await tx.AddAsync(Of("n"), 2, max: 42);
            await tx.MaxAsync(Of("hi"), 7);
            await tx.MinAsync(Of("lo"), -9);
            await tx.OPutAsync(Of("o"), 4, Of("four"));
            await tx.TopKInsertAsync(Of("t"), 2, 3, Of("three"));
            await tx.TopKInsertAsync(Of("t"), 2, 2, Of("two"));
        });

        Assert.Equal(42, Integer("n"));
        Assert.Equal(7, Integer("hi"));
        Assert.Equal(-9, Integer("lo"));
        Assert.True(OperationFold.TryOrdered(_server.Engine.Peek(Of("o")), out var order, out var rest));
        Assert.Equal((5L, "five"), (order, Text(rest.ToArray())));
        Assert.Equal(["three", "two"], OperationFold.TryTopK(_server.Engine.Peek(Of("t")))!.Select(e => Text(e.Value)));
    }

    [Theory]
    [InlineData("empty bounds", "operations[1]: an ADD's bounds [5, 1] are empty")]
    [InlineData("k zero", "operations[1].k is 0; a TOP_K_INSERT's k must be 1 to 1024")]
    [InlineData("k too large", "operations[1].k is 1025")]
    [InlineData("empty key", "operations[1].key is empty")]
    [InlineData("value too long", "operations[1].value is 70000 bytes")]
    public async Task MalformedCommutativeOperationsAreInvalidArgumentNamingTheField(string what, string reason)
    {
        var bad = what switch
        {
            "empty bounds" => HyderOperation.Add(Of("n"), 1, min: 5, max: 1),
            "k zero" => HyderOperation.TopKInsert(Of("t"), 0, 1, Of("v")),
            "k too large" => HyderOperation.TopKInsert(Of("t"), 1025, 1, Of("v")),
            "empty key" => HyderOperation.Max([], 1),
            _ => HyderOperation.OPut(Of("o"), 1, new byte[70000]),
        };

        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("side"), Of("1")), bad]));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains(reason, e.Message, StringComparison.Ordinal);
        Assert.Null(_server.Engine.Peek(Of("side")));
        Assert.Equal(0, _server.Engine.Committed);
    }

    [Theory]
    [InlineData(Hyder.Tree.Meld.AbortCause.BoundViolated)]
    [InlineData(Hyder.Tree.Meld.AbortCause.TypeMismatch)]
    public async Task AbortsTheDataCausesAreTypedAndNotRetried(Hyder.Tree.Meld.AbortCause cause)
    {
        _server.Engine.AbortNext(100, cause);
        var runs = 0;
        var e = await Assert.ThrowsAnyAsync<TransactionAbortedException>(() => Client.ReadWriteAsync(async tx =>
        {
            runs++;
            await tx.AddAsync(Of("stock"), -1, min: 0);
        }));

        Assert.Equal(1, runs);
        Assert.False(e.IsRetryable);
        Assert.Equal((AbortCause)(int)cause, e.Cause);
        Assert.IsType(cause == Hyder.Tree.Meld.AbortCause.BoundViolated ? typeof(BoundViolatedException) : typeof(TypeMismatchException), e);

        // One-shot transactions surface the same types.
        var oneShot = await Assert.ThrowsAnyAsync<TransactionAbortedException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Add(Of("stock"), -1, min: 0)]));
        Assert.IsType(e.GetType(), oneShot);
    }

    [Fact]
    public async Task ConflictsAreStillRetried()
    {
        _server.Engine.AbortNext(2, Hyder.Tree.Meld.AbortCause.WriteWrite);
        var runs = 0;
        await Client.ReadWriteAsync(async tx =>
        {
            runs++;
            await tx.AddAsync(Of("c"), 1);
        });

        Assert.Equal(3, runs);
        Assert.Equal(1, Integer("c"));
    }

    private long Integer(string key)
    {
        Assert.True(OperationFold.TryInteger(_server.Engine.Peek(Of(key)), out var n));
        return n;
    }
}
