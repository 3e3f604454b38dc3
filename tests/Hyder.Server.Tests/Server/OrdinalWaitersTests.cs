using Hyder.Server.Core;
using Hyder.Server.Engine;
using Xunit;

namespace Hyder.Server.Tests.Server;

/// <summary>The waiter list behind "at least ordinal N" (docs/api.md, "Read your writes"), without a server.</summary>
public sealed class OrdinalWaitersTests
{
    [Fact]
    public void AWaitForAnOrdinalAlreadyMeldedCompletesAtOnceWithoutAllocating()
    {
        var waiters = new OrdinalWaiters(10, asynchronousContinuations: true);
        Assert.True(CompletedAtOnce(waiters.WaitAsync(10, CancellationToken.None)));
        Assert.True(CompletedAtOnce(waiters.WaitAsync(3, CancellationToken.None)));

        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 1000; i++)
        {
            Assert.True(CompletedAtOnce(waiters.WaitAsync(10, CancellationToken.None)));
        }

        Assert.Equal(before, GC.GetAllocatedBytesForCurrentThread());
        Assert.Equal(0, waiters.Waiting);
    }

    /// <summary>Whether a wait completed synchronously; consumes it.</summary>
    internal static bool CompletedAtOnce(ValueTask wait)
    {
        var done = wait.IsCompletedSuccessfully;
        wait.GetAwaiter().GetResult();
        return done;
    }

    [Fact]
    public async Task AWaitCompletesWhenItsOrdinalIsMeldedAndNotBefore()
    {
        var waiters = new OrdinalWaiters(10, asynchronousContinuations: true);
        var twelve = waiters.WaitAsync(12, CancellationToken.None).AsTask();
        var fourteen = waiters.WaitAsync(14, CancellationToken.None).AsTask();
        Assert.Equal(2, waiters.Waiting);

        waiters.Advance(11);
        Assert.False(twelve.IsCompleted);

        waiters.Advance(12);
        await twelve.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.False(fourteen.IsCompleted);
        Assert.Equal(1, waiters.Waiting);

        // An ordinal past the one waited for completes it too (final meld may announce only the later one).
        waiters.Advance(20);
        await fourteen.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(0, waiters.Waiting);
    }

    [Fact]
    public async Task ACancelledWaitEndsWithCancellationAndLeavesTheList()
    {
        var waiters = new OrdinalWaiters(0, asynchronousContinuations: true);
        using var cts = new CancellationTokenSource();
        var far = waiters.WaitAsync(long.MaxValue, cts.Token).AsTask();
        var near = waiters.WaitAsync(5, CancellationToken.None).AsTask();
        Assert.Equal(2, waiters.Waiting);

        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => far.WaitAsync(TimeSpan.FromSeconds(10)));
        Assert.Equal(1, waiters.Waiting);

        // The cancelled waiter is gone; the other one still completes.
        waiters.Advance(5);
        await near.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(0, waiters.Waiting);
    }

    [Fact]
    public async Task AWaitWithAnAlreadyCancelledTokenForAnUnmeldedOrdinalIsCancelled()
    {
        var waiters = new OrdinalWaiters(0, asynchronousContinuations: true);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await waiters.WaitAsync(1, new CancellationToken(canceled: true)));
        Assert.Equal(0, waiters.Waiting);
    }

    [Fact]
    public async Task StoppingFailsEveryWaitNowAndLater()
    {
        var waiters = new OrdinalWaiters(0, asynchronousContinuations: true);
        var waiting = waiters.WaitAsync(7, CancellationToken.None).AsTask();
        waiters.Stop(new EngineException(EngineErrorCode.Unavailable, "stopping"));

        var e = await Assert.ThrowsAsync<EngineException>(() => waiting.WaitAsync(TimeSpan.FromSeconds(10)));
        Assert.Equal(EngineErrorCode.Unavailable, e.Code);
        await Assert.ThrowsAsync<EngineException>(async () => await waiters.WaitAsync(8, CancellationToken.None));
        Assert.Equal(0, waiters.Waiting);
    }

    /// <summary>
    /// Waiters arrive on several threads while another thread announces ordinals one by one: every
    /// wait completes (none is missed between its check and the announcement), and none before its
    /// ordinal was announced.
    /// </summary>
    [Fact]
    public async Task NoWaitIsMissedWhileOrdinalsAreAnnouncedConcurrently()
    {
        const int Ordinals = 20_000;
        var waiters = new OrdinalWaiters(0, asynchronousContinuations: true);
        var early = 0;
        using var start = new Barrier(5);
        var announcer = Task.Run(() =>
        {
            start.SignalAndWait();
            for (var v = 1L; v <= Ordinals; v++)
            {
                waiters.Advance(v);
            }
        });
        var callers = Enumerable.Range(0, 4).Select(c => Task.Run(async () =>
        {
            start.SignalAndWait();
            var random = new Random(c);
            for (var i = 0; i < 2_000; i++)
            {
                var target = random.NextInt64(1, Ordinals + 1);
                await waiters.WaitAsync(target, CancellationToken.None);
                if (waiters.Reached < target)
                {
                    Interlocked.Increment(ref early);
                }
            }
        })).ToArray();

        await Task.WhenAll(callers.Append(announcer)).WaitAsync(TimeSpan.FromSeconds(60));
        Assert.Equal(0, early);
        Assert.Equal(0, waiters.Waiting);
    }
}
