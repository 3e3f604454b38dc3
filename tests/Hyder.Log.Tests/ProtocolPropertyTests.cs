using System.Collections.Concurrent;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Hyder.Log.Embedded;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;

namespace Hyder.Log.Tests;

/// <summary>The protocol's safety properties, on random schedules of concurrent clients.</summary>
public sealed class ProtocolPropertyTests
{
    private static byte[] Block(int writer, int value) => [(byte)writer, (byte)value, 1, 2, 3];

    private static Gen<int[][]> Schedules(int clients, int maxOps, int addresses) =>
        Gen.Choose(0, addresses - 1).ArrayOf().Select(a => a.Take(maxOps).ToArray()).ArrayOf(clients);

    [Property(MaxTest = 60)]
    public Property NoAddressEverHoldsTwoDifferentBlocks()
    {
        // Each client writes or fills addresses in its own random order, all at once.
        return Prop.ForAll(Schedules(4, 30, 12).ToArbitrary(), schedule =>
        {
            using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
            var accepted = new ConcurrentDictionary<long, byte[]>();
            var conflicts = 0;
            Parallel.For(0, schedule.Length, c =>
            {
                foreach (var address in schedule[c])
                {
                    var fill = address % 5 == c;
                    var block = fill ? [] : Block(c, address);
                    var reply = fill
                        ? unit.FillAsync(0, address).AsTask().GetAwaiter().GetResult()
                        : unit.WriteAsync(0, address, block).AsTask().GetAwaiter().GetResult();
                    if (reply.Status == LogStatus.Ok && !accepted.TryAdd(address, block) && !(fill && accepted[address].Length == 0))
                    {
                        Interlocked.Increment(ref conflicts);
                    }
                }
            });

            foreach (var (address, block) in accepted)
            {
                var buffer = new byte[64];
                var read = unit.ReadAsync(0, address, buffer).AsTask().GetAwaiter().GetResult();
                var holds = block.Length == 0 ? read.Status == LogStatus.Filled : read.Status == LogStatus.Ok && buffer.AsSpan(0, (int)read.Value).SequenceEqual(block);
                if (!holds)
                {
                    return false;
                }
            }

            return conflicts == 0;
        });
    }

    [Property(MaxTest = 60)]
    public Property NoWriteOfAnOlderEpochIsAcceptedAfterTheSealAnswered()
    {
        var gen = Gen.Choose(0, 200).Zip(Gen.Choose(1, 4));
        return Prop.ForAll(gen.ToArbitrary(), input =>
        {
            var (sealAfter, writers) = input;
            using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
            var next = -1L;
            var sealedAnswer = -2L;
            var acceptedAfterSeal = 0;
            var acceptedAddresses = new ConcurrentBag<long>();
            var tasks = Enumerable.Range(0, writers).Select(w => Task.Run(() =>
            {
                for (var i = 0; i < 150; i++)
                {
                    var sealedBefore = Volatile.Read(ref sealedAnswer) != -2;
                    var address = Interlocked.Increment(ref next);
                    if (unit.WriteAsync(1, address, Block(w, i)).AsTask().GetAwaiter().GetResult().Status == LogStatus.Ok)
                    {
                        acceptedAddresses.Add(address);
                        if (sealedBefore)
                        {
                            Interlocked.Increment(ref acceptedAfterSeal);
                        }
                    }
                }
            })).ToList();
            tasks.Add(Task.Run(() =>
            {
                SpinWait.SpinUntil(() => Volatile.Read(ref next) >= sealAfter || tasks.Take(writers).All(t => t.IsCompleted));
                Volatile.Write(ref sealedAnswer, unit.SealAsync(2).AsTask().GetAwaiter().GetResult().Value);
            }));
            Task.WaitAll(tasks);
            return acceptedAfterSeal == 0 && acceptedAddresses.All(a => a <= sealedAnswer)
                && unit.HighestAsync(2).AsTask().GetAwaiter().GetResult().Value == sealedAnswer;
        });
    }

    [Property(MaxTest = 25)]
    public Property HoleFillRacingASlowWriterLeavesEveryReaderTheSameValue()
    {
        var gen = Gen.Choose(0, 12).Zip(Gen.Choose(0, 12)).ArrayOf().Select(a => a.Take(6).ToArray());
        return Prop.ForAll(gen.ToArbitrary(), delays =>
        {
            var log = EmbeddedLog.OpenAsync(new EmbeddedLogOptions { Replicas = 3, BlockSize = 64 }).GetAwaiter().GetResult();
            try
            {
                var chain = log.Units.ToArray();
                var views = new ConcurrentBag<(long Address, string Seen)>();
                var work = new List<Task>();
                foreach (var (writerDelay, fillerDelay) in delays)
                {
                    // The slow writer holds a token and writes the chain head to tail with pauses.
                    var token = log.Connector.Sequencer("sequencer").NextAsync(1, 1).AsTask().GetAwaiter().GetResult();
                    var address = token.Address;
                    var block = Block(9, (int)address);
                    work.Add(Task.Run(async () =>
                    {
                        foreach (var unit in chain)
                        {
                            await Task.Delay(writerDelay);
                            var reply = await unit.WriteAsync(1, address, block);
                            if (unit == chain[0] && reply.Status != LogStatus.Ok)
                            {
                                break; // a fill took the head: the writer has lost the address
                            }
                        }
                    }));
                    work.Add(Task.Run(async () =>
                    {
                        await Task.Delay(fillerDelay);
                        var kind = await log.FillAsync(address);
                        views.Add((address, kind.ToString()));
                    }));
                    work.Add(Task.Run(async () =>
                    {
                        await Task.Delay((writerDelay + fillerDelay) / 2);
                        var buffer = new byte[64];
                        var read = await log.ReadAsync(address, buffer);
                        if (read.Kind != LogEntryKind.Unwritten)
                        {
                            views.Add((address, read.Kind.ToString()));
                        }
                    }));
                }

                Task.WaitAll(work);
                foreach (var group in views.GroupBy(v => v.Address))
                {
                    var finals = chain.Select(u =>
                    {
                        var buffer = new byte[64];
                        return u.ReadAsync(1, group.Key, buffer).AsTask().GetAwaiter().GetResult().Status;
                    }).Distinct().ToArray();
                    var expected = finals.Single() == LogStatus.Ok ? "Data" : "Filled";
                    if (finals.Length != 1 || group.Any(v => v.Seen != expected))
                    {
                        return false;
                    }
                }

                return true;
            }
            finally
            {
                log.DisposeAsync().AsTask().GetAwaiter().GetResult();
            }
        });
    }

    [Property(MaxTest = 30)]
    public Property RestartedSequencerNeverHandsOutAnAddressTwice()
    {
        var gen = Gen.Choose(1, 20).ArrayOf().Select(a => a.Take(5).ToArray());
        return Prop.ForAll(gen.ToArbitrary(), rounds =>
        {
            var log = EmbeddedLog.OpenAsync(new EmbeddedLogOptions { Chains = 2, Replicas = 2, BlockSize = 64 }).GetAwaiter().GetResult();
            try
            {
                var addresses = new ConcurrentBag<long>();
                var i = 0;
                foreach (var appends in rounds)
                {
                    // Tokens handed out but never written are lost with the old sequencer too.
                    _ = log.Connector.Sequencer("sequencer").NextAsync(log.Client.Projection.Epoch, 3).AsTask().GetAwaiter().GetResult();
                    Parallel.For(0, appends, _ => addresses.Add(log.AppendAsync(Block(1, Interlocked.Increment(ref i))).AsTask().GetAwaiter().GetResult()));
                    log.Connector.Add("sequencer", new Sequencer());
                    log.Admin.NewEpochAsync().GetAwaiter().GetResult();
                }

                Parallel.For(0, 5, _ => addresses.Add(log.AppendAsync(Block(2, 0)).AsTask().GetAwaiter().GetResult()));
                return addresses.Distinct().Count() == addresses.Count;
            }
            finally
            {
                log.DisposeAsync().AsTask().GetAwaiter().GetResult();
            }
        });
    }

    [Property(MaxTest = 40)]
    public Property TrimmedAddressesNeverReadAsData()
    {
        var gen = Gen.Choose(0, 39).ArrayOf().Select(a => a.Take(10).ToArray()).Zip(Gen.Choose(0, 40));
        return Prop.ForAll(gen.ToArbitrary(), input =>
        {
            var (points, prefix) = input;
            var log = EmbeddedLog.OpenAsync(new EmbeddedLogOptions { Chains = 2, Replicas = 2, BlockSize = 64 }).GetAwaiter().GetResult();
            try
            {
                for (var a = 0; a < 40; a++)
                {
                    log.AppendAsync(Block(0, a)).AsTask().GetAwaiter().GetResult();
                }

                foreach (var a in points)
                {
                    log.TrimAsync(a).AsTask().GetAwaiter().GetResult();
                }

                log.PrefixTrimAsync(prefix).AsTask().GetAwaiter().GetResult();
                for (var a = 0; a < 40; a++)
                {
                    var trimmed = a < prefix || points.Contains(a);
                    try
                    {
                        var buffer = new byte[64];
                        var read = log.ReadAsync(a, buffer).AsTask().GetAwaiter().GetResult();
                        if (trimmed || read.Kind != LogEntryKind.Data || !buffer.AsSpan(0, read.Length).SequenceEqual(Block(0, a)))
                        {
                            return false;
                        }
                    }
                    catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
                    {
                        if (!trimmed)
                        {
                            return false;
                        }
                    }
                }

                return true;
            }
            finally
            {
                log.DisposeAsync().AsTask().GetAwaiter().GetResult();
            }
        });
    }
}
