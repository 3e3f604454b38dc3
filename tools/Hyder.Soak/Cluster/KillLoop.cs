using System.Diagnostics;

namespace Hyder.Soak.Cluster;

/// <summary>How a <see cref="KillLoop"/> picks its moments.</summary>
public sealed record KillLoopOptions
{
    /// <summary>The seed of every random choice (victim, wait, downtime).</summary>
    public int Seed { get; init; }

    /// <summary>Least time between a restart and the next kill.</summary>
    public TimeSpan MinInterval { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>Most time between a restart and the next kill.</summary>
    public TimeSpan MaxInterval { get; init; } = TimeSpan.FromSeconds(4);

    /// <summary>Least time a victim stays dead.</summary>
    public TimeSpan MinDowntime { get; init; } = TimeSpan.FromMilliseconds(100);

    /// <summary>Most time a victim stays dead.</summary>
    public TimeSpan MaxDowntime { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Starts tried before a restart counts as failed (the loop then throws). More than 1 when the
    /// log is trimmed under the victims: a server that restarts behind the trim exits and asks to be
    /// started again (docs/server.md, "A server behind the trim"), as a supervisor would.
    /// </summary>
    public int StartAttempts { get; init; } = 1;

    /// <summary>Stop after this many kills (0: until cancelled).</summary>
    public int MaxKills { get; init; }
}

/// <summary>One kill and its restart.</summary>
/// <param name="Victim">The process's name.</param>
/// <param name="At">When it was killed, from the loop's start.</param>
/// <param name="Downtime">How long it stayed dead.</param>
/// <param name="Restart">How long its restart took until ready.</param>
/// <param name="Starts">Starts it took (more than 1 when a start failed, <see cref="KillLoopOptions.StartAttempts"/>).</param>
public sealed record KillRecord(string Victim, TimeSpan At, TimeSpan Downtime, TimeSpan Restart, int Starts = 1);

/// <summary>
/// Kills processes with SIGKILL at random (seeded) moments, one at a time, and starts each again
/// at the same address after a random downtime. Only the given victims are killed.
/// </summary>
public sealed class KillLoop
{
    private readonly IReadOnlyList<ClusterProcess> _victims;
    private readonly KillLoopOptions _options;
    private readonly Action<string> _log;
    private readonly List<KillRecord> _kills = [];
    private readonly Lock _gate = new();

    /// <summary>Creates the loop.</summary>
    public KillLoop(IReadOnlyList<ClusterProcess> victims, KillLoopOptions options, Action<string>? log = null)
    {
        if (victims.Count == 0)
        {
            throw new ArgumentException("no victims", nameof(victims));
        }

        _victims = victims;
        _options = options;
        _log = log ?? (_ => { });
    }

    /// <summary>The kills so far (each restarted).</summary>
    public IReadOnlyList<KillRecord> Kills
    {
        get
        {
            lock (_gate)
            {
                return _kills.ToArray();
            }
        }
    }

    /// <summary>Kills and restarts until <paramref name="stop"/> or <see cref="KillLoopOptions.MaxKills"/>; a victim killed when the stop comes is restarted before this returns.</summary>
    public async Task RunAsync(CancellationToken stop)
    {
        var random = new Random(_options.Seed);
        var clock = Stopwatch.StartNew();
        while (!stop.IsCancellationRequested && (_options.MaxKills == 0 || Kills.Count < _options.MaxKills))
        {
            try
            {
                await Task.Delay(Between(random, _options.MinInterval, _options.MaxInterval), stop).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            var victim = _victims[random.Next(_victims.Count)];
            var downtime = Between(random, _options.MinDowntime, _options.MaxDowntime);
            var at = clock.Elapsed;
            victim.Kill();
            _log($"{at.TotalSeconds,7:F1} s: SIGKILL {victim.Name}; restart in {downtime.TotalMilliseconds:F0} ms");
            await Task.Delay(downtime, CancellationToken.None).ConfigureAwait(false);
            var restart = Stopwatch.StartNew();
            var starts = 0;
            while (true)
            {
                starts++;
                try
                {
                    await victim.StartAsync(CancellationToken.None).ConfigureAwait(false);
                    break;
                }
                catch (InvalidOperationException e) when (starts < _options.StartAttempts)
                {
                    _log($"{clock.Elapsed.TotalSeconds,7:F1} s: {victim.Name} did not start (attempt {starts} of {_options.StartAttempts}), starting it again: {e.Message.Split('\n')[^1].Trim()}");
                }
            }

            _log($"{clock.Elapsed.TotalSeconds,7:F1} s: {victim.Name} ready again after {restart.Elapsed.TotalSeconds:F1} s{(starts > 1 ? $" and {starts} starts" : "")}");
            lock (_gate)
            {
                _kills.Add(new KillRecord(victim.Name, at, downtime, restart.Elapsed, starts));
            }
        }
    }

    private static TimeSpan Between(Random random, TimeSpan low, TimeSpan high) =>
        low + TimeSpan.FromTicks((long)(random.NextDouble() * Math.Max(0, (high - low).Ticks)));
}
