using Hyder.Server.Follower;
using Xunit;

namespace Hyder.Server.Tests;

/// <summary>The log reader's own bookkeeping: the duplicate-copy rule's memory and the part stash.</summary>
public sealed class ReaderStateTests
{
    [Fact]
    public void ASecondCopyNamesTheFirstWhileItIsInTheWindow()
    {
        var copies = new FirstCopies(window: 16);
        Assert.Null(copies.FirstCopyOf(nonce: 7, ordinal: 10));
        Assert.Null(copies.FirstCopyOf(nonce: 8, ordinal: 11));
        Assert.Equal(10, copies.FirstCopyOf(nonce: 7, ordinal: 20));

        // A third copy still names the first, not the second.
        Assert.Equal(10, copies.FirstCopyOf(nonce: 7, ordinal: 27));
    }

    [Fact]
    public void ANonceIsForgottenOnceItsFirstCopyIsMoreThanTheWindowPlusOneBehind()
    {
        const int Window = 16;
        var copies = new FirstCopies(Window);
        Assert.Null(copies.FirstCopyOf(nonce: 7, ordinal: 10));

        // Ordinal 10 is kept while 10 ≥ v − W − 1, that is up to v = 27.
        Assert.Equal(10, copies.FirstCopyOf(nonce: 7, ordinal: 10 + Window + 1));
        var fresh = new FirstCopies(Window);
        Assert.Null(fresh.FirstCopyOf(nonce: 7, ordinal: 10));
        Assert.Null(fresh.FirstCopyOf(nonce: 9, ordinal: 10 + Window + 2));
        Assert.Null(fresh.FirstCopyOf(nonce: 7, ordinal: 10 + Window + 3));
        Assert.Equal(2, fresh.Count);
    }

    [Fact]
    public void TheMemoryStaysBoundedByTheWindow()
    {
        const int Window = 16;
        var copies = new FirstCopies(Window);
        for (var v = 1L; v <= 10_000; v++)
        {
            Assert.Null(copies.FirstCopyOf(nonce: v * 31, ordinal: v));
            Assert.InRange(copies.Count, 1, Window + 2);
        }
    }

    [Fact]
    public void APartIsTakenOnceAndTheOldestGoPastTheCapacity()
    {
        var stash = new PartStash();
        stash.Add(5, new byte[] { 1, 2 });
        Assert.True(stash.TryTake(5, out var part));
        Assert.Equal(new byte[] { 1, 2 }, part.ToArray());
        Assert.False(stash.TryTake(5, out _));

        for (var p = 0L; p < PartStash.Capacity + 10; p++)
        {
            stash.Add(p, new byte[] { (byte)p });
        }

        Assert.Equal(PartStash.Capacity, stash.Count);
        Assert.False(stash.TryTake(0, out _));
        Assert.True(stash.TryTake(PartStash.Capacity + 9, out _));
        stash.Forget(PartStash.Capacity + 8);
        Assert.False(stash.TryTake(PartStash.Capacity + 8, out _));
    }

    [Fact]
    public async Task AWakeReleasesAWaitingReaderAndIsNotKeptForALaterWait()
    {
        var wake = new TailWake();

        // Nobody waits: the wake is dropped, so the next wait runs to its time limit.
        wake.Wake();
        var started = System.Diagnostics.Stopwatch.StartNew();
        await wake.WaitAsync(30, CancellationToken.None);
        Assert.True(started.ElapsedMilliseconds >= 25, $"a wake-up given while nobody waited ended a later wait after {started.ElapsedMilliseconds} ms");

        // A waiter is released by a wake long before its time limit.
        var waiting = wake.WaitAsync(60_000, CancellationToken.None);
        while (!waiting.IsCompleted)
        {
            wake.Wake();
            await Task.Yield();
        }

        await waiting;
    }

    [Fact]
    public async Task ACancelledWaitThrowsAndTheReusedWaitStillWakes()
    {
        var wake = new TailWake();
        using var stop = new CancellationTokenSource();
        var waiting = wake.WaitAsync(60_000, stop.Token);
        await stop.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await waiting);

        // The same object serves the next waits, each released by a wake, none by a stale one.
        for (var i = 0; i < 3; i++)
        {
            var next = wake.WaitAsync(60_000, CancellationToken.None);
            while (!next.IsCompleted)
            {
                wake.Wake();
                await Task.Yield();
            }

            await next;
        }
    }
}
