using Xunit;
using Xunit.Abstractions;
using static Hyder.Checker.Mop;

namespace Hyder.Checker.Tests;

/// <summary>One hand-written history per anomaly class, each checked for exactly what it shows.</summary>
public sealed class AnomalyTests(ITestOutputHelper output)
{
    private CheckResult Check(HistoryBuilder h, ConsistencyModel model = ConsistencyModel.Serializable)
    {
        var result = HistoryChecker.Check(h.Build(), new CheckOptions { Model = model });
        output.WriteLine(result.ToString());
        return result;
    }

    [Fact]
    public void WriteCycleIsG0()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1), Append(2, 1))
            .Txn(1, Append(1, 2), Append(2, 2))
            .Txn(2, Read(1, 1, 2), Read(2, 2, 1));
        var r = Check(h, ConsistencyModel.ReadUncommitted);
        Assert.Equal([Anomalies.G0], r.Names);
        Assert.False(r.Valid);
        var g0 = r.Anomalies.Single();
        Assert.Equal([0, 1], g0.Transactions.Select(t => t.Id).Order());
        Assert.All(g0.Cycle, e => Assert.Equal(EdgeKind.WW, e.Kind));
        Assert.Equal([1L, 2L], g0.Cycle.Select(e => e.Key).Order());
    }

    [Fact]
    public void ReadingAFailedAppendIsG1a()
    {
        var h = new HistoryBuilder()
            .Failed(0, Append(1, 1))
            .Txn(1, Read(1, 1));
        var r = Check(h, ConsistencyModel.ReadCommitted);
        Assert.Equal([Anomalies.G1a], r.Names);
        Assert.False(r.Valid);
        Assert.True(r.ValidFor(ConsistencyModel.ReadUncommitted));
    }

    [Fact]
    public void ReadingAFailedRegisterWriteIsG1a()
    {
        var h = new HistoryBuilder()
            .Failed(0, Write(1, 10))
            .Txn(1, ReadRegister(1, 10));
        Assert.Equal([Anomalies.G1a], Check(h).Names);
    }

    [Fact]
    public void ReadingTheMiddleOfATransactionsAppendsIsG1b()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1), Append(1, 2))
            .Txn(1, Read(1, 1));
        var r = Check(h, ConsistencyModel.ReadCommitted);
        Assert.Contains(Anomalies.G1b, r.Names);
        Assert.False(r.Valid);
    }

    [Fact]
    public void ReadingAnOverwrittenRegisterValueIsG1b()
    {
        var h = new HistoryBuilder()
            .Txn(0, Write(1, 1), Write(1, 2))
            .Txn(1, ReadRegister(1, 1));
        Assert.Contains(Anomalies.G1b, Check(h).Names);
    }

    [Fact]
    public void CircularInformationFlowIsG1c()
    {
        // Each saw the other's append: wr both ways, no anti-dependency.
        var h = new HistoryBuilder()
            .Invoke(0, Append(1, 1), Read(2))
            .Invoke(1, Append(2, 1), Read(1))
            .Ok(0, Append(1, 1), Read(2, 1))
            .Ok(1, Append(2, 1), Read(1, 1));
        var r = Check(h, ConsistencyModel.ReadCommitted);
        Assert.Equal([Anomalies.G1c], r.Names);
        Assert.All(r.Anomalies.Single().Cycle, e => Assert.Equal(EdgeKind.WR, e.Kind));
    }

    [Fact]
    public void ReadSkewIsGSingle()
    {
        // T1 saw T0's append to list 2 but not its append to list 1.
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1), Append(2, 1))
            .Txn(1, Read(1), Read(2, 1))
            .Txn(2, Read(1, 1));
        var r = Check(h, ConsistencyModel.SnapshotIsolation);
        Assert.Equal([Anomalies.GSingle], r.Names);
        Assert.False(r.Valid);
        Assert.True(r.ValidFor(ConsistencyModel.ReadCommitted));
        var kinds = r.Anomalies.Single().Cycle.Select(e => e.Kind).Order().ToArray();
        Assert.Equal([EdgeKind.WR, EdgeKind.RW], kinds);
    }

    [Fact]
    public void RegisterReadSkewIsGSingle()
    {
        // T1 read x before T0's write (nil) but y after it.
        var h = new HistoryBuilder()
            .Txn(0, Write(1, 1), Write(2, 1))
            .Txn(1, ReadRegister(1, null), ReadRegister(2, 1));
        Assert.Equal([Anomalies.GSingle], Check(h).Names);
    }

    [Fact]
    public void WriteSkewIsG2ItemAllowedBySnapshotIsolationOnly()
    {
        var h = new HistoryBuilder()
            .Invoke(0, Read(1), Read(2), Append(1, 1))
            .Invoke(1, Read(1), Read(2), Append(2, 1))
            .Ok(0, Read(1), Read(2), Append(1, 1))
            .Ok(1, Read(1), Read(2), Append(2, 1))
            .Txn(2, Read(1, 1), Read(2, 1));
        var r = Check(h, ConsistencyModel.SnapshotIsolation);
        Assert.Equal([Anomalies.G2Item], r.Names);
        Assert.True(r.Valid);
        Assert.False(r.ValidFor(ConsistencyModel.Serializable));
        Assert.False(r.ValidFor(ConsistencyModel.RepeatableRead));
        Assert.All(r.Anomalies.Single().Cycle, e => Assert.Equal(EdgeKind.RW, e.Kind));
    }

    [Fact]
    public void AntiDependenciesThatAreNotAdjacentAreGNonadjacentWhichSnapshotIsolationForbids()
    {
        // T0 -rw-> T1 -wr-> T2 -rw-> T3 -wr-> T0: two anti-dependencies, never consecutive.
        var h = new HistoryBuilder()
            .Invoke(0, Read(1), Read(4))
            .Txn(1, Append(1, 1), Append(2, 1))
            .Txn(2, Read(2, 1), Read(3))
            .Txn(3, Append(3, 1), Append(4, 1))
            .Ok(0, Read(1), Read(4, 1))
            .Txn(4, Read(1, 1), Read(3, 1));
        var r = Check(h, ConsistencyModel.SnapshotIsolation);
        Assert.Equal([Anomalies.GNonadjacent, Anomalies.G2Item], r.Names);
        Assert.False(r.Valid);
        Assert.True(r.ValidFor(ConsistencyModel.ReadCommitted));
        var cycle = r.Anomalies.Single(a => a.Name == Anomalies.GNonadjacent).Cycle;
        Assert.Equal(4, cycle.Count);
        for (var i = 0; i < cycle.Count; i++)
        {
            Assert.False(cycle[i].Kind == EdgeKind.RW && cycle[(i + 1) % cycle.Count].Kind == EdgeKind.RW);
        }
    }

    [Fact]
    public void RegisterWriteSkewPassesSnapshotIsolationAndFailsSerializable()
    {
        var h = new HistoryBuilder()
            .Invoke(0, ReadRegister(1, null), ReadRegister(2, null), Write(1, 1))
            .Invoke(1, ReadRegister(1, null), ReadRegister(2, null), Write(2, 1))
            .Ok(0, ReadRegister(1, null), ReadRegister(2, null), Write(1, 1))
            .Ok(1, ReadRegister(1, null), ReadRegister(2, null), Write(2, 1));
        Assert.True(Check(h, ConsistencyModel.SnapshotIsolation).Valid);
        var serializable = Check(h);
        Assert.False(serializable.Valid);
        Assert.Equal([Anomalies.G2Item], serializable.Names);
    }

    [Fact]
    public void LostUpdateIsCaughtWithOrWithoutTheVersionOrder()
    {
        // Both read nil and wrote. From reads alone the cycle has two anti-dependencies, but two
        // writers of one read version are a lost update in any version order; the log's order
        // (1 then 2) shows the G-single itself: T1 overwrote T0 without seeing it.
        var h = new HistoryBuilder()
            .Invoke(0, ReadRegister(1, null), Write(1, 1))
            .Invoke(1, ReadRegister(1, null), Write(1, 2))
            .Ok(0, ReadRegister(1, null), Write(1, 1))
            .Ok(1, ReadRegister(1, null), Write(1, 2));
        var plain = Check(h, ConsistencyModel.SnapshotIsolation);
        Assert.Equal([Anomalies.G2Item, Anomalies.LostUpdate], plain.Names);
        Assert.False(plain.Valid);
        Assert.True(plain.ValidFor(ConsistencyModel.ReadCommitted));
        var order = new Dictionary<long, IReadOnlyList<long>> { [1] = [1, 2] };
        var r = HistoryChecker.Check(h.Build(), new CheckOptions { Model = ConsistencyModel.SnapshotIsolation, RegisterVersionOrder = order });
        output.WriteLine(r.ToString());
        Assert.Contains(Anomalies.GSingle, r.Names);
        Assert.False(r.Valid);
    }

    [Fact]
    public void ReadsThatAreNotPrefixesOfOneOrderAreIncompatible()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1))
            .Txn(1, Append(1, 2))
            .Txn(2, Read(1, 1, 2))
            .Txn(3, Read(1, 2));
        var r = Check(h, ConsistencyModel.ReadUncommitted);
        Assert.Contains(Anomalies.IncompatibleOrder, r.Names);
        Assert.False(r.Valid);
    }

    [Fact]
    public void ValuesNobodyWroteAreGarbage()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1))
            .Txn(1, Read(1, 1, 9))
            .Txn(2, ReadRegister(5, 77));
        var r = Check(h, ConsistencyModel.ReadUncommitted);
        Assert.Equal(2, r.Anomalies.Count(a => a.Name == Anomalies.GarbageRead));
        Assert.False(r.Valid);
    }

    [Fact]
    public void ATransactionThatDoesNotSeeItsOwnWritesIsInternallyInconsistent()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1), Read(1))
            .Txn(1, Read(2), Append(2, 5), Read(2, 6, 5))
            .Txn(2, Write(3, 1), ReadRegister(3, null));
        var r = Check(h, ConsistencyModel.ReadUncommitted);
        Assert.Equal(3, r.Anomalies.Count(a => a.Name == Anomalies.Internal));
        Assert.Equal([0, 1, 2], r.Anomalies.Where(a => a.Name == Anomalies.Internal).Select(a => a.Transactions.Single().Id));
    }

    [Fact]
    public void AnElementReadTwiceIsADuplicate()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1))
            .Txn(1, Read(1, 1, 1));
        Assert.Contains(Anomalies.DuplicateElements, Check(h).Names);
    }

    [Fact]
    public void SerialHistoriesPass()
    {
        var h = new HistoryBuilder()
            .Txn(0, Read(1), Append(1, 1), Write(7, 1))
            .Txn(1, Read(1, 1), Append(1, 2), Append(2, 1), ReadRegister(7, 1), Write(7, 2))
            .Txn(2, Read(2, 1), Read(1, 1, 2), ReadRegister(7, 2))
            .Invoke(0, Append(2, 2), Read(2))
            .Invoke(1, Read(1), ReadRegister(7, null))
            .Ok(1, Read(1, 1, 2), ReadRegister(7, 2))
            .Ok(0, Append(2, 2), Read(2, 1, 2))
            .Failed(2, Append(1, 3))
            .Txn(2, Read(1, 1, 2), Read(2, 1, 2));
        var r = Check(h, ConsistencyModel.StrictSerializable);
        Assert.Empty(r.Anomalies);
        Assert.True(r.Valid);
    }

    [Fact]
    public void AnIndeterminateAppendThatWasReadCommitted()
    {
        var h = new HistoryBuilder()
            .Invoke(0, Append(1, 1)).Info(0)
            .Txn(1, Read(1, 1))
            .Invoke(2, Append(1, 2));
        Assert.Empty(Check(h, ConsistencyModel.StrictSerializable).Anomalies);
    }

    [Fact]
    public void AStaleReadIsOnlyARealtimeAnomaly()
    {
        // T0 committed before T1 began, yet T1 did not see it: serializable (T1 first), not strict.
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1))
            .Txn(1, Read(1))
            .Txn(2, Read(1, 1));
        Assert.True(Check(h).Valid);
        var strict = Check(h, ConsistencyModel.StrictSerializable);
        Assert.Equal([Anomalies.Realtime(Anomalies.GSingle)], strict.Names);
        Assert.False(strict.Valid);
        Assert.Contains(strict.Anomalies.Single().Cycle, e => e.Kind == EdgeKind.Realtime);
    }

    [Fact]
    public void TheReportNamesTransactionsEdgesAndKeys()
    {
        var h = new HistoryBuilder()
            .Txn(0, Append(1, 1), Append(2, 1))
            .Txn(1, Read(1), Read(2, 1))
            .Txn(2, Read(1, 1));
        var text = Check(h).ToString();
        Assert.StartsWith("INVALID for Serializable", text, StringComparison.Ordinal);
        Assert.Contains("G-single: 1 (forbidden)", text, StringComparison.Ordinal);
        Assert.Contains("T1 -rw-> T0: T1 read list 1 as empty and missed 1, appended next by T0", text, StringComparison.Ordinal);
        Assert.Contains("T0 -wr-> T1: T1 read list 2 up to 1, which T0 appended", text, StringComparison.Ordinal);
    }
}
