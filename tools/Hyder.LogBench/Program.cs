using System.Globalization;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Transport;
using Hyder.LogBench;

// Loopback appends/s through client -> sequencer -> chain of real unit processes.
//   dotnet run -c Release --project tools/Hyder.LogBench -- [--clients 64] [--seconds 10] [--replicas 2]
//       [--chains 1] [--block-size 8192] [--fsync group|none] [--commit-delay-us N] [--page-cache-slots N] [--warmup 2] [--tokens] [--embedded] [--batch-tokens] [--tls]
const string Usage = """
    Hyder.LogBench: appends/s of fixed-size blocks through client -> sequencer -> chain of log units on loopback.

    usage: dotnet run -c Release --project tools/Hyder.LogBench -- [options]
      --clients N        concurrent appends (default 64)
      --seconds N        measured seconds (default 10)
      --warmup N         warm-up seconds before measuring (default 2)
      --replicas N       units per chain (default 2)
      --chains N         chains the log is striped over (default 1)
      --block-size N     block size in bytes (default 8192)
      --fsync group|none group commit (durable, default) or no fsync
      --commit-delay-us N  the units' group-commit delay (docs/log.md; default: 200 embedded, 0 in unit processes)
      --page-cache-slots N how many of the newest durable slots the units keep in the page cache
                         (docs/log.md, "The page cache"; default 1024; 0: leave it to the kernel)
      --tokens           also measure sequencer tokens/s
      --embedded         units, sequencer and client in this process (no sockets)
      --batch-tokens     let overlapping appends share one token request
      --tls              mutual TLS between the client and every host, with a throwaway CA
                         and member certificates made for this run (default: plaintext)
      --help             this text
    """;

if (args.Contains("--help") || args.Contains("-h"))
{
    Console.WriteLine(Usage);
    return;
}

Settings settings;
try
{
    settings = Settings.Parse(args);
}
catch (Exception e) when (e is ArgumentException or FormatException or IndexOutOfRangeException)
{
    Console.Error.WriteLine($"error: {(e is IndexOutOfRangeException ? "an option is missing its value" : e.Message)}");
    Console.Error.WriteLine(Usage);
    Environment.ExitCode = 2;
    return;
}

var configuration = new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory)).Parent!.Name;
var data = Path.Combine(Path.GetTempPath(), "hyder-logbench-" + Guid.NewGuid().ToString("N")[..8]);
Console.WriteLine($"# Hyder log benchmark: {Environment.ProcessorCount} cores, {System.Runtime.InteropServices.RuntimeInformation.OSDescription}, .NET {Environment.Version}");
Console.WriteLine($"# {settings.Chains} chain(s) x {settings.Replicas} replica(s) of unit processes on loopback, {settings.Clients} concurrent appends, " +
    $"{settings.BlockSize} B blocks, fsync {settings.Fsync} (commit delay {(settings.CommitDelayUs is { } us ? $"{us} µs" : "default")}, page cache {(Hyder.Log.Units.LogUnitOptions.DropsPages(settings.FsyncPolicy, settings.PageCacheSlots) ? $"the newest {settings.PageCacheSlots} slots" : "left to the kernel")}), {settings.Seconds} s measured after {settings.Warmup} s warm-up, " +
    $"{(settings.Tls && !settings.Embedded ? "mutual TLS" : "plaintext")}, data in {data}");

if (settings.Embedded)
{
    // The same client and units inside this process, no sockets: the log's own cost.
    await using var embedded = await Hyder.Log.Embedded.EmbeddedLog.OpenAsync(new Hyder.Log.Embedded.EmbeddedLogOptions
    {
        DataDirectory = data,
        Replicas = settings.Replicas,
        Chains = settings.Chains,
        BlockSize = settings.BlockSize,
        Fsync = settings.FsyncPolicy,
        CommitDelay = settings.CommitDelayUs is { } delayUs ? TimeSpan.FromMicroseconds(delayUs) : Hyder.Log.Units.LogUnitOptions.EmbeddedCommitDelay,
        CachedSlots = settings.PageCacheSlots,
    });
    Console.WriteLine("# embedded: units, sequencer and client in this process (segment files, no sockets)");
    await Measure.AppendsAsync(embedded, settings, []);
    Directory.Delete(data, recursive: true);
    return;
}

var hosts = new List<HostProcess>();
Directory.CreateDirectory(data);
using var cluster = settings.Tls ? new ThrowawayCluster(data) : null;
string[] Member(string name) => cluster?.MemberArguments(name) ?? ["--cluster-allow-plaintext"];
using var security = cluster?.ClientSecurity() ?? TransportSecurity.Plaintext;
try
{
    var control = await HostProcess.StartAsync(configuration, ["--role", "projection,sequencer", "--data", Path.Combine(data, "control"), "--port", "0", .. Member("control")]);
    hosts.Add(control);
    var chains = new List<IReadOnlyList<string>>();
    for (var c = 0; c < settings.Chains; c++)
    {
        var chain = new List<string>();
        for (var r = 0; r < settings.Replicas; r++)
        {
            var unit = await HostProcess.StartAsync(configuration, ["--role", "unit", "--data", Path.Combine(data, $"u{c}{r}"), "--port", "0",
                "--block-size", settings.BlockSize.ToString(CultureInfo.InvariantCulture), "--fsync", settings.Fsync,
                "--commit-delay-us", (settings.CommitDelayUs ?? 0).ToString(CultureInfo.InvariantCulture),
                "--page-cache-slots", settings.PageCacheSlots.ToString(CultureInfo.InvariantCulture), .. Member($"unit-{c}-{r}")]);
            hosts.Add(unit);
            chain.Add(unit.Endpoint);
        }

        chains.Add(chain);
    }

    await using var store = new RemoteProjectionStore(control.Endpoint, security);
    await using var connector = new TcpConnector(settings.BlockSize, security: security);
    await new LogAdmin(store, connector).BootstrapAsync(new Projection
    {
        Epoch = 1,
        BlockSize = settings.BlockSize,
        Sequencer = control.Endpoint,
        Ranges = [new LayoutRange { Start = 0, Chains = chains }],
    });
    await using var log = await LogClient.ConnectAsync(store, connector, new LogClientOptions { BatchTokens = settings.BatchTokens });

    if (settings.Tokens)
    {
        await Measure.TokensAsync(connector.Sequencer(control.Endpoint), settings, 1);
        await Measure.TokensAsync(connector.Sequencer(control.Endpoint), settings, 64);
    }

    await Measure.AppendsAsync(log, settings, hosts);
}
finally
{
    foreach (var host in hosts)
    {
        await host.DisposeAsync();
    }

    Directory.Delete(data, recursive: true);
}

internal sealed class Settings
{
    public int Clients { get; private set; } = 64;

    public int Seconds { get; private set; } = 10;

    public int Warmup { get; private set; } = 2;

    public int Replicas { get; private set; } = 2;

    public int Chains { get; private set; } = 1;

    public int BlockSize { get; private set; } = 8192;

    public string Fsync { get; private set; } = "group";

    /// <summary><see cref="Fsync"/> as the log's policy.</summary>
    public Hyder.Log.Storage.FsyncPolicy FsyncPolicy => Fsync == "none" ? Hyder.Log.Storage.FsyncPolicy.None : Hyder.Log.Storage.FsyncPolicy.GroupCommit;

    /// <summary>Null: each mode's default (the embedded log's 200 µs, a log host's none).</summary>
    public int? CommitDelayUs { get; private set; }

    public int PageCacheSlots { get; private set; } = Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots;

    public bool Tokens { get; private set; }

    public bool Embedded { get; private set; }

    public bool BatchTokens { get; private set; }

    public bool Tls { get; private set; }

    public static Settings Parse(string[] args)
    {
        var s = new Settings();
        for (var i = 0; i < args.Length; i++)
        {
            string Next() => args[++i];
            int NextInt() => int.Parse(Next(), CultureInfo.InvariantCulture);
            switch (args[i])
            {
                case "--clients": s.Clients = NextInt(); break;
                case "--seconds": s.Seconds = NextInt(); break;
                case "--warmup": s.Warmup = NextInt(); break;
                case "--replicas": s.Replicas = NextInt(); break;
                case "--chains": s.Chains = NextInt(); break;
                case "--block-size": s.BlockSize = NextInt(); break;
                case "--fsync":
                    s.Fsync = Next();
                    if (s.Fsync is not ("group" or "none"))
                    {
                        throw new ArgumentException($"--fsync must be group or none, not {s.Fsync}.");
                    }

                    break;
                case "--commit-delay-us":
                    s.CommitDelayUs = NextInt();
                    if (Hyder.Log.Units.LogUnitOptions.CommitDelayMicrosecondsError(s.CommitDelayUs.Value) is { } commitDelayError)
                    {
                        throw new ArgumentException(commitDelayError);
                    }

                    break;
                case "--page-cache-slots":
                    s.PageCacheSlots = NextInt();
                    if (Hyder.Log.Units.LogUnitOptions.CachedSlotsError(s.PageCacheSlots) is { } pageCacheError)
                    {
                        throw new ArgumentException(pageCacheError);
                    }

                    break;
                case "--tokens": s.Tokens = true; break;
                case "--embedded": s.Embedded = true; break;
                case "--batch-tokens": s.BatchTokens = true; break;
                case "--tls": s.Tls = true; break;
                default: throw new ArgumentException($"unknown option {args[i]}.");
            }
        }

        if (s.Tls && s.Embedded)
        {
            throw new ArgumentException("--tls and --embedded: the embedded log has no sockets to protect.");
        }

        return s;
    }
}
