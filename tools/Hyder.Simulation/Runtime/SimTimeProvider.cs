namespace Hyder.Simulation.Runtime;

/// <summary>
/// Virtual time for production code that takes a <see cref="TimeProvider"/>: timestamps are the
/// scheduler's ticks, and a timer is an entry in the scheduler's queue, so <c>Task.Delay(d, time)</c>
/// completes on the simulation's thread at virtual time now + d.
/// </summary>
public sealed class SimTimeProvider : TimeProvider
{
    private static readonly DateTimeOffset s_origin = new(2026, 1, 1, 0, 0, 0, TimeSpan.Zero);
    private readonly SimScheduler _scheduler;

    internal SimTimeProvider(SimScheduler scheduler) => _scheduler = scheduler;

    /// <inheritdoc />
    public override DateTimeOffset GetUtcNow() => s_origin.AddTicks(_scheduler.Now);

    /// <inheritdoc />
    public override long GetTimestamp() => _scheduler.Now;

    /// <inheritdoc />
    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    /// <inheritdoc />
    public override TimeZoneInfo LocalTimeZone => TimeZoneInfo.Utc;

    /// <inheritdoc />
    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period) =>
        new SimTimer(_scheduler, callback, state, dueTime, period);

    private sealed class SimTimer : ITimer
    {
        private readonly SimScheduler _scheduler;
        private readonly TimerCallback _callback;
        private readonly object? _state;
        private long _generation;
        private TimeSpan _period;
        private bool _disposed;

        public SimTimer(SimScheduler scheduler, TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
        {
            _scheduler = scheduler;
            _callback = callback;
            _state = state;
            Change(dueTime, period);
        }

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed)
            {
                return false;
            }

            var generation = ++_generation;
            _period = period;
            if (dueTime != Timeout.InfiniteTimeSpan)
            {
                Arm(dueTime, generation);
            }

            return true;
        }

        private void Arm(TimeSpan due, long generation) => _scheduler.After(due, () =>
        {
            if (_disposed || generation != _generation)
            {
                return;
            }

            _callback(_state);
            if (_period != Timeout.InfiniteTimeSpan && _period > TimeSpan.Zero && !_disposed && generation == _generation)
            {
                Arm(_period, generation);
            }
        });

        public void Dispose() => _disposed = true;

        public ValueTask DisposeAsync()
        {
            _disposed = true;
            return default;
        }
    }
}
