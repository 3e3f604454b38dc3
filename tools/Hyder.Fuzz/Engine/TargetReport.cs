using System.Globalization;

namespace Hyder.Fuzz.Engine;

/// <summary>The tally of one target's run: cases, outcomes, rejections by message, findings.</summary>
public sealed class TargetReport(string target)
{
    private readonly object _lock = new();
    private readonly Dictionary<string, long> _rejections = [];
    private readonly List<Finding> _findings = [];
    private long _cases;
    private long _successes;
    private long _rejected;
    private long _findingCount;
    private long _slow;

    /// <summary>The target's name.</summary>
    public string Target { get; } = target;

    /// <summary>Cases run.</summary>
    public long Cases => Volatile.Read(ref _cases);

    /// <summary>Cases the decoder accepted.</summary>
    public long Successes => Volatile.Read(ref _successes);

    /// <summary>Cases rejected with a documented, clear error.</summary>
    public long Rejections => Volatile.Read(ref _rejected);

    /// <summary>Cases the oracle holds something against.</summary>
    public long FindingCount => Volatile.Read(ref _findingCount);

    /// <summary>Cases over the time budget once but within it when run again (a loaded machine, not a hang).</summary>
    public long SlowCases => Volatile.Read(ref _slow);

    /// <summary>The findings kept (the first of each signature, then more up to the limit).</summary>
    public IReadOnlyList<Finding> Findings
    {
        get
        {
            lock (_lock)
            {
                return [.. _findings];
            }
        }
    }

    /// <summary>Rejections grouped by their normalized message, most frequent first.</summary>
    public IReadOnlyList<KeyValuePair<string, long>> RejectionsByMessage
    {
        get
        {
            lock (_lock)
            {
                return [.. _rejections.OrderByDescending(p => p.Value).ThenBy(p => p.Key, StringComparer.Ordinal)];
            }
        }
    }

    /// <summary>Wall time of the run.</summary>
    public TimeSpan Elapsed { get; set; }

    /// <summary>Whether the time limit ended the run before its cases.</summary>
    public bool StoppedByTime { get; set; }

    /// <summary>Counts a case.</summary>
    public void Add(CaseResult result, int maxKept)
    {
        lock (_lock)
        {
            _cases++;
            _slow += result.Slow ? 1 : 0;
            switch (result.Outcome)
            {
                case CaseOutcome.Success:
                    _successes++;
                    break;
                case CaseOutcome.Rejected:
                    _rejected++;
                    var key = Oracle.Normalize(result.Exception!);
                    _rejections[key] = _rejections.GetValueOrDefault(key) + 1;
                    break;
                default:
                    _findingCount++;
                    var finding = result.Finding!;
                    if (_findings.Count < maxKept || !_findings.Any(f => f.Signature == finding.Signature))
                    {
                        _findings.Add(finding);
                    }

                    break;
            }
        }
    }

    /// <summary>One line for the progress output.</summary>
    public string ProgressLine(TimeSpan elapsed) => string.Create(CultureInfo.InvariantCulture,
        $"  {Target}: {Cases:N0} cases in {elapsed.TotalSeconds:F0} s ({Cases / Math.Max(elapsed.TotalSeconds, 0.001):N0}/s), {Successes:N0} ok, {Rejections:N0} rejected, {FindingCount} findings{(SlowCases > 0 ? $", {SlowCases} slow once" : "")}");
}
