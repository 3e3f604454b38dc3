using Hyder.Fuzz.Engine;
using Hyder.Fuzz.Targets;
using Xunit;

namespace Hyder.Fuzz.Tests;

/// <summary>
/// Every input a fuzzer found a fault with, kept as it was found (the target, the corpus entry it
/// came from, the bytes) so it stays fixed whatever later changes to the mutator do to case numbers.
/// The fix of each has its own test in its project's suite.
/// </summary>
public sealed class RegressionInputTests
{
    public static TheoryData<string, string, string> Inputs() => new()
    {
        // Google.Protobuf's IndexOutOfRange / ArgumentOutOfRange on a nested length near int.MaxValue
        // (fixed upstream by Google.Protobuf 3.36; Grpc.AspNetCore reads the frames). Seed 1, cases 818, 2274, 101.
        { "rpc-messages", "Execute responses", "0000000019" + "0AFFFFFFFF07" + "0801200C280A" + "120D0801120176" + "1A060A01611201621200" },
        { "rpc-messages", "Transact requests", "00000000020A00" + "000000000F120D080112026B321A0576616C7565" + "000000000C12FFFFFFFF07080312016122017A280A" + "00000000021A00" },
        // hyder-log's --listen and --port (Hyder.Log.Tests ProcessTests.ABadValueExitsWithCode2AndNamesTheOption).
        { "log-host-args", "sequencer", Hex("--role\0sequencer\0--port\07100\0--listen\0nowhere\0--projection-store\0file:/tmp/p") },
        { "log-host-args", "unit", Hex("--role\0unit\0--data\0/tmp/unit\0--port\070000") },
        { "log-host-args", "unit", Hex("--role\0unit\0--data\0/tmp/unit\0--block-size\00") },
    };

    [Theory]
    [MemberData(nameof(Inputs))]
    public void AFoundInputIsNowRejectedCleanly(string name, string seedName, string hex)
    {
        using var target = TargetRegistry.Create(name)!;
        var seed = target.Corpus.First(s => s.Name.StartsWith(seedName, StringComparison.Ordinal));
        var result = new FuzzRunner(new FuzzOptions()).RunInput(target, seed, Convert.FromHexString(hex));
        Assert.True(result.Finding is null, result.Finding?.Format());
        Assert.Equal(CaseOutcome.Rejected, result.Outcome);
    }

    private static string Hex(string args) => Convert.ToHexString(System.Text.Encoding.UTF8.GetBytes(args));
}
