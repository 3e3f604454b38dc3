using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Driver;

/// <summary>
/// Runs one phase: <c>threads × in-flight</c> slots, each with its own session, taking transactions
/// from its worker's source, optionally paced to a target throughput; a warm-up whose measurements
/// are dropped; a status every interval; until the duration, the operation count or the source ends.
/// A target error that is not an abort ends the phase with that error.
/// </summary>
internal sealed class PhaseRunner
{
    private readonly ITarget _target;
    private readonly IReadOnlyList<KeySpace> _spaces;
    private readonly DriverSettings _settings;
    private readonly IStatusSink _sink;
    private readonly MeasurementRecorder[] _recorders;
    private readonly Lock[] _sourceLocks;
    private readonly CounterBounds _counters;
    private long _inFlight;
    private long _issued;
    private long _committedOperations;
    private volatile bool _measuring;

    public PhaseRunner(ITarget target, IReadOnlyList<KeySpace> spaces, DriverSettings settings, IStatusSink sink, CounterBounds counters)
    {
        _counters = counters;
        _target = target;
        _spaces = spaces;
        _settings = settings;
        _sink = sink;
        _recorders = Enumerable.Range(0, settings.Threads).Select(_ => new MeasurementRecorder()).ToArray();
        _sourceLocks = Enumerable.Range(0, settings.Threads).Select(_ => new Lock()).ToArray();
    }

    /// <summary>Runs the phase with one source per worker (<paramref name="sources"/>[worker]).</summary>
    public async Task<PhaseResult> RunAsync(string phase, IReadOnlyList<ITransactionSource> sources, CancellationToken cancellationToken)
    {
        var keys = new KeyCodec(_settings.KeySize, _settings.HashedKeys);
        var sessions = new List<ITargetSession>();
        try
        {
            for (var i = 0; i < _settings.Sessions; i++)
            {
                sessions.Add(await _target.OpenSessionAsync(cancellationToken).ConfigureAwait(false));
            }

            using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            using var done = new CancellationTokenSource();
            var limiter = _settings.TargetThroughput > 0 ? new RateLimiter(_settings.TargetThroughput) : null;
            _measuring = _settings.Warmup <= TimeSpan.Zero;
            var targetStart = _measuring ? await _target.SampleAsync(cancellationToken).ConfigureAwait(false) : null;
            var phaseStart = Clock.Now;
            var measureStart = phaseStart;
            if (_measuring && _settings.Duration is { } duration)
            {
                stop.CancelAfter(duration);
            }

            var slots = new List<Task>();
            for (var i = 0; i < sessions.Count; i++)
            {
                var worker = i % _settings.Threads;
                var executor = new TransactionExecutor(sessions[i], _spaces, keys, _settings.ValueSize, _recorders[worker], _settings.MaxRetries,
                    Rng.ForStream(_settings.Seed ^ 0x5EED_0F_7A1E5UL, (ulong)i), _counters, _settings.OneShot, _settings.Pipeline);
                slots.Add(Task.Run(() => SlotAsync(executor, sources[worker], _sourceLocks[worker], limiter, stop), CancellationToken.None));
            }

            var all = Task.WhenAll(slots);
            var totals = new Measurements();
            var interval = new Measurements();
            var last = phaseStart;
            // The last status comes after every slot has finished, so it shows nothing in flight.
            for (var finished = false; !finished;)
            {
                var next = _measuring ? _settings.StatusInterval : Min(_settings.StatusInterval, _settings.Warmup - TimeSpan.FromMicroseconds(Clock.MicrosecondsSince(phaseStart)));
                await Task.WhenAny(all, Task.Delay(Max(next, TimeSpan.FromMilliseconds(1)), CancellationToken.None)).ConfigureAwait(false);
                finished = all.IsCompleted;
                var now = Clock.Now;
                Collect(interval);
                var warmingUp = !_measuring;
                _sink.Status(new StatusSnapshot(TimeSpan.FromMicroseconds(Clock.Microseconds(phaseStart, now)), TimeSpan.FromMicroseconds(Clock.Microseconds(last, now)),
                    interval, Interlocked.Read(ref _inFlight), warmingUp, Interlocked.Read(ref _committedOperations)));
                if (!warmingUp)
                {
                    totals.Add(interval);
                }
                else if (Clock.MicrosecondsSince(phaseStart) >= _settings.Warmup.TotalMicroseconds)
                {
                    targetStart = await _target.SampleAsync(cancellationToken).ConfigureAwait(false);
                    _measuring = true;
                    measureStart = Clock.Now;
                    if (_settings.Duration is { } measured)
                    {
                        stop.CancelAfter(measured);
                    }
                }

                interval.Reset();
                last = now;
            }

            await all.ConfigureAwait(false);
            var end = Clock.Now;
            Collect(totals);
            var result = new PhaseResult(phase, totals, TimeSpan.FromMicroseconds(Clock.Microseconds(measureStart, end)), Interlocked.Read(ref _committedOperations))
            {
                Target = await _target.SummarizeAsync(targetStart, totals.Committed, cancellationToken).ConfigureAwait(false),
            };
            _sink.Finished(result);
            return result;
        }
        finally
        {
            foreach (var session in sessions)
            {
                await session.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    private void Collect(Measurements into)
    {
        foreach (var recorder in _recorders)
        {
            recorder.CollectInto(into);
        }
    }

    private async Task SlotAsync(TransactionExecutor executor, ITransactionSource source, Lock sourceLock, RateLimiter? limiter, CancellationTokenSource stop)
    {
        var plan = new TransactionPlan();
        try
        {
            while (!stop.IsCancellationRequested)
            {
                if (limiter is not null && !await limiter.WaitAsync(stop.Token).ConfigureAwait(false))
                {
                    return;
                }

                if (_measuring && _settings.OperationCount is { } count && Interlocked.Increment(ref _issued) > count)
                {
                    return;
                }

                lock (sourceLock)
                {
                    if (!source.TryNext(plan))
                    {
                        return;
                    }
                }

                Interlocked.Increment(ref _inFlight);
                try
                {
                    // A started transaction finishes even when the phase ends: its outcome is counted.
                    if (await executor.RunAsync(plan, CancellationToken.None).ConfigureAwait(false))
                    {
                        Interlocked.Add(ref _committedOperations, plan.Operations.Count);
                    }
                }
                finally
                {
                    Interlocked.Decrement(ref _inFlight);
                }
            }
        }
        catch
        {
            // One failing slot ends the phase for all; the error surfaces from Task.WhenAll.
            await stop.CancelAsync().ConfigureAwait(false);
            throw;
        }
    }

    private static TimeSpan Min(TimeSpan a, TimeSpan b) => a < b ? a : b;

    private static TimeSpan Max(TimeSpan a, TimeSpan b) => a > b ? a : b;
}
