using Hyder.Log.Embedded;
using Hyder.Log.Storage;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Log.Tests;

[CollectionDefinition(nameof(AppendAllocationTests), DisableParallelization = true)]
public sealed class AppendAllocationCollection;

/// <summary>
/// The bytes an append costs the process: a server's commit appends one block, with dozens in
/// flight that group commit completes together (docs/benchmarks/server.md, "The executor's
/// bytes"). Runs alone: it counts every thread's allocations.
/// </summary>
[Collection(nameof(AppendAllocationTests))]
[Trait("Category", "ReleaseOnly")]
public sealed class AppendAllocationTests(ITestOutputHelper output)
{
    private const int Appenders = 64;

    /// <summary>
    /// An append that meets no failure allocates nothing of its own: before the common path was a
    /// pooled operation, its async state machine box made it about 350 B per append here. The
    /// bound leaves room for timers and the thread pool, not for a box per append.
    /// </summary>
    [Fact]
    public async Task AnAppendAllocatesAlmostNothingWithManyInFlightUnderGroupCommit()
    {
        using var directory = new TempDirectory();
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions
        {
            DataDirectory = directory.Path,
            Fsync = FsyncPolicy.GroupCommit,
        });
        var block = new byte[512];
        await AppendAsync(log, block, 20_000);
        var before = GC.GetTotalAllocatedBytes(precise: true);
        var appended = await AppendAsync(log, block, 20_000);
        var perAppend = (double)(GC.GetTotalAllocatedBytes(precise: true) - before) / appended;
        output.WriteLine($"{appended} appends by {Appenders} concurrent appenders: {perAppend:F1} B allocated per append");
        Assert.True(perAppend < 100, $"{perAppend:F1} B allocated per append");
    }

    private static async Task<int> AppendAsync(EmbeddedLog log, byte[] block, int appends)
    {
        var next = 0;
        async Task AppenderAsync()
        {
            while (Interlocked.Increment(ref next) <= appends)
            {
                await log.AppendAsync(block).ConfigureAwait(false);

                // As a server's executor: the append completes on the log's group-commit thread,
                // the next one starts on another.
                await Task.Yield();
            }
        }

        var appenders = new Task[Appenders];
        for (var i = 0; i < appenders.Length; i++)
        {
            appenders[i] = Task.Run(AppenderAsync);
        }

        await Task.WhenAll(appenders);
        return appends;
    }
}
