namespace Hyder.Log.Storage;

/// <summary>When a log unit makes a write durable before acknowledging it.</summary>
public enum FsyncPolicy
{
    /// <summary>
    /// The default: a write is acknowledged after an fsync that covers it; concurrent writes share
    /// one fsync (group commit). Survives a crash of the process and of the machine.
    /// </summary>
    GroupCommit = 0,

    /// <summary>
    /// A write is acknowledged once it is in the operating system's page cache. Survives a crash of
    /// the process (SIGKILL), not a power loss or kernel crash. For benchmarks and tests.
    /// </summary>
    None = 1,
}
