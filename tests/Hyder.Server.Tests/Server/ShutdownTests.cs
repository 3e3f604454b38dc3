using Hyder.Log.Embedded;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Xunit;

namespace Hyder.Server.Tests.Server;

/// <summary>What a server stopping tells the transactions still waiting for their outcome.</summary>
public sealed class ShutdownTests
{
    /// <summary>
    /// With group meld, a transaction at the first ordinal of a pair waits for its partner: its
    /// outcome depends on it (fate sharing). A server stopped then must answer Unknown. Its
    /// pipeline's drain melds that ordinal alone, and before the fix the transaction was told that
    /// lone meld's decision (Committed), a decision the log had not made.
    /// </summary>
    [Fact]
    public async Task ATransactionWaitingForItsGroupPartnerIsUnknownWhenTheServerStops()
    {
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        var options = TestCluster.Options("lonely", new ClusterSettings { GroupMeld = true, BlockSize = 512 });
        options.FillerAfter = TimeSpan.FromHours(1);
        var server = await TransactionServer.StartAsync(log, options);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        Task<TransactionOutcome>? lonely = null;
        for (var i = 0; lonely is null; i++)
        {
            var before = server.LastRead;
            var tx = server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(TestCluster.Key(i), [(byte)i])]).AsTask();
            while (server.LastRead == before)
            {
                await Task.Delay(1, timeout.Token);
            }

            if (server.LastRead % 2 == 0)
            {
                // The second of a pair: it and its partner are decided.
                Assert.Equal(TransactionStatus.Committed, (await tx.WaitAsync(timeout.Token)).Status);
                continue;
            }

            // The first of a pair, with no partner in the log (no filler for an hour).
            while (server.LastMelded < server.LastRead - 1)
            {
                await Task.Delay(1, timeout.Token);
            }

            Assert.False(tx.IsCompleted);
            lonely = tx;
        }

        await server.DisposeAsync();
        var outcome = await lonely.WaitAsync(timeout.Token);
        Assert.Equal(TransactionStatus.Unknown, outcome.Status);
        Assert.Contains("stopped before the outcome was known", outcome.Detail);
    }
}
