using BenchmarkDotNet.Attributes;
using Hyder.Log;
using Hyder.Log.Sequencing;
using Hyder.Log.Storage;
using Hyder.Log.Units;

namespace Hyder.Benchmarks.Log;

/// <summary>One log unit in memory: the cost of write-once checks, slot encoding and CRC-32C per 8 KiB block.</summary>
[Config(typeof(LogBenchmarkConfig))]
public class LogUnitBenchmarks
{
    private readonly byte[] _block = new byte[8192];
    private readonly byte[] _slot = new byte[SlotHeader.Size + 8192];
    private readonly byte[] _read = new byte[8192];
    private LogUnit _unit = null!;
    private Sequencer _sequencer = null!;
    private long _next;

    [GlobalSetup]
    public void Setup()
    {
        new Random(1).NextBytes(_block);
        _unit = LogUnit.Open(new LogUnitOptions());
        _sequencer = new Sequencer();
        _sequencer.ResetAsync(1, 0).AsTask().GetAwaiter().GetResult();
        for (var a = 0; a < 1024; a++)
        {
            _unit.WriteAsync(0, a, _block).AsTask().GetAwaiter().GetResult();
        }

        _next = 1024;
    }

    [GlobalCleanup]
    public void Cleanup() => _unit.Dispose();

    [Benchmark(Description = "slot encode + CRC-32C, 8 KiB")]
    public void EncodeSlot() => SlotHeader.Encode(_slot, SlotKind.Data, 7, _block);

    [Benchmark(Description = "unit write, 8 KiB, memory")]
    public LogStatus Write()
    {
        if ((_next & 8191) == 0)
        {
            // Keeps the unit's memory bounded, as a server trims its log: otherwise the run
            // measures the GC moving gigabytes of retained blocks, not the write.
            Wait(_unit.PrefixTrimAsync(0, _next - 1024));
        }

        return Wait(_unit.WriteAsync(0, _next++, _block)).Status;
    }

    [Benchmark(Description = "unit read, 8 KiB, memory")]
    public LogStatus Read() => Wait(_unit.ReadAsync(0, 512, _read)).Status;

    // A memory unit completes synchronously; AsTask only on the (unexpected) slow path, so the
    // allocation column shows the unit's own cost.
    private static UnitReply Wait(ValueTask<UnitReply> pending) => pending.IsCompleted ? pending.Result : pending.AsTask().GetAwaiter().GetResult();

    [Benchmark(Description = "sequencer token, in process")]
    public long Token() => _sequencer.Next(1, 1).Address;
}
