using System.Diagnostics;
using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using Google.Protobuf;
using Google.Protobuf.WellKnownTypes;
using Hyder.Rpc;
using Hyder.Testing;

namespace Hyder.Benchmarks.Rpc;

/// <summary>
/// <c>tls [--calls N] [--concurrency N] [--payload BYTES] [--rounds N]</c>: what TLS costs a gRPC
/// call, client and server in this one process, over loopback: unary calls through Hyder.Rpc over
/// h2c and over TLS 1.3 (ECDSA P-256), alternating, each round on a fresh server and channel.
/// Reports calls per second and process CPU time per call; the CPU time is the steadier figure on a
/// shared machine, where the other processes' load moves the wall clock far more than it moves
/// the CPU a call takes.
/// </summary>
internal static class TlsCost
{
    private static readonly Method<BytesValue, BytesValue> s_echo =
        new(MethodType.Unary, "hyder.bench.Echo", "Echo", BytesValue.Parser, BytesValue.Parser);

    public static async Task<int> RunAsync(string[] args)
    {
        var calls = Int(args, "--calls", 20_000);
        var concurrency = Int(args, "--concurrency", 8);
        var payload = Int(args, "--payload", 100);
        var rounds = Int(args, "--rounds", 3);
        using var ca = TestCertificates.CreateCa("Hyder Bench CA");
        using var certificate = TestCertificates.Issue(ca, "hyder-bench", server: true, client: false);
        var request = new BytesValue { Value = ByteString.CopyFrom(new byte[payload]) };
        Console.WriteLine($"# {calls} unary calls of {payload} B per round, {concurrency} in flight, {Environment.ProcessorCount} cores, load average {LoadAverage()}");
        var results = new Dictionary<bool, List<(double PerSecond, double CpuMicroseconds)>> { [false] = [], [true] = [] };
        for (var round = 0; round < rounds; round++)
        {
            foreach (var tls in round % 2 == 0 ? new[] { true, false } : [false, true])
            {
                var result = await RoundAsync(tls ? certificate : null, ca, request, calls, concurrency);
                results[tls].Add(result);
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"round {round + 1} {(tls ? "tls " : "h2c ")}: {result.PerSecond,8:0} calls/s, {result.CpuMicroseconds,6:0} us CPU/call (load average {LoadAverage()})"));
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

    private static async Task<(double PerSecond, double CpuMicroseconds)> RoundAsync(X509Certificate2? certificate, X509Certificate2 ca, BytesValue request, int calls, int concurrency)
    {
        var registry = new RpcServiceRegistry().AddUnary(s_echo, (r, _) => Task.FromResult(r));
        var options = new RpcServerOptions();
        if (certificate is not null)
        {
            options.Tls = new RpcServerTls { Certificate = certificate };
        }

        await using var server = await RpcServer.StartAsync(registry, options);
        using var channel = new RpcChannel(server.Address, new RpcChannelOptions { TrustedCertificateAuthorities = [ca] });

        // Warm up: connections, handshakes, JIT.
        await CallsAsync(channel, request, Math.Min(calls / 10, 2000), concurrency);
        var process = Process.GetCurrentProcess();
        process.Refresh();
        var cpuBefore = process.TotalProcessorTime;
        var clock = Stopwatch.StartNew();
        await CallsAsync(channel, request, calls, concurrency);
        clock.Stop();
        process.Refresh();
        var cpu = process.TotalProcessorTime - cpuBefore;
        return (calls / clock.Elapsed.TotalSeconds, cpu.TotalMicroseconds / calls);
    }

    private static async Task CallsAsync(RpcChannel channel, BytesValue request, int calls, int concurrency)
    {
        var next = 0;
        var workers = Enumerable.Range(0, concurrency).Select(async _ =>
        {
            while (Interlocked.Increment(ref next) <= calls)
            {
                await channel.UnaryCall(s_echo, request);
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

    private static string LoadAverage() =>
        File.Exists("/proc/loadavg") ? string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "n/a";
}
