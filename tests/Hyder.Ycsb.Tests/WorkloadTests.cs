using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Workloads;
using Xunit;

namespace Hyder.Ycsb.Tests;

public class WorkloadTests
{
    private const int Transactions = 100_000;

    [Theory]
    [InlineData('a', 0.5, 0.5, 0, 0, 0)]
    [InlineData('b', 0.95, 0.05, 0, 0, 0)]
    [InlineData('c', 1, 0, 0, 0, 0)]
    [InlineData('d', 0.95, 0, 0.05, 0, 0)]
    [InlineData('e', 0, 0, 0.05, 0.95, 0)]
    [InlineData('f', 0.5, 0, 0, 0, 0.5)]
    public void CoreWorkloadsDrawYcsbsProportions(char letter, double read, double update, double insert, double scan, double rmw)
    {
        var workload = new CoreWorkload(letter.ToString(), CoreMix.Preset(letter), 10_000, 100, new DistributionSettings(), IsolationLevel.Serializable);
        var source = workload.CreateSource(1, 0);
        var plan = new TransactionPlan();
        var counts = new Dictionary<OperationKind, int>();
        long scanLengths = 0;
        for (var i = 0; i < Transactions; i++)
        {
            Assert.True(source.TryNext(plan));
            var operation = Assert.Single(plan.Operations);
            counts[operation.Kind] = counts.GetValueOrDefault(operation.Kind) + 1;
            Assert.InRange(operation.Key, 0, workload.Keys(0).Count - 1);
            if (operation.Kind == OperationKind.Scan)
            {
                Assert.InRange(operation.Count, 1, 100);
                scanLengths += operation.Count;
            }
        }

        double Share(OperationKind kind) => counts.GetValueOrDefault(kind) / (double)Transactions;
        Assert.Equal(read, Share(OperationKind.Read), 0.01);
        Assert.Equal(update, Share(OperationKind.Update), 0.01);
        Assert.Equal(insert, Share(OperationKind.Insert), 0.01);
        Assert.Equal(scan, Share(OperationKind.Scan), 0.01);
        Assert.Equal(rmw, Share(OperationKind.ReadModifyWrite), 0.01);
        Assert.Equal(10_000 + counts.GetValueOrDefault(OperationKind.Insert), workload.Keys(0).Count);
        if (scan > 0)
        {
            Assert.Equal(50.5, scanLengths / (double)counts[OperationKind.Scan], 0.5);
        }

        Assert.Equal(letter == 'd' ? Distribution.Latest : Distribution.Zipfian, CoreMix.Preset(letter).Distribution);
    }

    [Fact]
    public void TransactionalWorkloadReadsThenWritesAndHonoursTheReadOnlyShare()
    {
        var workload = new TransactionalWorkload(1_000, 8, 2, 0.25, Distribution.Uniform, new DistributionSettings(), IsolationLevel.Snapshot);
        var source = workload.CreateSource(2, 0);
        var plan = new TransactionPlan();
        var readOnly = 0;
        for (var i = 0; i < 40_000; i++)
        {
            source.TryNext(plan);
            Assert.Equal(IsolationLevel.Snapshot, plan.Isolation);
            Assert.All(plan.Operations.Take(8), o => Assert.Equal(OperationKind.Read, o.Kind));
            if (plan.ReadOnly)
            {
                readOnly++;
                Assert.Equal(8, plan.Operations.Count);
            }
            else
            {
                Assert.Equal(10, plan.Operations.Count);
                Assert.All(plan.Operations.Skip(8), o => Assert.Equal(OperationKind.Update, o.Kind));
            }
        }

        Assert.Equal(0.25, readOnly / 40_000.0, 0.01);
    }

    [Fact]
    public void Incr1SendsItsHotShareToKeyZero()
    {
        var workload = new Incr1Workload(1_000_000, 0.3, IsolationLevel.Serializable);
        var source = workload.CreateSource(3, 0);
        var plan = new TransactionPlan();
        var hot = 0;
        for (var i = 0; i < Transactions; i++)
        {
            source.TryNext(plan);
            var add = Assert.Single(plan.Operations);
            Assert.Equal(OperationKind.Add, add.Kind);
            Assert.Equal(1, add.Count);
            hot += add.Key == 0 ? 1 : 0;
        }

        Assert.Equal(0.3, hot / (double)Transactions, 0.01);
    }

    [Fact]
    public void LikeWritesIncrementThePageAndUpdateTheUserAndReadsReadBoth()
    {
        var workload = new LikeWorkload(10_000, 10_000, 1.4, 0.5, IsolationLevel.Serializable);
        var source = workload.CreateSource(4, 0);
        var plan = new TransactionPlan();
        int writes = 0, topPage = 0;
        for (var i = 0; i < Transactions; i++)
        {
            source.TryNext(plan);
            Assert.Equal(2, plan.Operations.Count);
            var page = plan.Operations.Single(o => o.Space == 1);
            var user = plan.Operations.Single(o => o.Space == 0);
            topPage += page.Key == 0 ? 1 : 0;
            if (plan.ReadOnly)
            {
                Assert.Equal(OperationKind.Read, page.Kind);
                Assert.Equal(OperationKind.Read, user.Kind);
            }
            else
            {
                writes++;
                Assert.Equal(OperationKind.Add, page.Kind);
                Assert.Equal(OperationKind.Update, user.Kind);
            }
        }

        Assert.Equal(0.5, writes / (double)Transactions, 0.01);
        Assert.InRange(topPage / (double)Transactions, 0.30, 0.36);
    }

    [Fact]
    public void StockOrdersTakeDownToZeroRestocksFillUpToTheCapAndReadsCheckBoth()
    {
        var workload = new StockWorkload(1_000, 0.99, 40, 0.8, 0.25, IsolationLevel.Serializable);
        var source = workload.CreateSource(4, 0);
        var plan = new TransactionPlan();
        int orders = 0, restocks = 0, reads = 0;
        for (var i = 0; i < Transactions; i++)
        {
            source.TryNext(plan);
            var op = Assert.Single(plan.Operations);
            Assert.InRange(op.Key, 0, 999);
            switch (op.Kind)
            {
                case OperationKind.Read:
                    reads++;
                    Assert.True(plan.ReadOnly);
                    Assert.Equal((0L, 40L), (op.Min, op.Max));
                    break;
                case OperationKind.Add when op.Count < 0:
                    orders++;
                    Assert.InRange(op.Count, -5, -1);
                    Assert.Equal((0L, (long?)null), (op.Min, op.Max));
                    break;
                default:
                    restocks++;
                    Assert.Equal(OperationKind.Add, op.Kind);
                    Assert.InRange(op.Count, 1, 20);
                    Assert.Equal(((long?)null, 40L), (op.Min, op.Max));
                    break;
            }
        }

        Assert.Equal(0.2, reads / (double)Transactions, 0.01);
        Assert.Equal(0.25, restocks / (double)(restocks + orders), 0.015);
        Assert.Throws<ArgumentOutOfRangeException>(() => new StockWorkload(10, 0.99, 1, 0.5, 0.1, IsolationLevel.Serializable));
    }

    [Fact]
    public void OneWorkerSourceIsDeterminedByTheSeed()
    {
        static List<Operation> Plans(ulong seed)
        {
            var workload = new CoreWorkload("a", CoreMix.Preset('a'), 1_000, 100, new DistributionSettings(), IsolationLevel.Serializable);
            var source = workload.CreateSource(seed, 0);
            var plan = new TransactionPlan();
            var all = new List<Operation>();
            for (var i = 0; i < 1_000; i++)
            {
                source.TryNext(plan);
                all.AddRange(plan.Operations);
            }

            return all;
        }

        Assert.Equal(Plans(9), Plans(9));
        Assert.NotEqual(Plans(9), Plans(10));
    }

    [Fact]
    public void HashedKeysAreDistinctAndOrderedKeysKeepNumberOrder()
    {
        foreach (var size in new[] { 4, 8, 16 })
        {
            var hashed = new KeyCodec(size, hashed: true);
            var ordered = new KeyCodec(size, hashed: false);
            var seen = new HashSet<string>();
            byte[]? previous = null;
            for (long n = 0; n < 50_000; n++)
            {
                Assert.True(seen.Add(Convert.ToHexString(hashed.Encode(n))));
                var key = ordered.Encode(n);
                Assert.Equal(size, key.Length);
                if (previous is not null)
                {
                    Assert.True(previous.AsSpan().SequenceCompareTo(key) < 0);
                }

                previous = key;
            }
        }

        Assert.Throws<ArgumentOutOfRangeException>(() => new KeyCodec(4, true).Encode(1L << 32));
    }

    [Fact]
    public void OperationKindsMapOntoTheirLatencySeries()
    {
        foreach (var kind in Enum.GetValues<OperationKind>())
        {
            Assert.Equal(kind.ToString(), ((Series)(int)kind).ToString());
        }
    }
}
