using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>The pooled answer of a write that waits for its fsync (<see cref="DurableReply"/>).</summary>
public sealed class DurableReplyTests
{
    [Fact]
    public async Task AReplyAnswersOnceItsSlotIsDurableAndItsReusedSourceCarriesTheNewReply()
    {
        var first = new TaskCompletionSource();
        var answer = DurableReply.When(new ValueTask(first.Task), new UnitReply(LogStatus.Ok, 11));
        Assert.False(answer.IsCompleted);
        first.SetResult();
        Assert.Equal(new UnitReply(LogStatus.Ok, 11), await answer);

        // The source went back to the pool reset: whichever source the next wait gets answers the new reply.
        for (var i = 0; i < 3; i++)
        {
            var next = new TaskCompletionSource();
            var again = DurableReply.When(new ValueTask(next.Task), new UnitReply(LogStatus.Ok, 20 + i));
            Assert.False(again.IsCompleted);
            next.SetResult();
            Assert.Equal(new UnitReply(LogStatus.Ok, 20 + i), await again);
        }
    }

    [Fact]
    public async Task AFailedFsyncFailsTheWriteAndAnAlreadyDurableSlotAnswersAtOnce()
    {
        var failing = new TaskCompletionSource();
        var answer = DurableReply.When(new ValueTask(failing.Task), UnitReply.Ok);
        failing.SetException(new IOException("fsync failed"));
        await Assert.ThrowsAsync<IOException>(async () => await answer);

        var durable = DurableReply.When(default, new UnitReply(LogStatus.Ok, 5));
        Assert.True(durable.IsCompletedSuccessfully);
        Assert.Equal(5, (await durable).Value);
    }

    [Fact]
    public async Task TakingAReplysResultTwiceThrowsAndLeavesTheSourcesNextOwnerAlone()
    {
        var done = new TaskCompletionSource();
        var answer = DurableReply.When(new ValueTask(done.Task), new UnitReply(LogStatus.Ok, 1));
        done.SetResult();
        Assert.Equal(1, (await answer).Value);

        // The source is back in the pool, possibly already another write's: a second read of the
        // same task must throw, not give the source back a second time.
        var next = new TaskCompletionSource();
        var other = DurableReply.When(new ValueTask(next.Task), new UnitReply(LogStatus.Ok, 2));
        await Assert.ThrowsAsync<InvalidOperationException>(async () => await answer);
        next.SetResult();
        Assert.Equal(2, (await other).Value);
    }

    [Fact]
    public async Task ConcurrentWritesUnderGroupCommitAllSucceedAndReuseTheirReplies()
    {
        using var directory = new TempDirectory();
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 512, DataDirectory = directory.Path, Fsync = FsyncPolicy.GroupCommit });
        var block = new byte[300];
        long address = 0;
        async Task RoundAsync()
        {
            var writes = new Task<UnitReply>[64];
            for (var i = 0; i < writes.Length; i++)
            {
                var a = address++;
                writes[i] = Task.Run(async () => await unit.WriteAsync(1, a, block));
            }

            foreach (var reply in await Task.WhenAll(writes))
            {
                Assert.Equal(LogStatus.Ok, reply.Status);
            }
        }

        await RoundAsync();
        var created = DurableReply.Created;
        for (var round = 0; round < 10; round++)
        {
            await RoundAsync();
        }

        // Without the pool each write waiting for an fsync would make one (640 here); other tests
        // running at the same time may take a few from the pool.
        Assert.True(DurableReply.Created - created < 64, $"{DurableReply.Created - created} replies created for 640 writes after the first round");
        var buffer = new byte[512];
        for (long a = 0; a < address; a++)
        {
            Assert.Equal(LogStatus.Ok, (await unit.ReadAsync(1, a, buffer)).Status);
        }
    }
}
