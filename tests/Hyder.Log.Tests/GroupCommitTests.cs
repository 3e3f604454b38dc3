using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>Group commit's delay: a flush after a large one waits for the writers still running; a lone writer never waits.</summary>
public sealed class GroupCommitTests
{
    [Theory]
    [InlineData(0, 5, 100, 0, false)]
    [InlineData(200, 5, 4, 0, false)]
    [InlineData(200, 5, 5, 0, true)]
    [InlineData(200, 1, 1, 0, true)]
    [InlineData(200, 1, 0, 0, false)]
    [InlineData(200, 5, 100, int.MaxValue, false)]
    public void ADelayAppliesOnlyAfterAFlushOfAtLeastItsSiblingsWhileWorkIsQueued(int microseconds, int siblings, long lastBatch, int queuedWork, bool applies) =>
        Assert.Equal(applies, new GroupCommitDelay(TimeSpan.FromMicroseconds(microseconds), siblings, queuedWork).Applies(lastBatch));

    [Fact]
    public async Task AFlushAfterABatchOfSiblingsWaitsAndTakesTheWritesThatArriveMeanwhile()
    {
        using var entered = new SemaphoreSlim(0);
        using var gate = new ManualResetEventSlim(false);
        using var commit = new GroupCommit(
            () =>
            {
                entered.Release();
                gate.Wait();
            },
            "test-fsync",
            new GroupCommitDelay(TimeSpan.FromSeconds(1), Siblings: 3, QueuedWork: 0));

        // A first flush of one slot, held in its fsync while three more writers arrive.
        commit.Appended(1);
        var first = commit.WaitAsync(0).AsTask();
        Assert.True(await entered.WaitAsync(TimeSpan.FromSeconds(10)));
        commit.Appended(4);
        var batch = new[] { commit.WaitAsync(1).AsTask(), commit.WaitAsync(2).AsTask(), commit.WaitAsync(3).AsTask() };
        gate.Set();
        await first.WaitAsync(TimeSpan.FromSeconds(10));
        await Task.WhenAll(batch).WaitAsync(TimeSpan.FromSeconds(10));

        // The flush after a one-slot flush did not wait.
        Assert.Equal(2, commit.Flushes);
        Assert.Equal(0, commit.Delayed);

        // After a flush of three, the next one sleeps a second: a writer that arrives meanwhile
        // is covered by the same fsync.
        commit.Appended(5);
        var early = commit.WaitAsync(4).AsTask();
        commit.Appended(6);
        var late = commit.WaitAsync(5).AsTask();
        await Task.WhenAll(early, late).WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(3, commit.Flushes);
        Assert.Equal(1, commit.Delayed);
        Assert.Equal(6, commit.Durable);

        // That flush covered two slots, fewer than three: a lone writer next is not held back.
        commit.Appended(7);
        await commit.WaitAsync(6).AsTask().WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(4, commit.Flushes);
        Assert.Equal(1, commit.Delayed);
    }

    [Fact]
    public async Task ALoneWriterIsNeverDelayed()
    {
        using var dir = new TempDirectory();
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 512, DataDirectory = dir.Path, CommitDelay = TimeSpan.FromMilliseconds(50) });
        for (var a = 0; a < 20; a++)
        {
            Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, a, new byte[100])).Status);
        }

        var store = (FileSlotStore)typeof(LogUnit).GetField("_store", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.GetValue(unit)!;
        Assert.Equal(20, store.Flushes);
        Assert.Equal(0, store.DelayedFlushes);
    }

    [Fact]
    public void TheEmbeddedLogWaitsByDefaultOnUnixAndALogHostsUnitNever()
    {
        Assert.Equal(TimeSpan.Zero, new LogUnitOptions().CommitDelay);
        Assert.Equal(LogUnitOptions.EmbeddedCommitDelay, new Hyder.Log.Embedded.EmbeddedLogOptions().CommitDelay);
        Assert.Equal(OperatingSystem.IsWindows() ? TimeSpan.Zero : TimeSpan.FromMicroseconds(200), LogUnitOptions.EmbeddedCommitDelay);
    }

    [Theory]
    [InlineData(-1, 5)]
    [InlineData(100_001, 5)]
    [InlineData(200, 0)]
    public void OutOfRangeDelaysAndSiblingsAreRefused(int microseconds, int siblings) =>
        Assert.Throws<ArgumentOutOfRangeException>(() => new LogUnitOptions { CommitDelay = TimeSpan.FromMicroseconds(microseconds), CommitSiblings = siblings }.Validate());
}
