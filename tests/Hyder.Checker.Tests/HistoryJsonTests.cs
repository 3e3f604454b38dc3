using Hyder.Checker.Tests.Simulation;
using Xunit;
using static Hyder.Checker.Mop;

namespace Hyder.Checker.Tests;

/// <summary>Histories survive the JSON format, stored regression histories still check as recorded, and malformed input is refused.</summary>
public sealed class HistoryJsonTests
{
    [Fact]
    public void AHistoryRoundTripsThroughJson()
    {
        var h = new HistoryBuilder()
            .Invoke(0, Append(1, 5), Read(2), Write(3, 7), ReadRegister(4, null))
            .Ok(0, Append(1, 5), Read(2, 1, 2), Write(3, 7), ReadRegister(4, null))
            .Invoke(1, ReadRegister(3, null)).Info(1)
            .Failed(2, Append(-9, long.MaxValue))
            .Invoke(3, Read(1))
            .Build();
        var json = HistoryJson.Write(h);
        var back = HistoryJson.Read(json);
        Assert.Equal(json, HistoryJson.Write(back));
        Assert.Equal(h.Transactions.Select(t => t.ToString()), back.Transactions.Select(t => t.ToString()));
        Assert.Equal("T0 (p0, ok) [append 1 5, r 2 [1 2], w 3 7, rr 4 nil]", back.Transactions[0].ToString());
        Assert.Equal("T1 (p1, info) [rr 3 ?]", back.Transactions[1].ToString());
        Assert.Equal(TxnStatus.Info, back.Transactions[3].Status);
    }

    [Fact]
    public void ASimulatedHistoryRoundTripsWithTheSameVerdict()
    {
        var run = Executor.Run(new SimConfig(7, 300, 4, ExecutorMode.NoWriteConflictCheck, new WorkloadOptions { ActiveKeys = 3 }));
        var back = HistoryJson.Read(HistoryJson.Write(run.History));
        var a = HistoryChecker.Check(run.History);
        var b = HistoryChecker.Check(back);
        Assert.False(a.Valid);
        Assert.Equal(a.Anomalies.Select(x => x.ToString()), b.Anomalies.Select(x => x.ToString()));
    }

    [Theory]
    [InlineData("write-skew.json", "G2-item", ConsistencyModel.SnapshotIsolation, true)]
    [InlineData("lost-update-lists.json", "G-single", ConsistencyModel.SnapshotIsolation, false)]
    public void StoredHistoriesCheckAsRecorded(string file, string anomaly, ConsistencyModel model, bool valid)
    {
        var h = HistoryJson.Load(Path.Combine(AppContext.BaseDirectory, "Histories", file));
        var r = HistoryChecker.Check(h, new CheckOptions { Model = model });
        Assert.Contains(anomaly, r.Names);
        Assert.Equal(valid, r.Valid);
    }

    [Theory]
    [InlineData("not json")]
    [InlineData("{\"ops\":[{\"process\":0,\"type\":\"start\",\"txn\":[]}]}")]
    [InlineData("{\"ops\":[{\"process\":0,\"type\":\"invoke\",\"txn\":[[\"cas\",1,2]]}]}")]
    [InlineData("{\"ops\":[{\"process\":0,\"type\":\"invoke\",\"txn\":[[\"append\",1]]}]}")]
    [InlineData("{\"format\":\"edn\",\"ops\":[]}")]
    [InlineData("{\"version\":2,\"ops\":[]}")]
    public void MalformedJsonIsRefused(string json) => Assert.Throws<InvalidHistoryException>(() => HistoryJson.Read(json));

    [Fact]
    public void MalformedHistoriesAreRefused()
    {
        var twice = new HistoryBuilder().Txn(0, Append(1, 1)).Txn(1, Append(1, 1)).Build();
        Assert.Contains("value 1 is written by T0 and by T1", Assert.Throws<InvalidHistoryException>(() => HistoryChecker.Check(twice)).Message, StringComparison.Ordinal);
        var orphan = new History([new Op(0, OpType.Ok, [])]);
        Assert.Throws<InvalidHistoryException>(() => orphan.Transactions);
        var doubleInvoke = new History([new Op(0, OpType.Invoke, []), new Op(0, OpType.Invoke, [])]);
        Assert.Throws<InvalidHistoryException>(() => doubleInvoke.Transactions);
    }
}
