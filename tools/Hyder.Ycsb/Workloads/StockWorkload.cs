using System.Globalization;
using Hyder.Ycsb.Generators;

namespace Hyder.Ycsb.Workloads;

/// <summary>
/// Bounded stock levels (escrow; the counter with bounds of CVoltDB §5 and Doppel §4): items'
/// popularity is Zipfian. An order takes 1 to 5 units of one item as <c>Add(stock, -q, min: 0)</c>;
/// a restock (a share of the write transactions) brings 1 to cap/2 units as <c>Add(stock, +n, max: cap)</c>;
/// a read transaction reads one item's stock level, which must lie in [0, cap]. Stock starts at 0
/// (the load), so restocks fill it. An order on an empty shelf, or a restock of a full one, ends
/// with BoundViolated: a business outcome the driver counts and does not retry.
/// </summary>
internal sealed class StockWorkload : Workload
{
    private readonly ZipfTable _items;

    public StockWorkload(long items, double alpha, long cap, double writeShare, double restockShare, IsolationLevel isolation)
        : base([new KeySpace(0, "stock", ValueKind.Counter, items)])
    {
        if (cap < 2)
        {
            throw new ArgumentOutOfRangeException(nameof(cap), cap, "The stock cap must be at least 2.");
        }

        foreach (var (name, share) in new[] { (nameof(writeShare), writeShare), (nameof(restockShare), restockShare) })
        {
            if (share is < 0 or > 1 || double.IsNaN(share))
            {
                throw new ArgumentOutOfRangeException(name, share, "Must be within [0, 1].");
            }
        }

        _items = new ZipfTable(items, alpha);
        Cap = cap;
        WriteShare = writeShare;
        RestockShare = restockShare;
        Isolation = isolation;
    }

    public override string Name => "stock";

    public long Cap { get; }

    public double WriteShare { get; }

    public double RestockShare { get; }

    public IsolationLevel Isolation { get; }

    public override string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"bounded stock: {WriteShare:P0} writes ({RestockShare:P0} of them restocks of 1..{Cap / 2} up to {Cap}, the rest orders of 1..5 down to 0), items Zipfian α = {_items.Exponent} (top item {_items.Probability(0):P1}), {Isolation}");

    public override ITransactionSource CreateSource(ulong seed, int worker) => new Source(this, Rng.ForStream(seed, (ulong)worker));

    private sealed class Source(StockWorkload workload, Rng rng) : ITransactionSource
    {
        private Rng _rng = rng;

        public bool TryNext(TransactionPlan plan)
        {
            plan.Clear();
            plan.Isolation = workload.Isolation;
            var item = workload._items.Next(ref _rng);
            if (_rng.NextDouble() >= workload.WriteShare)
            {
                plan.Operations.Add(new Operation(OperationKind.Read, 0, item, Min: 0, Max: workload.Cap));
                plan.ReadOnly = true;
            }
            else if (_rng.NextDouble() < workload.RestockShare)
            {
                plan.Operations.Add(new Operation(OperationKind.Add, 0, item, 1 + _rng.NextInt64(workload.Cap / 2), Max: workload.Cap));
            }
            else
            {
                plan.Operations.Add(new Operation(OperationKind.Add, 0, item, -(1 + _rng.NextInt64(5)), Min: 0));
            }

            return true;
        }
    }
}
