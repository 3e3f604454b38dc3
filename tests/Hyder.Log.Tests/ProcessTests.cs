using System.Collections.Concurrent;
using Hyder.Log.Client;
using Hyder.Log.Transport;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Log.Tests;

/// <summary>
/// Real log host processes on loopback: SIGKILL in the middle of appends, restarts on the same data,
/// and reconfiguration through the admin command. Every test stops its processes and deletes its
/// directories.
/// </summary>
public sealed class ProcessTests(ITestOutputHelper output)
{
    private const int BlockSize = 1024;

    private static byte[] Block(int id)
    {
        var block = new byte[BlockSize];
        new Random(id).NextBytes(block);
        BitConverter.TryWriteBytes(block, id);
        return block;
    }

    /// <summary>
    /// Values the parser takes but the host cannot run with exit with code 2 and name the option,
    /// instead of an exception from inside the host's start. Found by the log-host-args fuzzer
    /// (seed 1: case 38, an --listen that is not an address; case 1477, a port out of range).
    /// </summary>
    [Theory]
    [InlineData("--listen", "--listen", "nowhere")]
    [InlineData("--port", "--port", "70000")]
    [InlineData("--port", "--port", "-1")]
    [InlineData("--block-size", "--block-size", "0")]
    [InlineData("--slots-per-segment", "--slots-per-segment", "1")]
    [InlineData("--commit-delay-us", "--commit-delay-us", "-1")]
    [InlineData("--commit-delay-us", "--commit-delay-us", "100001")]
    [InlineData("--page-cache-slots", "--page-cache-slots", "-1")]
    public async Task ABadValueExitsWithCode2AndNamesTheOption(string option, params string[] bad)
    {
        using var dir = new TempDirectory();
        var run = await HostProcess.RunAsync(["--role", "unit", "--data", dir.Sub("u"), .. bad]);
        Assert.True(run.ExitCode == 2, run.Output);
        Assert.Contains(option, run.Output, StringComparison.Ordinal);
        Assert.DoesNotContain("   at ", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public Task AcknowledgedAppendsSurviveSigkillOfUnitProcesses() => KillLoopAsync(rounds: 3);

    [Fact]
    [Trait("Category", "Stress")]
    public Task AcknowledgedAppendsSurviveManySigkillsOfUnitsAndSequencer() => KillLoopAsync(rounds: 25);

    private async Task KillLoopAsync(int rounds)
    {
        using var dir = new TempDirectory();
        // Restarted on their old ports, which the log client reconnects to: reserved ports, never
        // in the ephemeral range where a reconnect or another test's connection may take them meanwhile.
        var control = await HostProcess.StartAsync("--role", "projection,sequencer", "--data", dir.Sub("control"), "--port", Port(ReservedPorts.Take()));
        var units = new[]
        {
            await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub("u1"), "--port", Port(ReservedPorts.Take())),
            await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub("u2"), "--port", Port(ReservedPorts.Take())),
        };
        var store = new RemoteProjectionStore(control.Endpoint);
        var connector = new TcpConnector();
        try
        {
            var boot = await HostProcess.RunAsync("admin", "--projection-store", $"tcp:{control.Endpoint}", "bootstrap",
                "--sequencer", control.Endpoint, "--chain", $"{units[0].Endpoint},{units[1].Endpoint}");
            Assert.True(boot.ExitCode == 0, boot.Output);
            var options = new LogClientOptions { OperationTimeout = TimeSpan.FromSeconds(60) };
            var log = await LogClient.ConnectAsync(store, connector, options);
            var acknowledged = new ConcurrentDictionary<long, int>();
            var nextId = 0;
            for (var round = 0; round < rounds; round++)
            {
                using var stop = new CancellationTokenSource();
                var appenders = Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
                {
                    while (!stop.IsCancellationRequested)
                    {
                        var id = Interlocked.Increment(ref nextId);
                        var address = await log.AppendAsync(Block(id));
                        Assert.True(acknowledged.TryAdd(address, id), $"address {address} acknowledged twice");
                    }
                })).ToArray();
                var before = acknowledged.Count;
                await WaitUntilAsync(() => acknowledged.Count >= before + 100 || appenders.Any(a => a.IsFaulted));

                // Both replicas die at once (and every third round the sequencer with its store):
                // only what reached a unit's disk can still be there after the restart.
                var killSequencer = round % 3 == 2;
                await Task.WhenAll(units.Select(u => u.KillAsync()).Concat(killSequencer ? [control.KillAsync()] : []));
                output.WriteLine($"round {round}: killed units{(killSequencer ? " and sequencer" : "")} after {acknowledged.Count} acknowledged appends");
                for (var i = 0; i < units.Length; i++)
                {
                    var port = Port(units[i].Port);
                    await units[i].DisposeAsync();
                    units[i] = await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub($"u{i + 1}"), "--port", port);
                }

                if (killSequencer)
                {
                    var port = Port(control.Port);
                    await control.DisposeAsync();
                    control = await HostProcess.StartAsync("--role", "projection,sequencer", "--data", dir.Sub("control"), "--port", port);
                }

                var resumed = acknowledged.Count;
                await WaitUntilAsync(() => acknowledged.Count >= resumed + 50 || appenders.Any(a => a.IsFaulted));
                await stop.CancelAsync();
                await Task.WhenAll(appenders);
            }

            output.WriteLine($"{acknowledged.Count} acknowledged appends, epoch {log.Projection.Epoch}");
            await using var fresh = await LogClient.ConnectAsync(store, connector, options);
            var buffer = new byte[BlockSize];
            foreach (var (address, id) in acknowledged)
            {
                var read = await fresh.ReadAsync(address, buffer);
                Assert.Equal(LogEntryKind.Data, read.Kind);
                Assert.True(buffer.AsSpan(0, read.Length).SequenceEqual(Block(id)), $"address {address} lost block {id}");
            }

            Assert.Equal(0, await control.StopAsync());
            foreach (var unit in units)
            {
                Assert.Equal(0, await unit.StopAsync());
            }
        }
        finally
        {
            await connector.DisposeAsync();
            await store.DisposeAsync();
            foreach (var unit in units)
            {
                await unit.DisposeAsync();
            }

            await control.DisposeAsync();
        }
    }

    [Fact]
    public Task TwoUnitChainSurvivesLossOfOneUnitThroughReconfiguration() => ReplaceFailedTailAsync(freeze: false);

    [Fact]
    public Task TwoUnitChainSurvivesAUnitThatStopsAnsweringThroughReconfiguration() => ReplaceFailedTailAsync(freeze: true);

    private async Task ReplaceFailedTailAsync(bool freeze)
    {
        using var dir = new TempDirectory();
        await using var control = await HostProcess.StartAsync("--role", "projection,sequencer", "--data", dir.Sub("control"), "--port", "0");
        await using var head = await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub("u1"), "--port", "0");
        await using var tail = await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub("u2"), "--port", "0");
        await using var spare = await HostProcess.StartAsync("--role", "unit", "--data", dir.Sub("u3"), "--port", "0");
        await using var store = new RemoteProjectionStore(control.Endpoint);
        await using var connector = new TcpConnector(requestTimeout: TimeSpan.FromSeconds(1));
        var spec = $"tcp:{control.Endpoint}";
        var boot = await HostProcess.RunAsync("admin", "--projection-store", spec, "bootstrap", "--sequencer", control.Endpoint,
            "--chain", $"{head.Endpoint},{tail.Endpoint}");
        Assert.True(boot.ExitCode == 0, boot.Output);

        var log = await LogClient.ConnectAsync(store, connector, new LogClientOptions { OperationTimeout = TimeSpan.FromSeconds(60) });
        var acknowledged = new ConcurrentDictionary<long, int>();
        var nextId = 0;
        using var stop = new CancellationTokenSource();
        var appenders = Enumerable.Range(0, 4).Select(_ => Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                var id = Interlocked.Increment(ref nextId);
                acknowledged[await log.AppendAsync(Block(id))] = id;
            }
        })).ToArray();
        await WaitUntilAsync(() => acknowledged.Count >= 200);

        if (freeze)
        {
            // SIGSTOP: the unit keeps its connections open and answers nothing.
            await tail.SignalAsync("STOP");
        }
        else
        {
            await tail.KillAsync();
        }

        var replace = await HostProcess.RunAsync("admin", "--projection-store", spec, "replace", "--failed", tail.Endpoint, "--replacement", spare.Endpoint);
        output.WriteLine(replace.Output);
        Assert.True(replace.ExitCode == 0, replace.Output);

        var afterReplace = acknowledged.Count;
        await WaitUntilAsync(() => acknowledged.Count >= afterReplace + 200 || appenders.Any(a => a.IsFaulted));
        await stop.CancelAsync();
        await Task.WhenAll(appenders);

        var projection = (await store.GetLatestAsync())!;
        Assert.Equal(2, projection.Epoch);
        Assert.Equal([head.Endpoint, spare.Endpoint], projection.Ranges[0].Chains[0].ToArray());
        await using var fresh = await LogClient.ConnectAsync(store, connector);
        var replacement = connector.Unit(spare.Endpoint);
        var buffer = new byte[BlockSize];
        foreach (var (address, id) in acknowledged)
        {
            var read = await fresh.ReadAsync(address, buffer);
            Assert.Equal(LogEntryKind.Data, read.Kind);
            Assert.True(buffer.AsSpan(0, read.Length).SequenceEqual(Block(id)), $"address {address} lost block {id}");
            Assert.Equal(LogStatus.Ok, (await replacement.ReadAsync(2, address, buffer)).Status);
        }

        output.WriteLine($"{acknowledged.Count} acknowledged appends readable after replacing {tail.Endpoint} by {spare.Endpoint}");
        Assert.Equal(0, await spare.StopAsync());
        if (freeze)
        {
            await tail.SignalAsync("CONT");
        }
    }

    private static string Port(int port) => port.ToString(System.Globalization.CultureInfo.InvariantCulture);

    private static async Task WaitUntilAsync(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "timed out waiting for the log");
            await Task.Delay(10);
        }
    }
}
