using System.Net;
using BenchmarkDotNet.Attributes;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Storage;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Benchmarks.Log;

/// <summary>
/// Appends of 8 KiB blocks through the client, the sequencer and a 2-replica chain, with the
/// servers in this process but every call over loopback TCP, 64 appends in flight. Allocated
/// bytes cover client and servers together. Units write segment files in a temporary directory
/// without fsync (in-memory units would count their stored blocks as allocations): this measures
/// the protocol and transport; tools/Hyder.LogBench measures durable appends across processes.
/// </summary>
[Config(typeof(LogBenchmarkConfig))]
public class LoopbackAppendBenchmarks
{
    private const int InFlight = 64;
    private readonly byte[] _block = new byte[8192];
    private readonly List<LogServer> _servers = [];
    private readonly List<LogUnit> _units = [];
    private TcpConnector _connector = null!;
    private LogClient _log = null!;
    private ISequencer _remoteSequencer = null!;
    private Task[] _tasks = null!;
    private readonly string _directory = Path.Combine(Path.GetTempPath(), "hyder-bdn-" + Guid.NewGuid().ToString("N")[..8]);

    [GlobalSetup]
    public void Setup() => SetupAsync().GetAwaiter().GetResult();

    private async Task SetupAsync()
    {
        var control = new LogServer(new IPEndPoint(IPAddress.Loopback, 0), sequencer: new Sequencer(), projections: new MemoryProjectionStore());
        control.Start();
        _servers.Add(control);
        var chain = new List<string>();
        for (var r = 0; r < 2; r++)
        {
            var unit = LogUnit.Open(new LogUnitOptions
            {
                DataDirectory = Path.Combine(_directory, $"unit{r}"),
                Fsync = FsyncPolicy.None,
            });
            _units.Add(unit);
            var server = new LogServer(new IPEndPoint(IPAddress.Loopback, 0), unit);
            server.Start();
            _servers.Add(server);
            chain.Add(server.LocalEndPoint.ToString());
        }

        var store = new RemoteProjectionStore(control.LocalEndPoint.ToString());
        _connector = new TcpConnector();
        await new LogAdmin(store, _connector).BootstrapAsync(new Projection
        {
            Epoch = 1,
            Sequencer = control.LocalEndPoint.ToString(),
            Ranges = [new LayoutRange { Start = 0, Chains = [chain] }],
        });
        _log = await LogClient.ConnectAsync(store, _connector);
        _remoteSequencer = _connector.Sequencer(control.LocalEndPoint.ToString());
        _tasks = new Task[InFlight];
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        foreach (var server in _servers)
        {
            server.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }

        _connector.DisposeAsync().AsTask().GetAwaiter().GetResult();
        foreach (var unit in _units)
        {
            unit.Dispose();
        }

        Directory.Delete(_directory, recursive: true);
    }

    [Benchmark(OperationsPerInvoke = InFlight * 16, Description = "append 8 KiB, 2-replica chain, loopback TCP")]
    public void Append()
    {
        for (var i = 0; i < InFlight; i++)
        {
            _tasks[i] = AppendSome();
        }

        Task.WaitAll(_tasks);
    }

    private async Task AppendSome()
    {
        for (var i = 0; i < 16; i++)
        {
            await _log.AppendAsync(_block);
        }
    }

    [Benchmark(OperationsPerInvoke = InFlight * 16, Description = "token over loopback TCP")]
    public void Token()
    {
        for (var i = 0; i < InFlight; i++)
        {
            _tasks[i] = TokenSome();
        }

        Task.WaitAll(_tasks);
    }

    private async Task TokenSome()
    {
        for (var i = 0; i < 16; i++)
        {
            await _remoteSequencer.NextAsync(1, 1);
        }
    }
}
