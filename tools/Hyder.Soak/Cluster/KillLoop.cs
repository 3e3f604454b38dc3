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

    /// <summary>Stop after this many kills (0: until cancelled).</summary>
    public int MaxKills { get; init; }
}

/// <summary>One kill and its restart.</summary>
/// <param name="Victim">The process's name.</param>
/// <param name="At">When it was killed, from the loop's start.</param>
/// <param name="Downtime">How long it stayed dead.</param>
/// <param name="Restart">How long its restart took until ready.</param>
public sealed record KillRecord(string Victim, TimeSpan At, TimeSpan Downtime, TimeSpan Restart);

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
            await victim.StartAsync(CancellationToken.None).ConfigureAwait(false);
            _log($"{clock.Elapsed.TotalSeconds,7:F1} s: {victim.Name} ready again after {restart.Elapsed.TotalSeconds:F1} s");
            lock (_gate)
            {
                _kills.Add(new KillRecord(victim.Name, at, downtime, restart.Elapsed));
            }
        }
    }

    private static TimeSpan Between(Random random, TimeSpan low, TimeSpan high) =>
        low + TimeSpan.FromTicks((long)(random.NextDouble() * Math.Max(0, (high - low).Ticks)));
}
