using Hyder.Soak.Cluster;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>
/// The kill loop's start retries (a server restarted behind the trim exits and asks to be started
/// again), with a stand-in process: a shell that fails its second start and is otherwise "ready".
/// </summary>
public sealed class KillLoopRetryTests
{
    /// <summary>A process that counts its starts in a file, exits 1 on the second, and otherwise prints a unit's ready line and sleeps (ending by itself).</summary>
    private static ClusterProcess FailsSecondStart(TempDirectory temp)
    {
        var counter = Path.Combine(temp.Path, "starts");
        var script = $"n=$(cat '{counter}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{counter}'; " +
            "if [ $n -eq 2 ]; then echo 'behind the trim: restart it' >&2; exit 1; fi; echo 'Log host ready on port 1'; exec sleep 60";
        return new ClusterProcess("unit-9", ProcessRole.Unit, "127.0.0.1", 1, ["sh", "-c", script], Path.Combine(temp.Path, "unit-9.log"));
    }

    private static KillLoopOptions OneKill(int startAttempts) => new()
    {
        Seed = 1,
        MaxKills = 1,
        MinInterval = TimeSpan.Zero,
        MaxInterval = TimeSpan.Zero,
        MinDowntime = TimeSpan.Zero,
        MaxDowntime = TimeSpan.Zero,
        StartAttempts = startAttempts,
    };

    [Fact]
    public async Task AVictimWhoseRestartFailsIsStartedAgainAndTheRecordCountsTheStarts()
    {
        using var temp = new TempDirectory("hyder-killretry-");
        await using var victim = FailsSecondStart(temp);
        await victim.StartAsync();
        var lines = new List<string>();
        var loop = new KillLoop([victim], OneKill(startAttempts: 2), lines.Add);

        await loop.RunAsync(CancellationToken.None);

        var kill = Assert.Single(loop.Kills);
        Assert.Equal(2, kill.Starts);
        Assert.True(victim.IsRunning);
        Assert.Equal(3, victim.Starts);
        Assert.Contains(lines, l => l.Contains("did not start (attempt 1 of 2)", StringComparison.Ordinal));
    }

    [Fact]
    public async Task WithOneAttemptAFailedRestartEndsTheLoop()
    {
        using var temp = new TempDirectory("hyder-killretry-");
        await using var victim = FailsSecondStart(temp);
        await victim.StartAsync();
        var loop = new KillLoop([victim], OneKill(startAttempts: 1));

        var e = await Assert.ThrowsAsync<InvalidOperationException>(() => loop.RunAsync(CancellationToken.None));

        Assert.Contains("exited before it was ready", e.Message, StringComparison.Ordinal);
        Assert.Empty(loop.Kills);
    }
}
