namespace Hyder.Log.Client;

/// <summary>How a <see cref="LogClient"/> waits, retries and fills holes.</summary>
public sealed class LogClientOptions
{
    /// <summary>
    /// How long a subscriber waits at a hole below the tail before filling it with junk: long
    /// enough for a slow writer to finish its chain, short enough that a crashed one does not
    /// stall every reader. 200 ms by default.
    /// </summary>
    public TimeSpan HoleFillDelay { get; set; } = TimeSpan.FromMilliseconds(200);

    /// <summary>The pause before retrying after an unreachable unit or a sequencer not yet ready.</summary>
    public TimeSpan RetryDelay { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>How long an operation keeps retrying (reconfigurations included) before it fails.</summary>
    public TimeSpan OperationTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The longest pause of a subscriber waiting at the tail for new appends.</summary>
    public TimeSpan MaxTailPollInterval { get; set; } = TimeSpan.FromMilliseconds(20);
}
