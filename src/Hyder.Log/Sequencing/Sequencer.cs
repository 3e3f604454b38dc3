namespace Hyder.Log.Sequencing;

/// <summary>
/// The in-memory sequencer. Soft state: epoch and next address. A new instance is not ready
/// (epoch 0) until a reconfiguration seals the units and calls <see cref="ResetAsync"/> with the
/// tail it computed, so a restarted sequencer never hands out an address a unit already holds.
/// Tokens of a client whose epoch differs are refused: an older client learns the new epoch, a
/// newer client waits for the reset.
/// </summary>
public sealed class Sequencer : ISequencer
{
    /// <summary>The most addresses one request may reserve.</summary>
    public const int MaxBatch = 1 << 16;

    private readonly object _lock = new();
    private long _epoch;
    private long _next;

    /// <summary>The current epoch (0 before the first reset).</summary>
    public long Epoch
    {
        get
        {
            lock (_lock)
            {
                return _epoch;
            }
        }
    }

    /// <inheritdoc />
    public ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default) =>
        ValueTask.FromResult(Next(epoch, count));

    /// <summary>The synchronous form of <see cref="NextAsync"/>.</summary>
    public TokenReply Next(long epoch, int count)
    {
        if ((uint)count > MaxBatch)
        {
            return new TokenReply(LogStatus.BadRequest, 0, 0);
        }

        lock (_lock)
        {
            if (_epoch == 0)
            {
                return new TokenReply(LogStatus.NotReady, 0, 0);
            }

            if (epoch < _epoch)
            {
                return new TokenReply(LogStatus.StaleEpoch, _epoch, _next);
            }

            if (epoch > _epoch)
            {
                return new TokenReply(LogStatus.NotReady, _epoch, _next);
            }

            if (_next + count - 1 > LogAddress.Max)
            {
                return new TokenReply(LogStatus.OutOfRange, _epoch, _next);
            }

            var first = _next;
            _next += count;
            Invariant.Assert(_next >= first && LogAddress.IsValid(first), "the tail moves back within an epoch", first, _next);
            return new TokenReply(LogStatus.Ok, _epoch, first);
        }
    }

    /// <inheritdoc />
    public ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default)
    {
        lock (_lock)
        {
            if (epoch < _epoch || (epoch == _epoch && next != _next))
            {
                return ValueTask.FromResult(new TokenReply(LogStatus.StaleEpoch, _epoch, _next));
            }

            if (!LogAddress.IsValid(next))
            {
                return ValueTask.FromResult(new TokenReply(LogStatus.OutOfRange, _epoch, _next));
            }

            // The tail moves only with a newer epoch (the same epoch's reset is a retry, answered alike).
            Invariant.Assert(epoch > _epoch || next == _next, "a reset moves the tail within an epoch", _next, next);
            _epoch = epoch;
            _next = next;
            return ValueTask.FromResult(new TokenReply(LogStatus.Ok, _epoch, _next));
        }
    }
}
