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

    /// <summary>
    /// Whether concurrent appends share token requests (one request in flight to the sequencer,
    /// the next one reserving a batch for every append that queued meanwhile). Off by default:
    /// on loopback it cut sequencer requests but cost 10-15 % of appends/s (the queue adds a
    /// wait for the request in flight); it pays when the sequencer's CPU is the limit.
    /// </summary>
    public bool BatchTokens { get; set; }

    /// <summary>The longest pause of a subscriber waiting at the tail for new appends.</summary>
    public TimeSpan MaxTailPollInterval { get; set; } = TimeSpan.FromMilliseconds(20);

    /// <summary>
    /// The clock for retry pauses, hole-fill waits and the operation timeout: the system clock by
    /// default; the deterministic simulation (tools/Hyder.Simulation) passes its virtual clock.
    /// </summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;
}
