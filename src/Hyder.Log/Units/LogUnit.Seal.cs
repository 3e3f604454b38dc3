namespace Hyder.Log.Units;

public sealed partial class LogUnit
{
    /// <inheritdoc />
    public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default)
    {
        long highest;
        lock (_lock)
        {
            if (epoch < _epoch)
            {
                return ValueTask.FromResult(new UnitReply(LogStatus.StaleEpoch, _epoch));
            }

            Invariant.Assert(epoch >= _epoch, "a seal lowers the epoch", _epoch, epoch);
            _epoch = epoch;
            highest = _highest;
        }

        // The seal is durable before it is answered: a restarted unit still rejects the old epoch.
        SaveMetadata();
        return ValueTask.FromResult(new UnitReply(LogStatus.Ok, highest));
    }

    /// <inheritdoc />
    public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default)
    {
        lock (_lock)
        {
            return ValueTask.FromResult(epoch < _epoch
                ? new UnitReply(LogStatus.StaleEpoch, _epoch)
                : new UnitReply(LogStatus.Ok, _highest));
        }
    }

    /// <inheritdoc />
    public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default)
    {
        if (before < 0 || before > LogAddress.Max + 1)
        {
            return ValueTask.FromResult(new UnitReply(LogStatus.OutOfRange, 0));
        }

        lock (_lock)
        {
            if (epoch < _epoch)
            {
                return ValueTask.FromResult(new UnitReply(LogStatus.StaleEpoch, _epoch));
            }

            if (before <= _trimMark)
            {
                return ValueTask.FromResult(UnitReply.Ok);
            }

            _trimMark = before;

            // The highest address never moves back, even when the segments that held it are gone.
            _highest = Math.Max(_highest, before - 1);
            _index.RemoveBelow(before);
        }

        SaveMetadata();
        _store.ReleaseBelow(before);
        return ValueTask.FromResult(UnitReply.Ok);
    }

    private void SaveMetadata()
    {
        // Saves are serialized and each writes the newest state, so the file never goes back.
        lock (_metadataLock)
        {
            Storage.UnitMetadata metadata;
            lock (_lock)
            {
                metadata = new Storage.UnitMetadata(_epoch, _trimMark);
            }

            AssertNeverBack(metadata);
            _store.SaveMetadata(metadata);
        }
    }

#if DEBUG
    private Storage.UnitMetadata _saved;
#endif

    /// <summary>Debug: the seal and the trim mark saved never go back (a restarted unit must reject what it rejected).</summary>
    [System.Diagnostics.Conditional("DEBUG")]
    private void AssertNeverBack(Storage.UnitMetadata metadata)
    {
#if DEBUG
        Invariant.Assert(metadata.Epoch >= _saved.Epoch, "the saved seal goes back", _saved.Epoch, metadata.Epoch);
        Invariant.Assert(metadata.TrimMark >= _saved.TrimMark, "the saved trim mark goes back", _saved.TrimMark, metadata.TrimMark);
        _saved = metadata;
#endif
    }
}
