using System.Text;
using Hyder.Fuzz.Engine;
using Hyder.Server.Host;
using LogHost = Hyder.Log.Host;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// hyder-server's <c>--config</c> JSON file, read by the host's own code: the command line's
/// configuration layers (ServeCommand.BuildConfiguration, Microsoft.Extensions.Configuration.Json
/// underneath) and <see cref="HostSettings.Read"/>. Every rejection must be a
/// HostConfigurationException: the host prints it and exits with code 2.
/// </summary>
internal sealed class ServerConfigTarget : FuzzTarget
{
    private readonly string _file = Path.Combine(Directory.Exists("/dev/shm") ? "/dev/shm" : Path.GetTempPath(), $"hyder-fuzz-{Environment.ProcessId}-{Guid.NewGuid():N}.json");

    public override string Name => "server-config";

    public override string Description => "hyder-server's JSON configuration file: ServeCommand.BuildConfiguration and HostSettings.Read";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(HostConfigurationException)];

    public override long AllocationBound(int inputLength) => (2L << 20) + (512L * inputLength);

    public override void Execute(byte[] input, Seed seed)
    {
        File.WriteAllBytes(_file, input);
        ServerArgsTarget.Read(["--config", _file]);
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        yield return Json("the documented example", """
            {
              "ServerId": "s1",
              "Listen": "http://127.0.0.1:7400",
              "Log": { "Embedded": true, "Data": "/var/lib/hyder", "Fsync": "group" },
              "Cluster": { "PremeldThreads": 2, "Distance": 4, "GroupMeld": true, "BlockSize": 8192, "StateWindow": 16384 },
              "Limits": { "MaxKeyBytes": 1024, "MaxValueBytes": 65536, "MaxOperations": 1024, "MaxScanRows": 10000, "MaxTopK": 1024, "MaxMessageBytes": 4194304 },
              "MaxInFlight": 512,
              "Broadcast": { "Listen": "10.0.0.1:7401", "Peers": ["10.0.0.2:7401"], "ClusterId": "prod" },
              "ClusterTls": { "AllowPlaintext": true },
              "Logging": { "LogLevel": { "Default": "Information" } }
            }
            """);
        yield return Json("a remote log", """
            { "ServerId": "s2", "Listen": "http://[::1]:0", "Log": { "ProjectionStore": "tcp:127.0.0.1:7100" },
              "CheckpointEvery": 1000, "Broadcast": { "Peers": "127.0.0.1:7401, localhost:7402" },
              "ClusterTls": { "Certificate": "", "AllowPlaintext": "True" } }
            """);
        yield return Json("minimal", """{ "Log": { "Embedded": "true" } }""");
    }

    protected override void Dispose(bool disposing)
    {
        File.Delete(_file);
        base.Dispose(disposing);
    }

    private static Seed Json(string name, string text) => new(name, Encoding.UTF8.GetBytes(text));
}

/// <summary>
/// hyder-server's command line: System.CommandLine's parse (errors exit with code 2), then the
/// configuration layers and <see cref="HostSettings.Read"/>. The input is the arguments separated
/// by NUL bytes.
/// </summary>
internal sealed class ServerArgsTarget : FuzzTarget
{
    // One root command: its options are static and remember every command they were added to.
    private static readonly System.CommandLine.RootCommand s_root = ServeCommand.CreateRoot();

    public override string Name => "server-args";

    public override string Description => "hyder-server's command line: the parse, ServeCommand.BuildConfiguration and HostSettings.Read";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(HostConfigurationException)];

    public override long AllocationBound(int inputLength) => (2L << 20) + (512L * inputLength);

    public override void Execute(byte[] input, Seed seed) => Read(Arguments.Split(input));

    /// <summary>What the host does before it runs: parse, build the configuration, read the settings (null for --help and --version).</summary>
    public static HostSettings? Read(string[] args)
    {
        var parse = s_root.Parse(args);
        if (parse.Errors.Count > 0)
        {
            FuzzRejectionException.Throw(string.Join("; ", parse.Errors.Select(e => e.Message)));
        }

        if (parse.Action != s_root.Action)
        {
            // --help or --version: the host prints and exits 0 without reading its settings.
            return null;
        }

        // The host builds its configuration once; here it is built per case, so its file providers are let go.
        var configuration = ServeCommand.BuildConfiguration(parse);
        try
        {
            return HostSettings.Read(configuration);
        }
        finally
        {
            (configuration as IDisposable)?.Dispose();
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        yield return Arguments.Seed("embedded", "--embedded", "--listen", "http://127.0.0.1:0", "--server-id", "s1", "--fsync", "none");
        yield return Arguments.Seed("cluster settings", "--embedded", "--data", "/tmp/hyder-data", "--premeld-threads", "2", "--distance", "4", "--group-meld", "--block-size", "1024", "--state-window", "64");
        yield return Arguments.Seed("remote log and peers", "--log", "tcp:127.0.0.1:7100", "--broadcast-listen", "127.0.0.1:7401", "--peer", "127.0.0.1:7402,127.0.0.1:7403", "--cluster-id", "prod", "--cluster-allow-plaintext");
        yield return Arguments.Seed("limits", "--embedded", "--max-key-bytes", "64", "--max-value-bytes", "0", "--max-operations", "8", "--max-scan-rows", "100", "--max-top-k", "16", "--max-message-bytes", "4096", "--max-in-flight", "16", "--checkpoint-every", "100");
        // TLS needs real certificate files, which a fixed corpus cannot hold; keys, roles and limits need none.
        yield return Arguments.Seed("security", "--embedded", "--listen", "http://127.0.0.1:7400", "--api-key", "ci writer sha256:0d0d21fb857f7a6d44a2283cbb0672beea36e157a63554da235440ca1883bdd1", "--anonymous", "reader", "--max-connections", "100", "--max-connections-per-address", "10", "--max-streams-per-connection", "20", "--max-header-bytes", "8192", "--idle-timeout", "60", "--request-headers-timeout", "5", "--request-timeout", "10");
    }
}

/// <summary>
/// hyder-log's command line: System.CommandLine's parse, then the serve command's settings
/// (ServeCommand.ReadSettings). Every rejection must be a HostConfigurationException (exit code 2).
/// </summary>
internal sealed class LogHostArgsTarget : FuzzTarget
{
    // One root command: its options are static and remember every command they were added to.
    private static readonly Lazy<System.CommandLine.RootCommand> s_root = new(() =>
    {
        var root = new System.CommandLine.RootCommand();
        LogHost.ServeCommand.Configure(root);
        return root;
    });

    public override string Name => "log-host-args";

    public override string Description => "hyder-log's command line: the parse and ServeCommand.ReadSettings";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(LogHost.HostConfigurationException)];

    public override long AllocationBound(int inputLength) => (2L << 20) + (512L * inputLength);

    public override void Execute(byte[] input, Seed seed)
    {
        var parse = s_root.Value.Parse(Arguments.Split(input));
        if (parse.Errors.Count > 0)
        {
            FuzzRejectionException.Throw(string.Join("; ", parse.Errors.Select(e => e.Message)));
        }

        if (parse.Action != s_root.Value.Action)
        {
            // --help, --version or an admin command: the serve command's settings are not read.
            return;
        }

        LogHost.ServeCommand.ReadSettings(parse);
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        yield return Arguments.Seed("unit", "--role", "unit", "--data", "/tmp/unit", "--port", "7101", "--block-size", "8192", "--slots-per-segment", "1024", "--fsync", "group", "--cluster-allow-plaintext");
        yield return Arguments.Seed("sequencer", "--role", "sequencer", "--port", "7100", "--listen", "0.0.0.0", "--advertise", "10.0.0.1:7100", "--projection-store", "file:/tmp/projections", "--cluster-allow-plaintext");
        yield return Arguments.Seed("every role", "--role", "unit,sequencer", "--role", "projection", "--data", "/tmp/all", "--listen", "::1", "--port", "0", "--fsync", "none", "--cluster-allow-plaintext");
    }
}

/// <summary>Command lines as fuzz inputs: arguments separated by NUL bytes.</summary>
internal static class Arguments
{
    public static string[] Split(byte[] input) => Encoding.UTF8.GetString(input).Split('\0');

    public static Seed Seed(string name, params string[] args)
    {
        var bytes = Encoding.UTF8.GetBytes(string.Join('\0', args));
        return new Seed(name, bytes);
    }
}
