using System.Diagnostics;
using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using Hyder.Benchmarks.Meld;
using Hyder.Client;
using Hyder.Log.Embedded;
using Hyder.Server;
using Hyder.Server.Grpc;
using Hyder.Testing;

namespace Hyder.Benchmarks.Rpc;

/// <summary>
/// <c>tls [--calls N] [--concurrency N] [--payload BYTES] [--rounds N]</c>: what TLS costs a gRPC
/// call, client and server in this one process, over loopback: snapshot reads of one key (the
/// value --payload bytes) through HyderClient to a HyderGrpcServer (Grpc.Net.Client, Grpc.AspNetCore)
/// on a transaction server over an in-memory log, over h2c and over TLS 1.3 (ECDSA P-256),
/// alternating, each round on a fresh server and channel.
/// Reports calls per second and process CPU time per call; the CPU time is the steadier figure on a
/// shared machine, where the other processes' load moves the wall clock far more than it moves
/// the CPU a call takes.
/// </summary>
internal static class TlsCost
{
    private static readonly byte[] s_key = "bench"u8.ToArray();

    public static async Task<int> RunAsync(string[] args)
    {
        var calls = Int(args, "--calls", 20_000);
        var concurrency = Int(args, "--concurrency", 8);
        var payload = Int(args, "--payload", 100);
        var rounds = Int(args, "--rounds", 3);
        using var ca = TestCertificates.CreateCa("Hyder Bench CA");
        using var certificate = TestCertificates.Issue(ca, "hyder-bench", server: true, client: false);
        var value = new byte[payload];
        Console.WriteLine($"# {calls} reads of {payload} B per round, {concurrency} in flight, {Environment.ProcessorCount} cores, load average {MachineInfo.LoadAverage()}");
        var results = new Dictionary<bool, List<(double PerSecond, double CpuMicroseconds)>> { [false] = [], [true] = [] };
        for (var round = 0; round < rounds; round++)
        {
            foreach (var tls in round % 2 == 0 ? new[] { true, false } : [false, true])
            {
                var result = await RoundAsync(tls ? certificate : null, ca, value, calls, concurrency);
                results[tls].Add(result);
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"round {round + 1} {(tls ? "tls " : "h2c ")}: {result.PerSecond,8:0} calls/s, {result.CpuMicroseconds,6:0} us CPU/call (load average {MachineInfo.LoadAverage()})"));
            }
        }

        var tlsRate = Median(results[true].Select(r => r.PerSecond));
        var plainRate = Median(results[false].Select(r => r.PerSecond));
        var tlsCpu = Median(results[true].Select(r => r.CpuMicroseconds));
        var plainCpu = Median(results[false].Select(r => r.CpuMicroseconds));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"median: h2c {plainRate:0} calls/s, {plainCpu:0} us CPU/call; tls {tlsRate:0} calls/s, {tlsCpu:0} us CPU/call; tls/h2c throughput {tlsRate / plainRate:0.00}, CPU per call {tlsCpu / plainCpu:0.00}"));
        return 0;
    }

    private static async Task<(double PerSecond, double CpuMicroseconds)> RoundAsync(X509Certificate2? certificate, X509Certificate2 ca, byte[] value, int calls, int concurrency)
    {
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await using var engine = await TransactionServer.StartAsync(log, new ServerOptions { ServerId = "bench" });
        var options = new GrpcServerOptions();
        if (certificate is not null)
        {
            options.Tls = new GrpcServerTls { Certificate = certificate };
        }

        await using var server = await HyderGrpcServer.StartAsync(engine, options);
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = server.Address, TrustedCertificateAuthorities = [ca] });
        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(s_key, value)]);

        // Warm up: connections, handshakes, JIT.
        await CallsAsync(client, Math.Min(calls / 10, 2000), concurrency);
        var process = Process.GetCurrentProcess();
        process.Refresh();
        var cpuBefore = process.TotalProcessorTime;
        var clock = Stopwatch.StartNew();
        await CallsAsync(client, calls, concurrency);
        clock.Stop();
        process.Refresh();
        var cpu = process.TotalProcessorTime - cpuBefore;
        return (calls / clock.Elapsed.TotalSeconds, cpu.TotalMicroseconds / calls);
    }

    private static async Task CallsAsync(HyderClient client, int calls, int concurrency)
    {
        var next = 0;
        var workers = Enumerable.Range(0, concurrency).Select(async _ =>
        {
            while (Interlocked.Increment(ref next) <= calls)
            {
                await client.ReadAsync([s_key]);
            }
        });
        await Task.WhenAll(workers);
    }

    private static double Median(IEnumerable<double> values)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    private static int Int(string[] args, string name, int fallback) =>
        ReportArguments.Option(args, name) is { } text ? int.Parse(text, CultureInfo.InvariantCulture) : fallback;
}
