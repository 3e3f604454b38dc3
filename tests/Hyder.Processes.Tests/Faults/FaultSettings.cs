namespace Hyder.Processes.Tests.Faults;

/// <summary>
/// What a <see cref="FaultProxy"/> does to the bytes it forwards. "Forward" is from the side that
/// connected (the client) to the proxy's target; "backward" the answers. Chances are per chunk
/// (one read from a socket, at most 16 KiB).
/// </summary>
public sealed record FaultSettings
{
    /// <summary>Forward everything at once.</summary>
    public static FaultSettings None { get; } = new();

    /// <summary>Every chunk waits this long before it is sent on (order is kept).</summary>
    public TimeSpan Delay { get; init; }

    /// <summary>Up to this much more, drawn per chunk.</summary>
    public TimeSpan Jitter { get; init; }

    /// <summary>The chance a chunk is lost with its connection: both sides see an orderly close (FIN), the chunk is not sent.</summary>
    public double Drop { get; init; }

    /// <summary>The chance a chunk is lost with its connection reset: both sides see an RST.</summary>
    public double Reset { get; init; }

    /// <summary>Bytes per second per connection and direction; 0 for no cap.</summary>
    public long BytesPerSecond { get; init; }

    /// <summary>Forward bytes are read and discarded; the connection stays open (a one-way partition).</summary>
    public bool BlackholeForward { get; init; }

    /// <summary>Backward bytes are read and discarded; the connection stays open.</summary>
    public bool BlackholeBackward { get; init; }

    /// <summary>Both directions blackholed: a partition that keeps connections open, as a cut cable does.</summary>
    public FaultSettings Partitioned() => this with { BlackholeForward = true, BlackholeBackward = true };

    /// <summary>No blackhole in either direction.</summary>
    public FaultSettings Healed() => this with { BlackholeForward = false, BlackholeBackward = false };
}

/// <summary>What a proxy has done so far.</summary>
public readonly record struct FaultCounters(long Connections, long ForwardBytes, long BackwardBytes, long BlackholedBytes, long Drops, long Resets, long RefusedConnects)
{
    public override string ToString() =>
        $"connections {Connections}, bytes forward {ForwardBytes} backward {BackwardBytes} blackholed {BlackholedBytes}, drops {Drops}, resets {Resets}, target refused {RefusedConnects}";
}
