namespace Hyder.Ycsb.Cli;

/// <summary>
/// Settings of the YCSB process itself that depend on what it drives, applied before anything
/// runs on the thread pool.
/// </summary>
internal static class ClientProcess
{
    /// <summary>The runtime setting for how long an idle thread-pool worker spins before it sleeps.</summary>
    internal const string SpinLimitSetting = "System.Threading.ThreadPool.UnfairSemaphoreSpinLimit";

    /// <summary>
    /// With <c>--connect</c> the process is a client only, and on a machine it shares with the
    /// server its idle thread-pool workers would spin for the cores the server needs: the thread
    /// pool's spin is turned off, as hyder-server and hyder-log turn off their own
    /// (docs/ycsb.md, "--connect"). Without it the engine runs in this process, whose
    /// continuations would then wait for parked workers, and the default stays. The
    /// <c>DOTNET_ThreadPool_UnfairSemaphoreSpinLimit</c> environment variable still decides when set.
    /// Returns whether the setting was made.
    /// </summary>
    public static bool Configure(IReadOnlyList<string> args)
    {
        if (!DrivesARunningCluster(args))
        {
            return false;
        }

        AppContext.SetData(SpinLimitSetting, 0);
        return true;
    }

    /// <summary>Whether the command line has <c>--connect</c> (as <c>--connect URL</c>, <c>--connect=URL</c> or <c>--connect:URL</c>).</summary>
    internal static bool DrivesARunningCluster(IReadOnlyList<string> args) =>
        args.Any(a => a == "--connect" || a.StartsWith("--connect=", StringComparison.Ordinal) || a.StartsWith("--connect:", StringComparison.Ordinal));
}
