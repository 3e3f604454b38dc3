using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using Grpc.Core;
using Grpc.Net.Client;
using Hyder.Benchmarks.Meld;
using Hyder.Client;
using Hyder.Tree.Pipeline;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace Hyder.Benchmarks.Rpc;

/// <summary>
/// <c>rpc-floor [--streams N] [--warmup S] [--seconds S] [--rounds N] [--transport tcp|uds|both] [--work-us N]</c>:
/// what the official gRPC stack alone costs per interactive transaction of the YCSB tool's main
/// job, with no database behind it. A child process hosts a bare bidirectional-streaming method on
/// Grpc.AspNetCore (Kestrel, h2c, settings as hyder-server: server GC, the thread pool's spin
/// off); this process drives it through Grpc.Net.Client (settings as the YCSB tool's
/// <c>--connect</c>: workstation GC, spin off). Each of <c>--streams</c> kept calls runs
/// "transactions" of the main job's two exchanges, with the main job's message sizes on the wire.
/// Reports transactions per second and the CPU per transaction of each process: the least a
/// <c>--connect</c> run can add to the engine's own CPU on a machine that hosts both processes.
/// With <c>--work-us N</c> the server spends N µs of CPU (its thread's clock) on each transaction's
/// last exchange before it answers, standing in for the engine's work per commit, so that the
/// transport meets the load it would meet beside a real engine.
/// </summary>
internal static class TransportFloor
{
    /// <summary>
    /// The gRPC payloads of one 8R2W transaction of the YCSB tool's interactive <c>--connect</c>
    /// (1 KiB values, seen on the wire): begin and 8 reads, answered by 8 values; 2 writes and the
    /// commit, answered by the outcome.
    /// </summary>
    internal static readonly (int Request, int Response)[] Exchanges = [(98, 8286), (2091, 28)];

    private const string SpinLimitSetting = "System.Threading.ThreadPool.UnfairSemaphoreSpinLimit";

    private static readonly Marshaller<byte[]> s_bytes = Marshallers.Create(bytes => bytes, bytes => bytes);

    /// <summary>The one method: each request's first 4 bytes (little-endian) say how long its answer is.</summary>
    internal static readonly Method<byte[], byte[]> ExchangeMethod = new(MethodType.DuplexStreaming, "hyder.bench.Floor", "Exchange", s_bytes, s_bytes);

    public static async Task<int> RunAsync(string[] args)
    {
        if (args.Contains("--serve"))
        {
            return await ServeAsync(ReportArguments.Option(args, "--uds"), Int(args, "--work-us", 0) ?? 0);
        }

        if (args.Contains("--help") || args.Contains("-h"))
        {
            Console.WriteLine(Usage);
            return 0;
        }

        if (ReportArguments.Unknown(args, flags: [], options: ["--streams", "--warmup", "--seconds", "--rounds", "--transport", "--work-us"]) is { } unknown)
        {
            Console.Error.WriteLine($"rpc-floor: {unknown}\n{Usage}");
            return 2;
        }

        var streams = Int(args, "--streams", 64);
        var warmup = Int(args, "--warmup", 3);
        var seconds = Int(args, "--seconds", 10);
        var rounds = Int(args, "--rounds", 3);
        var work = Int(args, "--work-us", 0);
        var transport = ReportArguments.Option(args, "--transport") ?? "tcp";
        if (streams is null or < 1 || seconds is null or < 1 || rounds is null or < 1 || warmup is null or < 0 || work is null or < 0 || transport is not ("tcp" or "uds" or "both"))
        {
            Console.Error.WriteLine($"rpc-floor: --streams, --seconds and --rounds take a whole number of at least 1, --warmup and --work-us of at least 0, --transport tcp, uds or both\n{Usage}");
            return 2;
        }

        // As the YCSB tool does for --connect, before anything runs on the thread pool.
        AppContext.SetData(SpinLimitSetting, 0);
        string[] transports = transport == "both" ? ["tcp", "uds"] : [transport];
        Console.WriteLine($"# rpc-floor: {streams} kept streams, exchanges {string.Join(" + ", Exchanges.Select(e => $"{e.Request} B -> {e.Response} B"))} per transaction, {work} us of server work per transaction, {warmup} s warm-up, {seconds} s measured, {Environment.ProcessorCount} cores, load average {MachineInfo.LoadAverage()}");
        for (var round = 0; round < rounds; round++)
        {
            foreach (var name in round % 2 == 0 ? transports : transports.Reverse())
            {
                var r = await RoundAsync(name == "uds", streams.Value, warmup.Value, seconds.Value, work.Value);
                Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"round {round + 1} {name}: {r.PerSecond,8:0} tx/s, client {r.ClientUs,5:0.0} us CPU/tx ({r.ClientPercent:0} %), server {r.ServerUs,5:0.0} us CPU/tx ({r.ServerPercent:0} %), both {r.ClientUs + r.ServerUs,5:0.0} us/tx (load average {MachineInfo.LoadAverage()})"));
            }
        }

        return 0;
    }

    private static async Task<(double PerSecond, double ClientUs, double ServerUs, double ClientPercent, double ServerPercent)> RoundAsync(bool uds, int streams, int warmup, int seconds, int work)
    {
        var socketPath = uds ? Path.Combine(Path.GetTempPath(), $"hyder-floor-{Environment.ProcessId}-{Guid.NewGuid():N}.sock") : null;
        using var server = StartServer(socketPath, work);
        try
        {
            var ready = await server.StandardOutput.ReadLineAsync() ?? throw new InvalidOperationException("the floor server ended before it was ready");
            var address = ready.Split(' ')[^1];
            var endpoint = uds ? "http://localhost" : address;
            using var channel = GrpcChannel.ForAddress(endpoint, new GrpcChannelOptions { HttpHandler = Handler(endpoint, socketPath) });
            var invoker = channel.CreateCallInvoker();
            var requests = Exchanges.Select(e => Request(e.Request, e.Response)).ToArray();
            long transactions = 0;
            using var stop = new CancellationTokenSource();
            var workers = Enumerable.Range(0, streams).Select(_ => Task.Run(() => WorkerAsync(invoker, requests, () => Interlocked.Increment(ref transactions), stop.Token))).ToArray();

            await Task.Delay(TimeSpan.FromSeconds(warmup));
            using var self = Process.GetCurrentProcess();
            self.Refresh();
            server.Refresh();
            var client0 = self.TotalProcessorTime;
            var server0 = server.TotalProcessorTime;
            var count0 = Interlocked.Read(ref transactions);
            var clock = Stopwatch.StartNew();
            await Task.Delay(TimeSpan.FromSeconds(seconds));
            self.Refresh();
            server.Refresh();
            var count = Interlocked.Read(ref transactions) - count0;
            var elapsed = clock.Elapsed;
            var clientCpu = self.TotalProcessorTime - client0;
            var serverCpu = server.TotalProcessorTime - server0;
            await stop.CancelAsync();
            await Task.WhenAll(workers);
            if (count == 0)
            {
                throw new InvalidOperationException($"no transaction completed in the {seconds} s measured");
            }

            return (
                count / elapsed.TotalSeconds,
                clientCpu.TotalMicroseconds / count,
                serverCpu.TotalMicroseconds / count,
                100 * clientCpu / elapsed,
                100 * serverCpu / elapsed);
        }
        finally
        {
            // The server stops when its standard input closes.
            server.StandardInput.Close();
            if (!server.WaitForExit(10_000))
            {
                server.Kill();
            }

            if (socketPath is not null)
            {
                File.Delete(socketPath);
            }
        }
    }

    private static async Task WorkerAsync(CallInvoker invoker, byte[][] requests, Action done, CancellationToken stop)
    {
        using var call = invoker.AsyncDuplexStreamingCall(ExchangeMethod, null, default);
        while (!stop.IsCancellationRequested)
        {
            foreach (var request in requests)
            {
                await call.RequestStream.WriteAsync(request, CancellationToken.None);
                if (!await call.ResponseStream.MoveNext(CancellationToken.None))
                {
                    throw new InvalidOperationException("the floor server ended a call");
                }
            }

            done();
        }

        await call.RequestStream.CompleteAsync();
        while (await call.ResponseStream.MoveNext(CancellationToken.None))
        {
        }
    }

    private static byte[] Request(int length, int answer)
    {
        var request = new byte[length];
        Random.Shared.NextBytes(request);
        BinaryPrimitives.WriteInt32LittleEndian(request, answer);
        return request;
    }

    /// <summary>The client's own HTTP/2 handler (<see cref="HyderClient.CreateHandler"/>), with a Unix socket in place of TCP when given one.</summary>
    private static SocketsHttpHandler Handler(string address, string? socketPath)
    {
        var handler = HyderClient.CreateHandler(new HyderClientSettings { Endpoint = new Uri(address) });
        if (socketPath is not null)
        {
            handler.ConnectCallback = async (_, cancellationToken) =>
            {
                var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                try
                {
                    await socket.ConnectAsync(new UnixDomainSocketEndPoint(socketPath), cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            };
        }

        return handler;
    }

    private static Process StartServer(string? socketPath, int work)
    {
        var self = Environment.ProcessPath ?? throw new InvalidOperationException("no process path");
        var start = new ProcessStartInfo(self)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        if (Path.GetFileNameWithoutExtension(self) == "dotnet")
        {
            start.ArgumentList.Add(typeof(TransportFloor).Assembly.Location);
        }

        start.ArgumentList.Add("rpc-floor");
        start.ArgumentList.Add("--serve");
        start.ArgumentList.Add("--work-us");
        start.ArgumentList.Add(work.ToString(CultureInfo.InvariantCulture));
        if (socketPath is not null)
        {
            start.ArgumentList.Add("--uds");
            start.ArgumentList.Add(socketPath);
        }

        // hyder-server's runtime settings (src/Hyder.Server.Host/Hyder.Server.Host.csproj).
        start.Environment["DOTNET_gcServer"] = "1";
        start.Environment["DOTNET_ThreadPool_UnfairSemaphoreSpinLimit"] = "0";
        return Process.Start(start) ?? throw new InvalidOperationException("the floor server did not start");
    }

    /// <summary>The child: serves the method until its standard input closes, after a "ready on ADDRESS" line.</summary>
    private static async Task<int> ServeAsync(string? socketPath, int work)
    {
        FloorService.WorkNs = work * 1000L;
        var builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions { ApplicationName = typeof(TransportFloor).Assembly.GetName().Name });
        builder.WebHost.UseKestrelCore();
        builder.Services.AddGrpc();
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            if (socketPath is not null)
            {
                kestrel.ListenUnixSocket(socketPath, listen => listen.Protocols = HttpProtocols.Http2);
            }
            else
            {
                kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2);
            }
        });
        var app = builder.Build();
        app.MapGrpcService<FloorService>();
        await app.StartAsync();
        var address = app.Urls.FirstOrDefault() ?? socketPath;
        Console.WriteLine($"ready on {address}");
        await Console.In.ReadToEndAsync();
        await app.StopAsync();
        return 0;
    }

    /// <summary>The option's whole number, the fallback when it is absent, or null when it is not a whole number.</summary>
    private static int? Int(string[] args, string name, int fallback) =>
        ReportArguments.Option(args, name) is not { } text ? fallback
        : int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out var value) ? value
        : null;

    private const string Usage = """
        Usage: dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- rpc-floor [options]

        What Grpc.AspNetCore and Grpc.Net.Client alone cost per interactive transaction of the YCSB
        tool's main job: a child process serves a bare streaming method (no database), this one drives
        it; prints transactions per second and each process's CPU per transaction, per round.

          --streams N      kept calls, each running one transaction at a time (default 64, as the main job's 2 x 32)
          --warmup S       seconds before measuring each round (default 3)
          --seconds S      seconds measured per round (default 10)
          --rounds N       rounds; with --transport both each round runs both, alternating (default 3)
          --transport T    tcp (loopback), uds (a Unix socket) or both (default tcp)
          --work-us N      CPU microseconds the server spends per transaction, standing in for the engine (default 0)
        """;

    /// <summary>The method's binding, as Grpc.Tools would generate it for a service base class.</summary>
    [BindServiceMethod(typeof(FloorBase), nameof(BindService))]
    internal abstract class FloorBase
    {
        public static void BindService(ServiceBinderBase binder, FloorBase? service) =>
            binder.AddMethod(ExchangeMethod, service is null ? null : service.Exchange);

        public abstract Task Exchange(IAsyncStreamReader<byte[]> requests, IServerStreamWriter<byte[]> responses, ServerCallContext context);
    }

    /// <summary>Answers each request with a preallocated response of the length it asks for.</summary>
    internal sealed class FloorService : FloorBase
    {
        private static readonly Dictionary<int, byte[]> s_responses = Exchanges.ToDictionary(e => e.Response, e => new byte[e.Response]);
        private static readonly int s_lastAnswer = Exchanges[^1].Response;

        /// <summary>CPU nanoseconds spent on each transaction's last exchange (<c>--work-us</c>).</summary>
        internal static long WorkNs { get; set; }

        public override async Task Exchange(IAsyncStreamReader<byte[]> requests, IServerStreamWriter<byte[]> responses, ServerCallContext context)
        {
            while (await requests.MoveNext(context.CancellationToken))
            {
                var answer = BinaryPrimitives.ReadInt32LittleEndian(requests.Current);
                if (answer == s_lastAnswer && WorkNs > 0)
                {
                    Work(WorkNs);
                }

                await responses.WriteAsync(s_responses[answer]);
            }
        }

        private static void Work(long nanoseconds)
        {
            var until = ThreadCpu.NowNs() + nanoseconds;
            while (ThreadCpu.NowNs() < until)
            {
                Thread.SpinWait(20);
            }
        }
    }
}
