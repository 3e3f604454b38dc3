namespace Hyder.Ycsb.Driver;

/// <summary>
/// What the counters' values can be, for checking reads: every counter starts at 0 (the load
/// writes 0) and changes only by the Adds this process issues, so a read value must lie between
/// the sum of the negative deltas and the sum of the positive deltas issued so far. A delta counts
/// as issued before its Add is sent, so in-flight and aborted Adds only widen the range. Shared by
/// every session of a process; valid only after a load in the same process (otherwise the counters'
/// starting values are unknown and only <see cref="Check"/>'s type check applies).
/// </summary>
internal sealed class CounterBounds(bool startsAtZero)
{
    private long _up;
    private long _down;

    public void Issue(long delta)
    {
        if (delta >= 0)
        {
            Interlocked.Add(ref _up, delta);
        }
        else
        {
            Interlocked.Add(ref _down, delta);
        }
    }

    /// <summary>True when <paramref name="value"/> is a value the issued Adds can produce.</summary>
    public bool Check(long value) => !startsAtZero || (value >= Interlocked.Read(ref _down) && value <= Interlocked.Read(ref _up));
}
