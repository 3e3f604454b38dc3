using System.Text.Json;
using Hyder.Testing;
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
    public async Task BadOptionsPrintAMessageAndTheUsageAndExitWithTwo(params string[] args)
    {
        var (code, output, error) = await RunAsync(args);
        Assert.Equal(2, code);
        Assert.Contains("error:", error, StringComparison.Ordinal);
        Assert.Contains("Usage:", error, StringComparison.Ordinal);
        Assert.DoesNotContain("[OVERALL]", output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("run", "--workload", "tx")]
    [InlineData("run", "--target", "embedded", "--load", "--servers", "0")]
    [InlineData("run", "--target", "embedded", "--load", "--premeld-threads", "-1")]
    [InlineData("run", "--target", "embedded", "--load", "--distance", "4")]
    [InlineData("run", "--target", "embedded", "--load", "--premeld-threads", "2", "--distance", "0")]
    [InlineData("run", "--target", "memory", "--load", "--group-meld")]
    [InlineData("run", "--target", "memory", "--load", "--commutative")]
    [InlineData("run", "--target", "memory", "--load", "--servers", "2")]
    [InlineData("run", "--target", "memory", "--load", "--commit-delay-us", "0")]
    [InlineData("run", "--target", "embedded", "--load", "--commit-delay-us", "-5")]
    [InlineData("run", "--target", "memory", "--load", "--page-cache-slots", "0")]
    [InlineData("run", "--target", "embedded", "--load", "--page-cache-slots", "-1")]
    [InlineData("run", "--target", "memory", "--load", "--final-meld-nice", "0")]
    [InlineData("run", "--target", "embedded", "--load", "--final-meld-nice", "20")]
    [InlineData("run", "--target", "postgres", "--pg", "Host=x", "--data", "/tmp/x")]
    [InlineData("run", "--target", "memory", "--load", "--connect", "127.0.0.1:7000")]
    [InlineData("run", "--load", "--connect", "")]
    [InlineData("run", "--load", "--connect", "127.0.0.1:7000", "--multiplex")]
    [InlineData("run", "--target", "embedded", "--load", "--one-shot", "--multiplex")]
    [InlineData("run", "--target", "memory", "--load", "--workload", "stock")]
    [InlineData("run", "--target", "embedded", "--load", "--workload", "stock", "--stock-cap", "1")]
    [InlineData("run", "--target", "embedded", "--load", "--workload", "stock", "--restock-share", "1.5")]
    public async Task HyderTargetOptionsAreChecked(params string[] args)
    {
        var (code, output, error) = await RunAsync(args);
        Assert.Equal(2, code);
        Assert.Contains("error:", error, StringComparison.Ordinal);
        Assert.Contains("Usage:", error, StringComparison.Ordinal);
        Assert.DoesNotContain("[OVERALL]", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnUnreachableServerEndsTheRunWithExitCodeOne()
    {
        var port = Hyder.Testing.ReservedPorts.Take(); // nothing listens on it, and no other test is given it
        var (code, output, error) = await RunAsync("run", "--load", "--connect", $"Endpoint=http://127.0.0.1:{port};Timeout=5", "--record-count", "10", "--operations", "1");
        Assert.Equal(1, code);
        Assert.Contains($"error: the Hyder server at http://127.0.0.1:{port}/ failed", error, StringComparison.Ordinal);
        Assert.DoesNotContain("[OVERALL]", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnEmbeddedRunReportsMeldFiguresAndAgreeingStateHashes()
    {
        var json = Path.GetTempFileName();
        try
        {
            var (code, output, error) = await RunAsync("run", "--load", "--workload", "tx", "--record-count", "2000", "--value-size", "16", "--operations", "400",
                "--threads", "2", "--in-flight", "4", "--servers", "2", "--group-meld", "--fsync", "none", "--json", json);
            Assert.True(code == 0, error);
            Assert.Contains("# target Hyder embedded cluster: 2 transaction servers (group meld)", output, StringComparison.Ordinal);
            Assert.Contains("[HYDER], StateHashesAgree, 1", output, StringComparison.Ordinal);
            Assert.Contains("# Summary:", output, StringComparison.Ordinal);
            using var document = JsonDocument.Parse(File.ReadAllText(json));
            var run = document.RootElement[1];
            Assert.Equal("group meld", run.GetProperty("settings").GetProperty("pipeline").GetString());
            var target = run.GetProperty("target");
            var overall = run.GetProperty("overall");
            Assert.Equal(2, target.GetProperty("Servers").GetDouble());
            Assert.Equal(overall.GetProperty("Committed").GetDouble(), target.GetProperty("MeldCommitted").GetDouble() + target.GetProperty("ReadOnlyCommitted").GetDouble());
            Assert.Equal(overall.GetProperty("Aborted").GetDouble(), target.GetProperty("MeldAborted").GetDouble());
            Assert.True(target.GetProperty("GroupMeldNodes/Intention").GetDouble() > 0);
        }
        finally
        {
            File.Delete(json);
        }
    }

    [Fact]
    public async Task AKeptDataDirectoryCarriesALoadIntoALaterRun()
    {
        var data = Directory.CreateTempSubdirectory("hyder-ycsb-test-");
        try
        {
            var (code, _, error) = await RunAsync("load", "--data", data.FullName, "--record-count", "300", "--value-size", "8", "--fsync", "none");
            Assert.True(code == 0, error);
            (code, var output, error) = await RunAsync("run", "--data", data.FullName, "--workload", "c", "--record-count", "300", "--value-size", "8",
                "--operations", "200", "--fsync", "none");
            Assert.True(code == 0, error);
            Assert.True(output.Contains("[READ], Return=OK, 200", StringComparison.Ordinal), output);
            Assert.DoesNotContain("NOT_FOUND", output, StringComparison.Ordinal);
            Assert.NotEmpty(Directory.EnumerateFileSystemEntries(data.FullName));
        }
        finally
        {
            data.Delete(recursive: true);
        }
    }

    [Fact]
    public void TheMainJobIsTheDocumentedCommandAndParses()
    {
        var parse = YcsbCommands.Create(TextWriter.Null, TextWriter.Null).Parse(YcsbCommands.MainJob);
        Assert.Empty(parse.Errors);
        var configuration = RunConfiguration.From(parse, run: true);
        Assert.Equal("embedded", configuration.TargetName);
        Assert.True(configuration.LoadFirst);
        Assert.Equal("tx", configuration.Workload.Name);

        // The main job raises its final meld (docs/server.md, "Final meld's priority"); a run asks only when told.
        Assert.Equal(Hyder.Tree.Pipeline.PipelineThreading.RaisedFinalMeldNice, parse.GetValue(YcsbOptions.FinalMeldNice));
        Assert.Equal(0, YcsbCommands.Create(TextWriter.Null, TextWriter.Null).Parse(["run", "--load", "--target", "embedded"]).GetValue(YcsbOptions.FinalMeldNice));
        var readme = File.ReadAllText(Path.Combine(BuiltProject.RepositoryRoot(), "README.md")).ReplaceLineEndings("\n");
        Assert.Contains("\ndotnet run -c Release --project tools/Hyder.Ycsb\n", readme, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(true, "run", "--load", "--connect", "http://127.0.0.1:1")]
    [InlineData(false, "run", "--load", "--connect", "http://127.0.0.1:1", "--no-pipeline")]
    public void ConnectPipelinesUnlessNoPipelineIsGiven(bool pipeline, params string[] args)
    {
        var parse = YcsbCommands.Create(TextWriter.Null, TextWriter.Null).Parse(args);
        Assert.Empty(parse.Errors);
        var configuration = RunConfiguration.From(parse, run: true);
        Assert.Equal(pipeline, configuration.Settings.Pipeline);
    }

    [Fact]
    public async Task NoPipelineIsARunOption()
    {
        var (code, _, error) = await RunAsync("load", "--connect", "http://127.0.0.1:1", "--no-pipeline");
        Assert.Equal(2, code);
        Assert.Contains("--no-pipeline", error, StringComparison.Ordinal);
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
