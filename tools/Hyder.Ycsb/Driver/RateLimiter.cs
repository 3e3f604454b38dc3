namespace Hyder.Ycsb.Driver;

/// <summary>
/// Paces transaction starts to a rate shared by every slot: start n is due at
/// t0 + n / rate. A slot that falls behind starts at once (no burst is skipped), as YCSB's
/// target throughput does.
/// </summary>
internal sealed class RateLimiter
{
    private readonly double _ticksPerStart;
    private readonly long _start = Clock.Now;
    private long _next;

    public RateLimiter(double perSecond)
    {
        if (!(perSecond > 0) || double.IsInfinity(perSecond))
        {
            throw new ArgumentOutOfRangeException(nameof(perSecond), perSecond, "The rate must be positive.");
        }

        _ticksPerStart = System.Diagnostics.Stopwatch.Frequency / perSecond;
    }

    /// <summary>Waits until the caller's start is due; false when cancelled first.</summary>
    public async ValueTask<bool> WaitAsync(CancellationToken cancellationToken)
    {
        var n = Interlocked.Increment(ref _next) - 1;
        var due = _start + (long)(n * _ticksPerStart);
        var wait = due - Clock.Now;
        if (wait <= 0)
        {
            return !cancellationToken.IsCancellationRequested;
        }

        try
        {
            await Task.Delay(TimeSpan.FromMicroseconds(Clock.Microseconds(0, wait)), cancellationToken).ConfigureAwait(false);
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }
}
