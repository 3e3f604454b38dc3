using System.Buffers.Binary;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>The retry helper: injected aborts, giving up, and a conflicting transfer workload that must keep its total.</summary>
public sealed class RetryTests(Xunit.Abstractions.ITestOutputHelper output) : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync(configure: s => s with { MaxRetries = 3 });

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task RetriesAbortedRunsUntilOneCommits()
    {
        _server.Engine.AbortNext(3, Hyder.Tree.Meld.AbortCause.WriteWrite);
        var runs = 0;
        var result = await Client.ReadWriteAsync(async tx =>
        {
            runs++;
            await tx.PutAsync(Of("retried"), Of($"run {runs}"));
            return runs;
        });

        Assert.Equal(4, result);
        Assert.Equal("run 4", Text(_server.Engine.Peek(Of("retried"))));
    }

    [Fact]
    public async Task GivesUpAfterMaxRetriesWithTheLastAbort()
    {
        _server.Engine.AbortNext(100, Hyder.Tree.Meld.AbortCause.ReadWrite);
        var runs = 0;
        var e = await Assert.ThrowsAsync<TransactionAbortedException>(() => Client.ReadWriteAsync(async tx =>
        {
            runs++;
            await tx.PutAsync(Of("never"), Of("1"));
        }));

        Assert.Equal(4, runs);
        Assert.Equal(AbortCause.ReadWrite, e.Cause);
        Assert.Null(_server.Engine.Peek(Of("never")));
    }

    [Fact]
    public async Task BodyFailureAbortsWithoutRetry()
    {
        var runs = 0;
        await Assert.ThrowsAsync<FormatException>(() => Client.ReadWriteAsync(async tx =>
        {
            runs++;
            await tx.PutAsync(Of("half"), Of("1"));
            throw new FormatException("the body failed");
        }));

        Assert.Equal(1, runs);
        Assert.Null(_server.Engine.Peek(Of("half")));
    }

    [Fact]
    public void BackoffIsCappedAndJittered()
    {
        var settings = Client.Settings with { RetryDelay = TimeSpan.FromMilliseconds(10), MaxRetryDelay = TimeSpan.FromMilliseconds(100) };
        using var client = new ClientScope(settings);
        Assert.InRange(client.Value.Backoff(0).TotalMilliseconds, 5, 10);
        Assert.InRange(client.Value.Backoff(2).TotalMilliseconds, 20, 40);
        Assert.InRange(client.Value.Backoff(20).TotalMilliseconds, 50, 100);
    }

    [Fact]
    public async Task ConcurrentTransfersBetweenAccountsKeepTheTotal()
    {
        const int accounts = 5;
        const int workers = 4;
        const int transfersEach = 15;
        const long initial = 1000;
        await Client.ExecuteAsync(IsolationLevel.Serializable, Enumerable.Range(0, accounts).Select(i => HyderOperation.Put(Account(i), Amount(initial))));

        // Many retries: the workers collide on five accounts all the time.
        await using var server = await TestServer.StartAsync(_server.Engine, s => s with { MaxRetries = 200 });
        var client = server.Client;
        var start = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var tasks = Enumerable.Range(0, workers).Select(w => Task.Run(async () =>
        {
            await start.Task;
            var random = new Random(w);
            for (var t = 0; t < transfersEach; t++)
            {
                var from = random.Next(accounts);
                var to = (from + 1 + random.Next(accounts - 1)) % accounts;
                var amount = random.Next(1, 50);
                await client.ReadWriteAsync(async tx =>
                {
                    var a = Amount(await tx.GetAsync(Account(from)));
                    var b = Amount(await tx.GetAsync(Account(to)));
                    await tx.PutAsync(Account(from), Amount(a - amount));
                    await tx.PutAsync(Account(to), Amount(b + amount));
                });
            }
        })).ToArray();
        start.SetResult();
        await Task.WhenAll(tasks);

        var balances = await Client.ReadAsync(Enumerable.Range(0, accounts).Select(Account));
        Assert.Equal(accounts * initial, balances.Sum(Amount));
        Assert.Equal(1 + (workers * transfersEach), _server.Engine.Committed);
        output.WriteLine($"{_server.Engine.Aborted} aborted runs retried");
    }

    private static byte[] Account(int i) => Of($"account/{i}");

    private static byte[] Amount(long amount)
    {
        var b = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(b, amount);
        return b;
    }

    private static long Amount(byte[]? b) => BinaryPrimitives.ReadInt64BigEndian(b ?? throw new InvalidOperationException("account missing"));

    private sealed class ClientScope(HyderClientSettings settings) : IDisposable
    {
        public HyderClient Value { get; } = new(settings);

        public void Dispose() => Value.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }
}
