using Hyder.Log.Client;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Hyder.Simulation.Runtime;

namespace Hyder.Simulation.Faults;

/// <summary>
/// The simulated network between named nodes. A call is a request message and a reply message,
/// each delayed 0.05-1 ms (5-50 ms when slow, which reorders it), lost, or (requests) delivered
/// twice, per the fault profile. A caller whose request or reply is lost, whose peer is down or
/// cut off by a partition, sees <see cref="UnitUnreachableException"/> after the request timeout,
/// as over TCP; a peer that is down refuses at once (connection refused).
/// </summary>
public sealed class SimNetwork(SimScheduler scheduler, FaultProfile faults, Trace trace)
{
    /// <summary>How long a caller waits for a reply before treating the peer as failed.</summary>
    public static readonly TimeSpan RequestTimeout = TimeSpan.FromMilliseconds(100);

    private readonly HashSet<(string, string)> _cuts = [];
    private readonly Dictionary<string, Func<object?>> _targets = new(StringComparer.Ordinal);

    /// <summary>Messages lost so far.</summary>
    public int Lost { get; private set; }

    /// <summary>Requests delivered twice so far.</summary>
    public int Duplicated { get; private set; }

    /// <summary>Whether faults apply (off while the run settles at the end).</summary>
    public bool FaultsOn { get; set; } = true;

    /// <summary>Registers the node <paramref name="name"/>: <paramref name="target"/> answers its live object, or null while it is down.</summary>
    public void Register(string name, Func<object?> target) => _targets[name] = target;

    /// <summary>Pairs of nodes cut apart now.</summary>
    public int Partitions => _cuts.Count / 2;

    /// <summary>Cuts <paramref name="a"/> and <paramref name="b"/> apart.</summary>
    public void Cut(string a, string b)
    {
        _cuts.Add((a, b));
        _cuts.Add((b, a));
    }

    /// <summary>Heals the cut between <paramref name="a"/> and <paramref name="b"/>.</summary>
    public void Heal(string a, string b)
    {
        _cuts.Remove((a, b));
        _cuts.Remove((b, a));
    }

    /// <summary>Whether <paramref name="a"/> and <paramref name="b"/> are cut apart now.</summary>
    public bool IsCut(string a, string b) => _cuts.Contains((a, b));

    /// <summary>Heals every partition.</summary>
    public void HealAll() => _cuts.Clear();

    /// <summary>A connector for the node <paramref name="from"/>.</summary>
    public ILogConnector ConnectorFor(string from) => new Connector(this, from);

    private TimeSpan Delay()
    {
        var r = scheduler.Random;
        return FaultsOn && r.NextDouble() < faults.SlowMessage
            ? TimeSpan.FromTicks(50_000 + r.Next(450_000))
            : TimeSpan.FromTicks(500 + r.Next(9_500));
    }

    private bool Drop()
    {
        if (FaultsOn && scheduler.Random.NextDouble() < faults.Loss)
        {
            Lost++;
            return true;
        }

        return false;
    }

    /// <summary>
    /// One call from <paramref name="from"/> to <paramref name="to"/>: <paramref name="invoke"/>
    /// runs on the target's live object at delivery; <paramref name="deliver"/> hands the answer
    /// to the caller (and copies what it must) when the reply arrives in time.
    /// </summary>
    internal Task<TReply> Call<TTarget, TReply>(string from, string to, string what, Func<TTarget, ValueTask<TReply>> invoke, Action<TReply>? deliver = null)
        where TTarget : class
    {
        var answer = new TaskCompletionSource<TReply>();
        var timeout = scheduler.Time.CreateTimer(
            static s => ((Action)s!)(),
            (Action)(() => answer.TrySetException(new UnitUnreachableException(to, new TimeoutException($"{what}: no answer within {RequestTimeout.TotalMilliseconds} ms")))),
            RequestTimeout,
            Timeout.InfiniteTimeSpan);
        _ = answer.Task.ContinueWith(_ => timeout.Dispose(), CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        if (!_targets.TryGetValue(to, out var target) || target() is null)
        {
            // Connection refused: the peer's process is down.
            scheduler.After(Delay(), () => answer.TrySetException(new UnitUnreachableException(to, new IOException("connection refused"))));
            return answer.Task;
        }

        var copies = FaultsOn && scheduler.Random.NextDouble() < faults.Duplication ? 2 : 1;
        if (copies == 2)
        {
            Duplicated++;
        }

        for (var c = 0; c < copies; c++)
        {
            if (Drop() || _cuts.Contains((from, to)))
            {
                continue;
            }

            var first = c == 0;
            scheduler.After(Delay(), () => Deliver(from, to, what, target, invoke, deliver, answer, first));
        }

        return answer.Task;
    }

    private void Deliver<TTarget, TReply>(string from, string to, string what, Func<object?> target, Func<TTarget, ValueTask<TReply>> invoke, Action<TReply>? deliver, TaskCompletionSource<TReply> answer, bool first)
        where TTarget : class
    {
        if (target() is not TTarget live)
        {
            return;
        }

        trace.Add($"deliver {what} {from}->{to}{(first ? "" : " (duplicate)")}");
        ValueTask<TReply> pending;
        try
        {
            pending = invoke(live);
        }
        catch (Exception e) when (e is IOException)
        {
            // The server fails the request (a full disk) and closes the connection.
            trace.Add($"  {to} failed: {e.Message}");
            return;
        }

        Reply(from, to, what, target, live, pending, deliver, answer).ContinueWith(
            t => trace.Add($"  reply of {what} failed: {t.Exception!.InnerException!.Message}"),
            CancellationToken.None,
            TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default);
    }

    private async Task Reply<TTarget, TReply>(string from, string to, string what, Func<object?> target, TTarget live, ValueTask<TReply> pending, Action<TReply>? deliver, TaskCompletionSource<TReply> answer)
        where TTarget : class
    {
        TReply reply;
        try
        {
            reply = await pending;
        }
        catch (IOException)
        {
            return;
        }

        // A node that crashed meanwhile sends nothing; a reply may be lost or cut off.
        if (!ReferenceEquals(target(), live) || Drop() || _cuts.Contains((to, from)))
        {
            return;
        }

        scheduler.After(Delay(), () =>
        {
            if (answer.Task.IsCompleted)
            {
                return;
            }

            trace.Add($"reply {what} {to}->{from}");
            deliver?.Invoke(reply);
            answer.TrySetResult(reply);
        });
    }

    private sealed class Connector(SimNetwork network, string from) : ILogConnector
    {
        public ILogUnit Unit(string endpoint) => new UnitProxy(network, from, endpoint);

        public ISequencer Sequencer(string endpoint) => new SequencerProxy(network, from, endpoint);
    }

    private sealed class UnitProxy(SimNetwork network, string from, string to) : ILogUnit
    {
        public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
        {
            var copy = block.ToArray();
            return new(network.Call<ILogUnit, UnitReply>(from, to, $"write e{epoch} @{address}", u => u.WriteAsync(epoch, address, copy)));
        }

        public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default)
        {
            var buffer = new byte[destination.Length];
            return new(network.Call<ILogUnit, UnitReply>(
                from, to, $"read e{epoch} @{address}", u => u.ReadAsync(epoch, address, buffer),
                reply => buffer.CopyTo(destination)));
        }

        public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
            new(network.Call<ILogUnit, UnitReply>(from, to, $"fill e{epoch} @{address}", u => u.FillAsync(epoch, address)));

        public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
            new(network.Call<ILogUnit, UnitReply>(from, to, $"trim e{epoch} @{address}", u => u.TrimAsync(epoch, address)));

        public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) =>
            new(network.Call<ILogUnit, UnitReply>(from, to, $"prefix-trim e{epoch} <{before}", u => u.PrefixTrimAsync(epoch, before)));

        public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) =>
            new(network.Call<ILogUnit, UnitReply>(from, to, $"seal e{epoch}", u => u.SealAsync(epoch)));

        public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) =>
            new(network.Call<ILogUnit, UnitReply>(from, to, $"highest e{epoch}", u => u.HighestAsync(epoch)));
    }

    private sealed class SequencerProxy(SimNetwork network, string from, string to) : ISequencer
    {
        public ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default) =>
            new(network.Call<ISequencer, TokenReply>(from, to, $"token e{epoch} x{count}", s => s.NextAsync(epoch, count)));

        public ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default) =>
            new(network.Call<ISequencer, TokenReply>(from, to, $"reset e{epoch} {next}", s => s.ResetAsync(epoch, next)));
    }
}
