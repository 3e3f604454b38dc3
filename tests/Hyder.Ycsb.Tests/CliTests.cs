using System.Text.Json;
using Hyder.Ycsb.Cli;
using Xunit;

namespace Hyder.Ycsb.Tests;

public class CliTests
{
    [Theory]
    [InlineData("run", "--target", "memory", "--load", "--threads", "0")]
    [InlineData("run", "--target", "memory", "--load", "--workload", "g")]
    [InlineData("run", "--target", "memory", "--load", "--isolation", "chaos")]
    [InlineData("run", "--target", "memory", "--load", "--zipfian-constant", "1.2")]
    [InlineData("run", "--target", "memory", "--load", "--hotspot-data-fraction", "2")]
    [InlineData("run", "--target", "memory", "--load", "--bogus")]
    [InlineData("run", "--target", "memory")]
    [InlineData("run", "--workload", "a")]
    [InlineData("run", "--target", "postgres")]
    [InlineData("load", "--target", "memory", "--record-count", "5000000000")]
    [InlineData("fly")]
    [InlineData]
    public async Task BadOptionsPrintAMessageAndTheUsageAndExitWithTwo(params string[] args)
    {
        var (code, output, error) = await RunAsync(args);
        Assert.Equal(2, code);
        Assert.Contains("error:", error, StringComparison.Ordinal);
        Assert.Contains("Usage:", error, StringComparison.Ordinal);
        Assert.DoesNotContain("[OVERALL]", output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("run", "--target", "embedded")]
    [InlineData("run", "--target", "memory", "--load", "--connect", "127.0.0.1:7000")]
    public async Task TheServerTargetsSayTheyAreNotAvailableYet(params string[] args)
    {
        var (code, _, error) = await RunAsync(args);
        Assert.Equal(2, code);
        Assert.Contains("not yet available", error, StringComparison.Ordinal);
        Assert.Contains("issue 6", error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ARunPrintsYcsbsReportAndWritesJsonAndCsv()
    {
        var json = Path.GetTempFileName();
        var csv = Path.GetTempFileName();
        try
        {
            var (code, output, error) = await RunAsync("run", "--target", "memory", "--load", "--workload", "tx", "--record-count", "1000", "--value-size", "16",
                "--operations", "2000", "--threads", "2", "--in-flight", "2", "--json", json, "--csv", csv, "--seed", "3");
            Assert.True(code == 0, error);
            foreach (var line in new[] { "[OVERALL], RunTime(ms), ", "[OVERALL], Throughput(ops/sec), ", "[OVERALL], Committed, ", "[READ], Operations, ",
                         "[READ], AverageLatency(us), ", "[READ], MinLatency(us), ", "[READ], MaxLatency(us), ", "[READ], 50thPercentileLatency(us), ",
                         "[READ], 95thPercentileLatency(us), ", "[READ], 99thPercentileLatency(us), ", "[READ], 99.9PercentileLatency(us), ",
                         "[UPDATE], Operations, ", "[COMMIT], Operations, ", "[INSERT], Operations, 1000" })
            {
                Assert.Contains(line, output, StringComparison.Ordinal);
            }

            Assert.Contains("[LOAD] done: 1000 records", error, StringComparison.Ordinal);
            using var document = JsonDocument.Parse(File.ReadAllText(json));
            var run = document.RootElement[1];
            Assert.Equal("run", run.GetProperty("phase").GetString());
            Assert.Equal(2000, run.GetProperty("overall").GetProperty("Committed").GetInt64() + run.GetProperty("overall").GetProperty("GaveUp").GetInt64());
            Assert.Equal(16000, run.GetProperty("series").GetProperty("READ").GetProperty("Operations").GetInt64(), 16000 * 0.2);
            var lines = File.ReadAllLines(csv);
            Assert.Equal("phase,section,metric,value", lines[0]);
            Assert.Contains("run,OVERALL,Committed,", string.Join('\n', lines), StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(json);
            File.Delete(csv);
        }
    }

    [Theory]
    [InlineData("incr1")]
    [InlineData("like")]
    [InlineData("e")]
    [InlineData("d")]
    public async Task EveryWorkloadRunsAgainstTheReferenceTarget(string workload)
    {
        var (code, output, error) = await RunAsync("run", "--target", "memory", "--load", "--workload", workload, "--record-count", "500", "--value-size", "8",
            "--operations", "300", "--in-flight", "2");
        Assert.True(code == 0, error);
        Assert.Contains("[OVERALL], Committed, ", output, StringComparison.Ordinal);
    }

    internal static async Task<(int Code, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = await YcsbCommands.InvokeAsync(args, output, error);
        return (code, output.ToString(), error.ToString());
    }
}
