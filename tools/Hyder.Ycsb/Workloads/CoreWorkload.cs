using System.Globalization;
using Hyder.Ycsb.Generators;

namespace Hyder.Ycsb.Workloads;

/// <summary>The proportions and request distribution of a YCSB core workload.</summary>
internal sealed record CoreMix(
    double Read,
    double Update,
    double Insert,
    double Scan,
    double ReadModifyWrite,
    Distribution Distribution)
{
    /// <summary>
    /// YCSB's workload files A–F (workloads/workloada … workloadf in the YCSB repository):
    /// A update heavy 50/50 read/update, zipfian; B read mostly 95/5 read/update, zipfian;
    /// C read only, zipfian; D read latest 95/5 read/insert, latest; E short ranges 95/5 scan/insert,
    /// zipfian, scan length uniform in 1..100; F read-modify-write 50/50 read/RMW, zipfian.
    /// </summary>
    public static CoreMix Preset(char letter) => char.ToLowerInvariant(letter) switch
    {
        'a' => new(0.5, 0.5, 0, 0, 0, Distribution.Zipfian),
        'b' => new(0.95, 0.05, 0, 0, 0, Distribution.Zipfian),
        'c' => new(1, 0, 0, 0, 0, Distribution.Zipfian),
        'd' => new(0.95, 0, 0.05, 0, 0, Distribution.Latest),
        'e' => new(0, 0, 0.05, 0.95, 0, Distribution.Zipfian),
        'f' => new(0.5, 0, 0, 0, 0.5, Distribution.Zipfian),
        _ => throw new ArgumentOutOfRangeException(nameof(letter), letter, "YCSB's core workloads are a to f."),
    };
}

/// <summary>
/// YCSB's CoreWorkload: every transaction is one operation (read, update, insert, scan or
/// read-modify-write) on <c>usertable</c>, drawn with the mix's proportions; keys come from the
/// request distribution; inserts take fresh key numbers.
/// </summary>
internal sealed class CoreWorkload : Workload
{
    private readonly double[] _cumulative;

    public CoreWorkload(string name, CoreMix mix, long records, int maxScanLength, DistributionSettings distributions, IsolationLevel isolation)
        : base([new KeySpace(0, "usertable", ValueKind.Bytes, records)])
    {
        double[] weights = [mix.Read, mix.Update, mix.Insert, mix.Scan, mix.ReadModifyWrite];
        var total = weights.Sum();
        if (weights.Any(w => w < 0) || !(total > 0))
        {
            throw new ArgumentException("Operation proportions must be non-negative and not all zero.", nameof(mix));
        }

        if (maxScanLength < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(maxScanLength), maxScanLength, "Scans need a length of at least 1.");
        }

        _cumulative = new double[weights.Length];
        var sum = 0.0;
        for (var i = 0; i < weights.Length; i++)
        {
            sum += weights[i] / total;
            _cumulative[i] = sum;
        }

        // From the last kind with a weight on, exactly 1: rounding never picks a kind of weight 0.
        for (var i = Array.FindLastIndex(weights, w => w > 0); i < weights.Length; i++)
        {
            _cumulative[i] = 1;
        }

        Name = name;
        Mix = mix;
        MaxScanLength = maxScanLength;
        Distributions = distributions;
        Isolation = isolation;
    }

    public override string Name { get; }

    public CoreMix Mix { get; }

    public int MaxScanLength { get; }

    public DistributionSettings Distributions { get; }

    public IsolationLevel Isolation { get; }

    public override string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"YCSB core {Name}: read {Mix.Read} update {Mix.Update} insert {Mix.Insert} scan {Mix.Scan} read-modify-write {Mix.ReadModifyWrite}, " +
        $"{Mix.Distribution.ToString().ToLowerInvariant()} keys, scans of 1..{MaxScanLength}, one operation per transaction, {Isolation}");

    public override ITransactionSource CreateSource(ulong seed, int worker) => new Source(this, Rng.ForStream(seed, (ulong)worker));

    private sealed class Source(CoreWorkload workload, Rng rng) : ITransactionSource
    {
        private readonly IKeyChooser _chooser = workload.Distributions.Create(workload.Mix.Distribution);
        private Rng _rng = rng;

        public bool TryNext(TransactionPlan plan)
        {
            plan.Clear();
            plan.Isolation = workload.Isolation;
            var keys = workload.Keys(0);
            var u = _rng.NextDouble();
            var kind = u < workload._cumulative[0] ? OperationKind.Read
                : u < workload._cumulative[1] ? OperationKind.Update
                : u < workload._cumulative[2] ? OperationKind.Insert
                : u < workload._cumulative[3] ? OperationKind.Scan
                : OperationKind.ReadModifyWrite;
            switch (kind)
            {
                case OperationKind.Insert:
                    plan.Operations.Add(new Operation(OperationKind.Insert, 0, keys.Allocate()));
                    break;
                case OperationKind.Scan:
                    var start = _chooser.Next(ref _rng, keys.Count);
                    plan.Operations.Add(new Operation(OperationKind.Scan, 0, start, 1 + _rng.NextInt64(workload.MaxScanLength)));
                    plan.ReadOnly = true;
                    break;
                default:
                    plan.Operations.Add(new Operation(kind, 0, _chooser.Next(ref _rng, keys.Count)));
                    plan.ReadOnly = kind == OperationKind.Read;
                    break;
            }

            return true;
        }
    }
}
