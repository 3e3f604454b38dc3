using System.Globalization;
using Hyder.Ycsb.Generators;

namespace Hyder.Ycsb.Workloads;

/// <summary>
/// Hyder II's workload (§6.1): each transaction reads R keys and then writes W keys of
/// <c>usertable</c>, chosen independently from the request distribution (uniform in the paper;
/// 8 reads + 2 writes by default), at one isolation level. A share of the transactions may be
/// read-only (R reads, no writes), as in the paper's 95 % read-only run (§6.2).
/// </summary>
internal sealed class TransactionalWorkload : Workload
{
    public TransactionalWorkload(long records, int reads, int writes, double readOnlyShare, Distribution distribution, DistributionSettings distributions, IsolationLevel isolation)
        : base([new KeySpace(0, "usertable", ValueKind.Bytes, records)])
    {
        if (reads < 0 || writes < 0 || reads + writes == 0)
        {
            throw new ArgumentException("A transaction needs at least one read or write, and neither count can be negative.");
        }

        if (readOnlyShare is < 0 or > 1 || double.IsNaN(readOnlyShare))
        {
            throw new ArgumentOutOfRangeException(nameof(readOnlyShare), readOnlyShare, "Must be within [0, 1].");
        }

        if (readOnlyShare > 0 && reads == 0)
        {
            throw new ArgumentException("A read-only share needs reads per transaction.", nameof(readOnlyShare));
        }

        Reads = reads;
        Writes = writes;
        ReadOnlyShare = readOnlyShare;
        Distribution = distribution;
        Distributions = distributions;
        Isolation = isolation;
    }

    public override string Name => "tx";

    public int Reads { get; }

    public int Writes { get; }

    public double ReadOnlyShare { get; }

    public Distribution Distribution { get; }

    public DistributionSettings Distributions { get; }

    public IsolationLevel Isolation { get; }

    public override string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"Hyder transactional: {Reads} reads + {Writes} writes per transaction, {ReadOnlyShare:P0} read-only, " +
        $"{Distribution.ToString().ToLowerInvariant()} keys, {Isolation}");

    public override ITransactionSource CreateSource(ulong seed, int worker) => new Source(this, Rng.ForStream(seed, (ulong)worker));

    private sealed class Source(TransactionalWorkload workload, Rng rng) : ITransactionSource
    {
        private readonly IKeyChooser _chooser = workload.Distributions.Create(workload.Distribution);
        private Rng _rng = rng;

        public bool TryNext(TransactionPlan plan)
        {
            plan.Clear();
            plan.Isolation = workload.Isolation;
            var count = workload.Keys(0).Count;
            var readOnly = workload.ReadOnlyShare > 0 && _rng.NextDouble() < workload.ReadOnlyShare;
            for (var i = 0; i < workload.Reads; i++)
            {
                plan.Operations.Add(new Operation(OperationKind.Read, 0, _chooser.Next(ref _rng, count)));
            }

            if (!readOnly)
            {
                for (var i = 0; i < workload.Writes; i++)
                {
                    plan.Operations.Add(new Operation(OperationKind.Update, 0, _chooser.Next(ref _rng, count)));
                }
            }

            plan.ReadOnly = readOnly || workload.Writes == 0;

            return true;
        }
    }
}
