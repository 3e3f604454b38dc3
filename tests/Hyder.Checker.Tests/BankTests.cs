using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Hyder.Checker.Tests.Simulation;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Checker.Mop;

namespace Hyder.Checker.Tests;

/// <summary>The bank workload: hand-written violations, and simulated banks correct and broken.</summary>
public sealed class BankTests(ITestOutputHelper output)
{
    private static readonly long[] s_accounts = [0, 1, 2];

    [Fact]
    public void ReadsThatSeeTheTotalPass()
    {
        var h = new HistoryBuilder()
            .Txn(0, Write(0, 10), Write(1, 10), Write(2, 10))
            .Txn(1, ReadRegister(0, 10), ReadRegister(1, 10), Write(0, 7), Write(1, 13))
            .Txn(0, ReadRegister(0, 7), ReadRegister(1, 13), ReadRegister(2, 10));
        var r = BankChecker.Check(h.Build(), s_accounts, 30);
        output.WriteLine(r.ToString());
        Assert.True(r.Valid);
        Assert.Equal(1, r.Reads);
    }

    [Fact]
    public void AReadThatSeesHalfATransferIsAWrongTotal()
    {
        var h = new HistoryBuilder()
            .Txn(0, Write(0, 10), Write(1, 10), Write(2, 10))
            .Txn(1, ReadRegister(0, 10), ReadRegister(1, 10), Write(0, 7), Write(1, 13))
            .Txn(0, ReadRegister(0, 7), ReadRegister(1, 10), ReadRegister(2, 10));
        var r = BankChecker.Check(h.Build(), s_accounts, 30);
        output.WriteLine(r.ToString());
        var v = Assert.Single(r.Violations);
        Assert.Equal(2, v.Txn.Id);
        Assert.StartsWith("wrong-total: T2 read a total of 27, expected 30", v.Explanation, StringComparison.Ordinal);
    }

    [Fact]
    public void ANegativeBalanceIsAViolationUnlessOverdraftsAreAllowed()
    {
        var h = new HistoryBuilder()
            .Txn(0, ReadRegister(0, -5), ReadRegister(1, 20), ReadRegister(2, 15));
        Assert.Contains("negative-balance", BankChecker.Check(h.Build(), s_accounts, 30).Violations.Single().Explanation, StringComparison.Ordinal);
        Assert.True(BankChecker.Check(h.Build(), s_accounts, 30, allowNegative: true).Valid);
    }

    [Fact]
    public void UncommittedAndPartialReadsAreNotJudged()
    {
        var h = new HistoryBuilder()
            .Failed(0, ReadRegister(0, 1), ReadRegister(1, 1), ReadRegister(2, 1))
            .Txn(1, ReadRegister(0, 99), ReadRegister(1, 1));
        var r = BankChecker.Check(h.Build(), s_accounts, 30);
        Assert.True(r.Valid);
        Assert.Equal(0, r.Reads);
    }

    private static readonly Gen<(int Seed, int Processes, int Accounts)> s_banks =
        from seed in Gen.Choose(0, int.MaxValue)
        from processes in Gen.Choose(2, 6)
        from accounts in Gen.Choose(2, 6)
        select (seed, processes, accounts);

    [Property(MaxTest = 50)]
    public Property ASerialBankKeepsItsTotal() =>
        Prop.ForAll(s_banks.ToArbitrary(), g =>
        {
            var (history, accounts) = BankSimulation.Run(g.Seed, 200, g.Processes, g.Accounts, broken: false);
            return BankChecker.Check(history, accounts, 100L * accounts.Length).Valid;
        });

    [Fact]
    public void ABankWithoutConflictChecksLosesMoney()
    {
        int runs = 0, caught = 0;
        Properties.Check(output, "bank without conflict checks", s_banks, g =>
        {
            var (history, accounts) = BankSimulation.Run(g.Seed, 200, g.Processes, g.Accounts, broken: true);
            runs++;
            caught += BankChecker.Check(history, accounts, 100L * accounts.Length).Valid ? 0 : 1;
            return true;
        }, tests: 50, seed: 0xBA4C);
        output.WriteLine($"bank without conflict checks: caught in {caught} of {runs} runs");
        Assert.True(caught >= runs * 7 / 10, $"only {caught} of {runs}");
    }
}

/// <summary>
/// A bank on the <see cref="VersionedStore"/>: each account starts at 100; processes either
/// read every account or transfer up to 10 between two (never overdrawing). Correct: each
/// transaction runs alone at completion. Broken: it reads the snapshot of its invocation and
/// writes at completion with no conflict check, so concurrent transfers overwrite each other.
/// </summary>
internal static class BankSimulation
{
    public static (History History, long[] Accounts) Run(int seed, int transactions, int processes, int accountCount, bool broken)
    {
        var random = new Random(seed);
        var accounts = Enumerable.Range(0, accountCount).Select(i => (long)i).ToArray();
        var store = new VersionedStore();
        store.Commit(accounts.Select(a => Write(a, 100)));
        var history = new HistoryBuilder();
        var outstanding = new (Mop[] Mops, long Snapshot)?[processes];
        var invoked = 0;
        var busy = 0;
        while (invoked < transactions || busy > 0)
        {
            var p = random.Next(processes);
            if (outstanding[p] is not { } txn)
            {
                if (invoked++ < transactions)
                {
                    var from = random.Next(accountCount);
                    var to = (from + 1 + random.Next(accountCount - 1)) % accountCount;
                    Mop[] reads = random.Next(3) == 0
                        ? [.. accounts.Select(ReadRegisterUnknown)]
                        : [ReadRegisterUnknown(from), ReadRegisterUnknown(to)];
                    outstanding[p] = (reads, store.Seq);
                    history.Invoke(p, reads);
                    busy++;
                }

                continue;
            }

            outstanding[p] = null;
            busy--;
            var done = store.Execute(txn.Mops, broken ? txn.Snapshot : store.Seq);
            if (done.Length == 2 && done[0].Value >= 10)
            {
                var amount = random.Next(1, 11);
                Mop[] writes = [Write(done[0].Key, done[0].Value!.Value - amount), Write(done[1].Key, done[1].Value!.Value + amount)];
                store.Commit(writes);
                done = [.. done, .. writes];
            }

            history.Ok(p, done);
        }

        return (history.Build(), accounts);
    }
}
