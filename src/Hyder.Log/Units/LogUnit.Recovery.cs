using Hyder.Log.Storage;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Units;

public sealed partial class LogUnit
{
    private void Recover()
    {
        var recovery = _store.Recover();
        Recovery = recovery.Report;
        _epoch = recovery.Metadata.Epoch;
        _trimMark = recovery.Metadata.TrimMark;
        AssertNeverBack(recovery.Metadata);
        _highest = Math.Max(_trimMark - 1, recovery.DurableHighest);
        foreach (var slot in recovery.Slots)
        {
            _highest = Math.Max(_highest, slot.Address);
            if (slot.Address < _trimMark)
            {
                continue;
            }

            if (_index.TryGetValue(slot.Address, out var existing) && slot.Kind != SlotKind.Trim)
            {
                // Two data-or-fill slots for one address break write-once: keep the first, report.
                Recovery.CorruptLocations.Add(slot.Location);
                LogDuplicate(slot.Address, existing.Location, slot.Location);
                continue;
            }

            _index.Set(slot.Address, new IndexEntry(slot.Location, slot.Kind));
        }

        // A prefix trim saves its mark before it deletes segment files: a unit that stopped in
        // between deletes them now.
        if (_trimMark > 0)
        {
            _store.ReleaseBelow(_trimMark);
        }

        if (Recovery.DurableMarkDamaged)
        {
            LogMarkDamaged();
        }

        if (Recovery.CorruptLocations.Count > 0)
        {
            LogCorruption(Recovery.CorruptLocations.Count, Recovery.CorruptAddresses);
        }

        LogRecovered(Recovery, _epoch, _trimMark, _highest);
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Log unit recovered: {Report}; sealed epoch {Epoch}, trim mark {TrimMark}, highest address {Highest}")]
    private partial void LogRecovered(RecoveryReport report, long epoch, long trimMark, long highest);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The durable mark (durable.mark) is damaged: bad slots at the end of the log were judged as if there were no mark (cut as torn); with group commit a new mark is written")]
    private partial void LogMarkDamaged();

    [LoggerMessage(Level = LogLevel.Error, Message = "Recovery found {Count} corrupt durable slot(s); known addresses answer Corrupt: [{Addresses}]")]
    private partial void LogCorruption(int count, List<long> addresses);

    [LoggerMessage(Level = LogLevel.Error, Message = "Address {Address} has a second slot at {Second} (first at {First}); the second is ignored")]
    private partial void LogDuplicate(long address, long first, long second);
}
