using Hyder.Checker;
using Hyder.Log;
using Hyder.Log.Client;
using Hyder.Log.Sequencing;

namespace Hyder.Simulation.Cluster;

internal sealed partial class SimCluster
{
    private readonly HistoryBuilder _history = new();
    private bool _clientsStop;
    private int _clientsRunning;

    /// <summary>The recorded client history.</summary>
    public History BuildHistory() => _history.Build();

    /// <summary>The run: bootstrap, clients and faults for the duration, then heal, settle and check.</summary>
    public async Task RunAsync()
    {
        // The log and the servers start on a quiet network; faults begin with the clients.
        Network.FaultsOn = false;
        await BootstrapAsync();
        Network.FaultsOn = true;
        var generator = new TxnGenerator(new WorkloadOptions { ActiveKeys = 4, MaxOps = 4 }, Scheduler.Random.Next());
        var clients = Options.Servers * Options.ClientsPerServer;
        for (var p = 0; p < clients; p++)
        {
            var process = p;
            _clientsRunning++;
            _ = Scheduler.Spawn(() => ClientAsync(process, $"s{process % Options.Servers}", generator));
        }

        // Clients and faults run for the duration, or (with a commit target) until the clients
        // committed that many transactions, the duration being the cap.
        var faultsFrom = Scheduler.Now;
        var end = Scheduler.Now + Options.Duration.Ticks;
        while (Scheduler.Now < end && Failure is null && (Options.CommitTarget == 0 || Stats.Committed < Options.CommitTarget))
        {
            await Task.Delay(Options.Faults.FaultInterval, Scheduler.Time);
            Sample();
            InjectFault();
        }

        // Settle: no new transactions, no more faults, every node back up.
        Stats.FaultyTime = TimeSpan.FromTicks(Scheduler.Now - faultsFrom);
        _clientsStop = true;
        Network.FaultsOn = false;
        Network.HealAll();
        await HealAllAsync();
        var deadline = Scheduler.Now + TimeSpan.FromSeconds(60).Ticks;
        await LayoutSettledAsync(deadline);
        while (_clientsRunning > 0 && Scheduler.Now < deadline)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), Scheduler.Time);
        }

        await ConvergeAsync(deadline);
    }

    private async Task ClientAsync(int process, string server, TxnGenerator generator)
    {
        try
        {
            while (!_clientsStop && Failure is null)
            {
                await Task.Delay(TimeSpan.FromTicks(10_000 + Scheduler.Random.Next(40_000)), Scheduler.Time);
                var mops = generator.Next();
                var counters = NextCounterOps();
                _history.Invoke(process, mops);
                Trace.Add($"p{process} invoke on {server}: {string.Join(", ", mops.Select(m => m.ToString()).Concat(counters.Select(c => c.ToString())))}");
                if (_servers[server] is not { } live)
                {
                    // Nothing was sent: certainly not committed.
                    _history.Fail(process);
                    Stats.Fail("server down (nothing sent)");
                    Trace.Add($"p{process} fail: {server} is down");
                    await BackOffAsync();
                    continue;
                }

                var began = Scheduler.Now;
                var (outcome, completed, cause) = await live.ExecuteAsync(mops, Options.Isolation, counters);
                _ledger.Record(counters, outcome);
                switch (outcome)
                {
                    case TxnOutcome.Ok:
                        _history.Ok(process, completed!);
                        Stats.Committed++;
                        Stats.CommitLatency += TimeSpan.FromTicks(Scheduler.Now - began);
                        break;
                    case TxnOutcome.Fail:
                        _history.Fail(process);
                        Stats.Fail(cause!);
                        if (completed is null && cause == ServerNode.NotServing)
                        {
                            await BackOffAsync();
                        }

                        break;
                    default:
                        _history.Info(process);
                        Stats.Indeterminate++;
                        break;
                }

                Trace.Add($"p{process} {outcome}{(cause is null ? "" : " (" + cause + ")")}{(completed is null ? "" : ": " + string.Join(", ", completed.Select(m => m.ToString())))}");
            }
        }
        catch (Exception e)
        {
            Violation($"client p{process} failed: {e}");
        }
        finally
        {
            _clientsRunning--;
        }
    }

    /// <summary>
    /// Counts, once per injector step (so the counts are shares of the faulty time), what state
    /// each server and the log are in: where the time of a run goes (docs/simulation.md).
    /// </summary>
    private void Sample()
    {
        var a = Stats.Availability;
        a.Samples++;
        foreach (var s in _servers.Values)
        {
            if (s is null)
            {
                a.ServerDown++;
            }
            else if (s.Server is null)
            {
                a.ServerStarting++;
            }
            else
            {
                a.ServerServing++;
            }
        }

        var unitsDown = _units.Count(u => _live[u] is null);
        var full = _disks.Values.Any(d => d.Full);
        a.UnitDown += unitsDown > 0 ? 1 : 0;
        a.DiskFull += full ? 1 : 0;
        a.SequencerDown += _sequencer is null ? 1 : 0;
        a.Reconfiguring += _reconfiguring ? 1 : 0;
        a.Partitioned += Network.Partitions > 0 ? 1 : 0;
        a.LogImpaired += unitsDown > 0 || full || _sequencer is null || _reconfiguring ? 1 : 0;
    }

    /// <summary>After a refusal of a server that is not serving, a client waits <see cref="SimOptions.RefusalBackoff"/> to twice that (none by default).</summary>
    private Task BackOffAsync() => Options.RefusalBackoff <= TimeSpan.Zero
        ? Task.CompletedTask
        : Task.Delay(Options.RefusalBackoff + TimeSpan.FromTicks(Scheduler.Random.NextInt64(Options.RefusalBackoff.Ticks)), Scheduler.Time);

    private T Pick<T>(IReadOnlyList<T> items) => items[Scheduler.Random.Next(items.Count)];

    private TimeSpan FaultLength() => TimeSpan.FromMilliseconds(50 + Scheduler.Random.Next(500));

    private void InjectFault()
    {
        var f = Options.Faults;
        var r = Scheduler.Random;
        if (r.NextDouble() < f.Partition)
        {
            var nodes = _units.Concat(_servers.Keys).Append(SequencerName).ToList();
            var a = Pick(nodes);
            var b = Pick(nodes);
            if (a != b)
            {
                Network.Cut(a, b);
                Stats.Partitions++;
                Trace.Add($"partition {a} | {b}");
                Scheduler.After(FaultLength(), () =>
                {
                    Network.Heal(a, b);
                    Trace.Add($"healed {a} | {b}");
                });
            }
        }

        if (r.NextDouble() < f.CrashUnit)
        {
            var name = Pick(_units);
            if (_live[name] is not null)
            {
                CrashUnit(name);
                Scheduler.After(FaultLength(), () => StartUnit(name));
            }
        }

        // Tested before it draws, so that profiles without it keep their random streams.
        if (f.CrashMidWrite > 0 && r.NextDouble() < f.CrashMidWrite)
        {
            var name = Pick(_units);
            if (_live[name] is not null && _disks[name].OnNextAppend is null)
            {
                // The unit is inside its append (under its lock): crash it at once after that
                // step, before the fsync (at least 0.05 ms away) covers the slot, and tear it.
                _disks[name].OnNextAppend = () => Scheduler.After(TimeSpan.Zero, () =>
                {
                    if (_live[name] is not null && !_clientsStop)
                    {
                        Trace.Add($"{name} crashes mid-write");
                        CrashUnit(name, midWrite: true);
                        Scheduler.After(FaultLength(), () => StartUnit(name));
                    }
                });
            }
        }

        if (r.NextDouble() < f.CrashServer)
        {
            var name = Pick(_servers.Keys.ToList());
            if (_servers[name] is not null)
            {
                CrashServer(name);
                Scheduler.After(FaultLength(), () => _ = RestartServerAsync(name));
            }
        }

        if (r.NextDouble() < f.CrashSequencer && _sequencer is not null)
        {
            _sequencer = null;
            Stats.SequencerCrashes++;
            Trace.Add("sequencer crashed");
            Scheduler.After(FaultLength(), () => _ = RestartSequencerAsync());
        }

        if (r.NextDouble() < f.NewEpoch)
        {
            _ = NewEpochAsync("administrator");
        }

        if (r.NextDouble() < f.BitFlip && Options.Replicas > 1)
        {
            // Only the head of each chain has a flaky disk, and only a block with an intact durable
            // copy on another replica is hit: the log tolerates one bad copy, not a bad only copy
            // (docs/simulation.md, "findings").
            // Profile `torn` aims at a head that is down, and at its last durable slot: the slot
            // its recovery must keep as corrupt rather than cut as torn (the durable mark).
            var heads = _units.Where((_, i) => i % Options.Replicas == 0).ToList();
            var down = f.FlipLastWhileDown ? heads.Where(u => _live[u] is null).ToList() : [];
            var name = Pick(down.Count > 0 ? down : heads);
            var held = DurableBlocks();
            var disk = _disks[name];
            var durable = Math.Min(disk.Durable, disk.Slots.Count);
            var from = down.Count > 0 ? Math.Max(0, durable - 1) : 0;
            var candidates = Enumerable.Range(from, durable - from)
                .Where(i => Hyder.Log.Storage.SlotHeader.Check(disk.Slots[i], disk.BlockSize, out _, out var a, out _) == Hyder.Log.Storage.SlotCheck.Ok
                    && ChainOf(a).Any(u => u != name && held.ContainsKey((u, a))))
                .ToList();
            if (disk.FlipBit(r, candidates))
            {
                Stats.BitFlips++;
                Trace.Add($"bit flip on {name}");
            }
        }

        if (r.NextDouble() < f.FullDisk)
        {
            var disk = _disks[Pick(_units)];
            disk.Full = true;
            Stats.FullDisks++;
            Trace.Add($"{disk.Name} disk full");
            Scheduler.After(FaultLength(), () => disk.Full = false);
        }

        if (r.NextDouble() < f.SlowDisk)
        {
            var disk = _disks[Pick(_units)];
            disk.SlowSync = TimeSpan.FromMilliseconds(5 + r.Next(25));
            Trace.Add($"{disk.Name} disk slow");
            Scheduler.After(FaultLength(), () => disk.SlowSync = TimeSpan.Zero);
        }

        if (r.NextDouble() < f.Trim)
        {
            // The administrator's trim, by the rule, through a serving server (keeping 1 or 2 checkpoints).
            var serving = _servers.Values.Where(s => s?.Server is not null).Select(s => s!).ToList();
            if (serving.Count > 0)
            {
                var keep = 1 + r.Next(2);
                _ = Pick(serving).AdminTrimAsync(keep);
            }
        }

        if (r.NextDouble() < f.SlowMeld)
        {
            var name = Pick(_servers.Keys.ToList());
            _meldStalls[name] = TimeSpan.FromMilliseconds(2 + r.Next(18));
            Trace.Add($"{name} meld slow");
            Scheduler.After(FaultLength(), () => _meldStalls.Remove(name));
        }

        InjectLayoutFaults();
    }

    private async Task RestartSequencerAsync()
    {
        if (_sequencer is null)
        {
            _sequencer = new Sequencer();
            Trace.Add("sequencer up (not ready until a new epoch)");
            await NewEpochAsync("sequencer restart", wait: true);
        }
    }

    private async Task HealAllAsync()
    {
        foreach (var disk in _disks.Values)
        {
            disk.Full = false;
            disk.SlowSync = TimeSpan.Zero;
            disk.OnNextAppend = null;
        }

        _meldStalls.Clear();
        foreach (var name in _units.Where(u => _live[u] is null))
        {
            StartUnit(name);
        }

        await RestartSequencerAsync();
        foreach (var name in _servers.Keys.ToList())
        {
            await RestartServerAsync(name);
        }
    }

    /// <summary>Waits until every server melded the whole log, then checks they agree and every acknowledged block reads back.</summary>
    private async Task ConvergeAsync(long deadline)
    {
        // Settled: every server is past the last acknowledged block, and all of them have stood
        // still at the same place for 500 ms (fills are not records, so the tail itself is not a mark).
        var reader = await LogClient.ConnectAsync(_store, Network.ConnectorFor(AdminName), ClientOptions());
        var tail = await reader.TailAsync();
        var lastAcked = Invariants.Acked.Count == 0 ? -1 : Invariants.Acked.Keys.Max();
        var since = Scheduler.Now;
        var mark = "";
        while (Scheduler.Now < deadline && Failure is null)
        {
            var now = string.Join(",", _servers.Values.Select(s => s is null ? "-" : $"{s.Melded}/{s.NextPosition}"));
            if (now != mark)
            {
                mark = now;
                since = Scheduler.Now;
            }
            else if (Scheduler.Now - since > TimeSpan.FromMilliseconds(500).Ticks
                && _servers.Values.All(s => s is not null && s.NextPosition > lastAcked && s.Melded == _servers.Values.First()!.Melded))
            {
                break;
            }

            await Task.Delay(TimeSpan.FromMilliseconds(10), Scheduler.Time);
        }

        if (Failure is not null)
        {
            return;
        }

        var behind = _servers.Where(s => s.Value is null || s.Value.NextPosition <= lastAcked)
            .Select(s => $"{s.Key}{(s.Value?.Server is null ? " (not serving)" : "")}{(LastFailures.TryGetValue(s.Key, out var why) ? " (last failure: " + why + ")" : "")}")
            .ToList();
        if (behind.Count > 0)
        {
            Violation($"no progress: {string.Join(", ", behind)} did not pass the last acknowledged block @{lastAcked} (tail @{tail}) within 60 s of virtual time after the faults stopped");
            return;
        }

        var live = _servers.Values.Select(s => s!).ToList();
        Stats.Ordinals = live[0].Melded;
        Stats.ValuesReused = live.Sum(s => s.Server?.Database.Values?.Reused ?? 0);
        foreach (var s in live.Skip(1))
        {
            if (s.Melded != live[0].Melded || s.StateHash != live[0].StateHash)
            {
                Violation($"after settling, {s.Name} melded #{s.Melded} with state {s.StateHash:x16} but {live[0].Name} melded #{live[0].Melded} with state {live[0].StateHash:x16}");
                return;
            }
        }

        CheckFeatures(live);
        if (Failure is not null)
        {
            return;
        }

        // Every acknowledged append reads back with the same bytes through a fresh client.
        var buffer = new byte[Options.BlockSize];
        foreach (var (address, block) in Invariants.Acked.Where(a => a.Key >= Invariants.TrimmedBelow).OrderBy(a => a.Key))
        {
            var read = await reader.ReadAsync(address, buffer);
            if (read.Kind != LogEntryKind.Data || !buffer.AsSpan(0, read.Length).SequenceEqual(block))
            {
                Violation($"acknowledged block @{address} reads back as {read.Kind} ({read.Length} B) with other bytes");
                return;
            }
        }

        Trace.Add($"settled at tail @{tail}: {live.Count} servers at #{live[0].Melded}, state {live[0].StateHash:x16}; {Invariants.Acked.Count(a => a.Key >= Invariants.TrimmedBelow)} acknowledged blocks read back (trimmed below @{Invariants.TrimmedBelow})");
    }
}
