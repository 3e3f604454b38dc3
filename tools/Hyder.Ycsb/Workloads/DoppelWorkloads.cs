using System.Globalization;
using Hyder.Ycsb.Generators;

namespace Hyder.Ycsb.Workloads;

/// <summary>
/// Doppel's INCR1 (OSDI 2014 §8.2): every transaction adds 1 to one counter; a share of the
/// transactions increments the single hot counter (key 0), the others a counter chosen uniformly
/// among the rest. Increments are Add operations: a target without commutative operations runs them
/// as read-modify-write, which is what makes the hot key conflict.
/// </summary>
internal sealed class Incr1Workload : Workload
{
    public Incr1Workload(long counters, double hotShare, IsolationLevel isolation)
        : base([new KeySpace(0, "counters", ValueKind.Counter, counters)])
    {
        if (counters < 2)
        {
            throw new ArgumentOutOfRangeException(nameof(counters), counters, "INCR1 needs the hot counter and at least one other.");
        }

        if (hotShare is < 0 or > 1 || double.IsNaN(hotShare))
        {
            throw new ArgumentOutOfRangeException(nameof(hotShare), hotShare, "Must be within [0, 1].");
        }

        HotShare = hotShare;
        Isolation = isolation;
    }

    public override string Name => "incr1";

    public double HotShare { get; }

    public IsolationLevel Isolation { get; }

    public override string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"Doppel INCR1: one increment per transaction, {HotShare:P0} of them on the hot counter, {Isolation}");

    public override ITransactionSource CreateSource(ulong seed, int worker) => new Source(this, Rng.ForStream(seed, (ulong)worker));

    private sealed class Source(Incr1Workload workload, Rng rng) : ITransactionSource
    {
        private Rng _rng = rng;

        public bool TryNext(TransactionPlan plan)
        {
            plan.Clear();
            plan.Isolation = workload.Isolation;
            var counters = workload.KeySpaces[0].InitialRecords;
            var key = _rng.NextDouble() < workload.HotShare ? 0 : 1 + _rng.NextInt64(counters - 1);
            plan.Operations.Add(new Operation(OperationKind.Add, 0, key, 1));

            return true;
        }
    }
}

/// <summary>
/// Doppel's LIKE (OSDI 2014 §8.4): users like pages. The user is uniform; the page follows a
/// Zipfian popularity with exponent α (1.4 in the paper, where the top page is in about a third of
/// the transactions). A write transaction adds 1 to the page's like count and updates the user's
/// row; a read transaction reads the page's count and the user's row.
/// </summary>
internal sealed class LikeWorkload : Workload
{
    private readonly ZipfTable _pages;

    public LikeWorkload(long users, long pages, double alpha, double writeShare, IsolationLevel isolation)
        : base([new KeySpace(0, "users", ValueKind.Bytes, users), new KeySpace(1, "pages", ValueKind.Counter, pages)])
    {
        if (writeShare is < 0 or > 1 || double.IsNaN(writeShare))
        {
            throw new ArgumentOutOfRangeException(nameof(writeShare), writeShare, "Must be within [0, 1].");
        }

        if (users < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(users), users, "LIKE needs at least one user.");
        }

        _pages = new ZipfTable(pages, alpha);
        WriteShare = writeShare;
        Isolation = isolation;
    }

    public override string Name => "like";

    public double Alpha => _pages.Exponent;

    public double WriteShare { get; }

    public IsolationLevel Isolation { get; }

    public override string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"Doppel LIKE: {WriteShare:P0} write transactions, pages Zipfian α = {Alpha} (top page {_pages.Probability(0):P1}), users uniform, {Isolation}");

    public override ITransactionSource CreateSource(ulong seed, int worker) => new Source(this, Rng.ForStream(seed, (ulong)worker));

    private sealed class Source(LikeWorkload workload, Rng rng) : ITransactionSource
    {
        private Rng _rng = rng;

        public bool TryNext(TransactionPlan plan)
        {
            plan.Clear();
            plan.Isolation = workload.Isolation;
            var user = _rng.NextInt64(workload.KeySpaces[0].InitialRecords);
            var page = workload._pages.Next(ref _rng);
            if (_rng.NextDouble() < workload.WriteShare)
            {
                plan.Operations.Add(new Operation(OperationKind.Add, 1, page, 1));
                plan.Operations.Add(new Operation(OperationKind.Update, 0, user));
            }
            else
            {
                plan.Operations.Add(new Operation(OperationKind.Read, 1, page));
                plan.Operations.Add(new Operation(OperationKind.Read, 0, user));
                plan.ReadOnly = true;
            }

            return true;
        }
    }
}
