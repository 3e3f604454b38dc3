using System.Text;

namespace Hyder.Simulation.Runtime;

/// <summary>
/// The run's event trace: every event line is folded into a 64-bit FNV-1a hash stamped with the
/// virtual time, so two runs of one seed can be compared by one number; the last lines are kept
/// (all of them in verbose mode) to show what led to a failure.
/// </summary>
public sealed class Trace(SimScheduler scheduler, bool verbose, TextWriter? echo = null)
{
    private const int Keep = 200;
    private readonly Queue<string> _recent = new();
    private ulong _hash = 14695981039346656037UL;

    /// <summary>The hash of every event so far.</summary>
    public ulong Hash => _hash;

    /// <summary>Events so far.</summary>
    public long Count { get; private set; }

    /// <summary>The last events (up to 200).</summary>
    public IEnumerable<string> Recent => _recent;

    /// <summary>Records one event.</summary>
    public void Add(string line)
    {
        var stamped = $"{scheduler.Now / TimeSpan.TicksPerMicrosecond,10}us #{scheduler.Steps} {line}";
        foreach (var b in Encoding.UTF8.GetBytes(stamped))
        {
            _hash = (_hash ^ b) * 1099511628211UL;
        }

        _hash = (_hash ^ 10) * 1099511628211UL;
        Count++;
        if (verbose)
        {
            echo?.WriteLine(stamped);
        }

        _recent.Enqueue(stamped);
        if (_recent.Count > Keep)
        {
            _recent.Dequeue();
        }
    }
}
