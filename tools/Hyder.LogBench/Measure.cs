using System.Diagnostics;
using Hyder.Log;
using Hyder.Log.Sequencing;

namespace Hyder.LogBench;

/// <summary>The measurement loops: closed-loop clients, latencies kept in preallocated arrays.</summary>
internal static class Measure
{
    public static async Task AppendsAsync(ISharedLog log, Settings settings, IReadOnlyList<HostProcess> hosts)
    {
        var block = new byte[settings.BlockSize];
        new Random(1).NextBytes(block);
        var stop = 0;
        var measuring = 0;
        var latencies = new long[settings.Clients][];
        var counts = new int[settings.Clients];
        var clients = Enumerable.Range(0, settings.Clients).Select(c => Task.Run(async () =>
        {
            var samples = latencies[c] = new long[1 << 20];
            while (Volatile.Read(ref stop) == 0)
            {
                var start = Stopwatch.GetTimestamp();
                await log.AppendAsync(block);
                if (Volatile.Read(ref measuring) == 1 && counts[c] < samples.Length)
                {
                    samples[counts[c]++] = Stopwatch.GetTimestamp() - start;
                }
            }
        })).ToArray();

        await Task.Delay(TimeSpan.FromSeconds(settings.Warmup));
        var cpuBefore = hosts.Select(h => h.Cpu).ToArray();
        var self = Process.GetCurrentProcess();
        var selfCpuBefore = (self.UserProcessorTime.TotalSeconds, self.PrivilegedProcessorTime.TotalSeconds);
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var gcBefore = (GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2));
        var clock = Stopwatch.StartNew();
        Volatile.Write(ref measuring, 1);
        await Task.Delay(TimeSpan.FromSeconds(settings.Seconds));
        Volatile.Write(ref measuring, 0);
        var elapsed = clock.Elapsed.TotalSeconds;
        var allocated = GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        var gcAfter = (GC.CollectionCount(0), GC.CollectionCount(1), GC.CollectionCount(2));
        var cpu = hosts.Select((h, i) => (h.Cpu.User - cpuBefore[i].User, h.Cpu.Kernel - cpuBefore[i].Kernel)).ToArray();
        self.Refresh();
        var selfCpu = (self.UserProcessorTime.TotalSeconds - selfCpuBefore.Item1, self.PrivilegedProcessorTime.TotalSeconds - selfCpuBefore.Item2);
        Volatile.Write(ref stop, 1);
        await Task.WhenAll(clients);

        var total = counts.Sum();
        var all = new long[total];
        var at = 0;
        for (var c = 0; c < settings.Clients; c++)
        {
            Array.Copy(latencies[c], 0, all, at, counts[c]);
            at += counts[c];
        }

        Array.Sort(all);
        double Ms(double q) => all.Length == 0 ? 0 : all[(int)Math.Min(all.Length - 1, q * all.Length)] * 1000.0 / Stopwatch.Frequency;
        Console.WriteLine($"appends/s      {total / elapsed,12:N0}   ({total} appends in {elapsed:F1} s, {total / elapsed * settings.BlockSize / 1048576.0:N1} MiB/s of blocks)");
        Console.WriteLine($"latency ms     p50 {Ms(0.50):F2}   p95 {Ms(0.95):F2}   p99 {Ms(0.99):F2}   max {Ms(1.0):F2}");
        Console.WriteLine($"client alloc   {allocated / (double)total,12:N1} B/append   GCs gen0/1/2: {gcAfter.Item1 - gcBefore.Item1}/{gcAfter.Item2 - gcBefore.Item2}/{gcAfter.Item3 - gcBefore.Item3}");
        static string Show((double User, double Kernel) c) => $"{c.User:F1}+{c.Kernel:F1}";
        var used = selfCpu.Item1 + selfCpu.Item2 + cpu.Sum(c => c.Item1 + c.Item2);
        Console.WriteLine($"cpu s user+sys client {Show(selfCpu)}   control {(cpu.Length > 0 ? Show(cpu[0]) : "-")}   units {string.Join("  ", cpu.Skip(1).Select(Show))}   " +
            $"= {used:F1} of {elapsed * Environment.ProcessorCount:F1} available, {used / total * 1e6:F0} us per append");
    }

    public static async Task TokensAsync(ISequencer sequencer, Settings settings, int batch)
    {
        var stop = 0;
        var counts = new long[settings.Clients];
        var clients = Enumerable.Range(0, settings.Clients).Select(c => Task.Run(async () =>
        {
            while (Volatile.Read(ref stop) == 0)
            {
                var reply = await sequencer.NextAsync(1, batch);
                if (reply.Status != LogStatus.Ok)
                {
                    throw new InvalidOperationException($"token: {reply.Status}");
                }

                counts[c] += batch;
            }
        })).ToArray();
        await Task.Delay(500);
        var before = counts.Sum();
        var allocatedBefore = GC.GetTotalAllocatedBytes(precise: true);
        var requestsBefore = before / batch;
        var clock = Stopwatch.StartNew();
        await Task.Delay(TimeSpan.FromSeconds(Math.Max(2, settings.Seconds / 2)));
        var tokens = counts.Sum() - before;
        var elapsed = clock.Elapsed.TotalSeconds;
        var allocated = GC.GetTotalAllocatedBytes(precise: true) - allocatedBefore;
        Volatile.Write(ref stop, 1);
        await Task.WhenAll(clients);
        Console.WriteLine($"tokens/s       {tokens / elapsed,12:N0}   (batch {batch}, {tokens / batch / elapsed:N0} requests/s, {allocated / (double)(tokens / batch):N1} B/request in the client)");
    }
}
