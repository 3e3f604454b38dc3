using System.CommandLine;
using Hyder.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Host;

/// <summary>
/// The command line. Every setting is a configuration key; the command line is the last of three
/// layers (appsettings.json or <c>--config</c>, then <c>HYDER_</c> environment variables, then the
/// options given here), so <c>--help</c>, the JSON file and the environment name the same settings.
/// </summary>
internal static class ServeCommand
{
    /// <summary>Exit code for configuration the host cannot run with.</summary>
    public const int BadConfiguration = 2;

    /// <summary>The prefix of environment variables read as configuration (<c>HYDER_CLUSTER__DISTANCE=4</c>).</summary>
    public const string EnvironmentPrefix = "HYDER_";

    private static readonly Option<string?> s_config = new("--config")
    {
        Description = "JSON configuration file (default: appsettings.json in the working directory, if there is one).",
        HelpName = "file",
    };

    private static readonly Option<bool> s_embedded = new("--embedded")
    {
        Description = "Run the shared log in this process (sequencer, one log unit, projection store): one command is a working single-machine cluster. [Log:Embedded]",
    };

    private static readonly Option<string[]> s_peers = new("--peer")
    {
        Description = "A peer's broadcast endpoint HOST:PORT (repeat or separate with commas). [Broadcast:Peers]",
        HelpName = "endpoint",
        AllowMultipleArgumentsPerToken = true,
    };

    private static readonly Option<bool> s_allowPlaintext = new("--cluster-allow-plaintext")
    {
        Description = "Talk to the log's hosts and the broadcast peers without TLS (a trusted network, tests). A remote log or broadcast needs this or the three --cluster-tls files. [ClusterTls:AllowPlaintext]",
    };

    private static readonly Option<bool> s_groupMeld = new("--group-meld")
    {
        Description = "Group meld on (a cluster setting: every server must agree). [Cluster:GroupMeld]",
    };

    /// <summary>The settings that take one value, with their configuration keys.</summary>
    private static readonly (Option<string> Option, string Key)[] s_values =
    [
        Value("--server-id", SettingKeys.ServerId, "id", "This server's name (logs, status, broadcast handshake); unique in the cluster. Default server-1."),
        Value("--listen", SettingKeys.Listen, "url", "gRPC address: http://HOST:PORT, or https://HOST:PORT with --tls-certificate. Default http://127.0.0.1:7400; port 0 lets the OS choose."),
        Value("--tls-certificate", SettingKeys.TlsCertificate, "file", "PKCS#12 (.pfx) certificate for an https --listen address."),
        Value("--tls-password", SettingKeys.TlsPassword, "password", "Password of the --tls-certificate file."),
        Value("--data", SettingKeys.Data, "dir", "Data directory of the embedded log. Without it the embedded log uses a temporary directory removed on exit."),
        Value("--log", SettingKeys.Log, "store", "A remote log, by its projection store as log hosts take it: file:DIR, etcd:http://HOST:2379 or tcp:HOST:PORT."),
        Value("--fsync", SettingKeys.Fsync, "policy", "Embedded log: group (acknowledge after a group-commit fsync; default) or none (after the page cache)."),
        Value("--premeld-threads", SettingKeys.PremeldThreads, "t", "Premeld threads t (0: premeld off; default 0). Cluster setting."),
        Value("--distance", SettingKeys.Distance, "d", "Premeld distance d (default 0). Cluster setting."),
        Value("--block-size", SettingKeys.BlockSize, "bytes", "Intention block size (default 8192). Cluster setting."),
        Value("--state-window", SettingKeys.StateWindow, "W", "Ordinals a snapshot may lie behind before its intention aborts (default 16384). Cluster setting."),
        Value("--max-in-flight", SettingKeys.MaxInFlight, "n", "Admission control: this server's transactions awaiting their outcome, at most (default 512)."),
        Value("--checkpoint-every", SettingKeys.CheckpointEvery, "n", "Write a checkpoint every n ordinals (default 0: only when asked)."),
        Value("--max-key-bytes", SettingKeys.MaxKeyBytes, "bytes", "Longest key (default 1024)."),
        Value("--max-value-bytes", SettingKeys.MaxValueBytes, "bytes", "Longest value (default 65536)."),
        Value("--max-operations", SettingKeys.MaxOperations, "n", "Most operations in one transaction (default 1024)."),
        Value("--max-scan-rows", SettingKeys.MaxScanRows, "n", "Most rows one scan returns (default 10000)."),
        Value("--max-message-bytes", SettingKeys.MaxMessageBytes, "bytes", "Largest gRPC request or response (default 4194304)."),
        Value("--broadcast-listen", SettingKeys.BroadcastListen, "endpoint", "Intention broadcast: accept peers on HOST:PORT. Without it and without peers, broadcast is off."),
        Value("--cluster-id", SettingKeys.ClusterId, "name", "The cluster's name in the broadcast handshake; every server uses the same (default hyder)."),
        Value("--cluster-tls-cert", SettingKeys.ClusterTlsCertificate, "file", "This member's certificate (PEM; intermediates may follow) for mutual TLS with the log's hosts and the broadcast peers."),
        Value("--cluster-tls-key", SettingKeys.ClusterTlsKey, "file", "The private key of --cluster-tls-cert (PEM, unencrypted)."),
        Value("--cluster-ca", SettingKeys.ClusterTlsCa, "file", "The cluster CA (PEM bundle): the only issuer whose member certificates are accepted."),
        Value("--log-format", SettingKeys.LogFormat, "format", $"Console log format: {ServiceHosting.LogFormatValues} (default systemd when systemd started the process, else simple)."),
    ];

    /// <summary>Parses <paramref name="args"/> and runs the server or prints help; returns the exit code.</summary>
    public static async Task<int> InvokeAsync(string[] args)
    {
        var root = CreateRoot();
        var parse = root.Parse(args);
        if (parse.Errors.Count > 0)
        {
            foreach (var error in parse.Errors)
            {
                await Console.Error.WriteLineAsync(error.Message).ConfigureAwait(false);
            }

            await Console.Error.WriteLineAsync("See hyder-server --help.").ConfigureAwait(false);
            return BadConfiguration;
        }

        // The console lifetime handles SIGTERM and Ctrl-C: it stops the host, which stops the
        // server in order, and the action then returns 0.
        return await parse.InvokeAsync(new InvocationConfiguration { ProcessTerminationTimeout = null }).ConfigureAwait(false);
    }

    /// <summary>The command line's root command, its options and its action.</summary>
    internal static RootCommand CreateRoot()
    {
        var root = new RootCommand(
            "Hyder transaction server: one server of a Hyder cluster behind the hyder.v1.Hyder gRPC API. "
            + "Settings come from appsettings.json (or --config), then HYDER_ environment variables "
            + "(HYDER_CLUSTER__DISTANCE=4), then these options; the configuration key is in brackets. "
            + "Bad configuration exits with code 2.");
        root.Options.Add(s_config);
        root.Options.Add(s_embedded);
        foreach (var (option, _) in s_values)
        {
            root.Options.Add(option);
        }

        root.Options.Add(s_groupMeld);
        root.Options.Add(s_allowPlaintext);
        root.Options.Add(s_peers);
        root.SetAction(RunAsync);
        return root;
    }

    private static (Option<string>, string) Value(string name, string key, string helpName, string description) =>
        (new Option<string>(name) { Description = $"{description} [{key}]", HelpName = helpName }, key);

    private static async Task<int> RunAsync(ParseResult parse, CancellationToken cancellationToken)
    {
        HostSettings settings;
        IConfiguration configuration;
        ConsoleLogFormat logFormat;
        try
        {
            configuration = BuildConfiguration(parse);
            settings = HostSettings.Read(configuration);
            if (!ServiceHosting.TryParseLogFormat(configuration[SettingKeys.LogFormat], Environment.GetEnvironmentVariable, out logFormat))
            {
                throw new HostConfigurationException($"--log-format [{SettingKeys.LogFormat}] '{configuration[SettingKeys.LogFormat]}' is not {ServiceHosting.LogFormatValues}.");
            }
        }
        catch (HostConfigurationException e)
        {
            await Console.Error.WriteLineAsync($"hyder-server: {e.Message}").ConfigureAwait(false);
            return BadConfiguration;
        }

        var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true, Args = [] });
        // The host's and Kestrel's own lifecycle chatter stays out; the server logs its own ready line.
        builder.Logging.AddFilter("Microsoft.Hosting.Lifetime", LogLevel.Warning);
        builder.Logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
        builder.Logging.AddConfiguration(configuration.GetSection("Logging"));
        builder.Logging.AddHostConsole(logFormat);
        builder.Services.AddSingleton(settings);

        // First, so READY=1 follows the server's start and the watchdog outlives its stop.
        builder.Services.AddSystemdNotify();
        builder.Services.AddHostedService<ServerHostService>();
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(15));
        using var host = builder.Build();
        try
        {
            await host.RunAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Hyder.Server.Cluster.ServerStartException e)
        {
            // The log was written by a cluster with other settings: configuration, not a crash.
            await Console.Error.WriteLineAsync($"hyder-server: {e.Message}").ConfigureAwait(false);
            return BadConfiguration;
        }
        catch (Exception e) when (e is IOException or System.Net.Sockets.SocketException or Hyder.Log.SharedLogException or TimeoutException)
        {
            // A port in use, an unreachable log: the message says it; a stack trace would not help.
            await Console.Error.WriteLineAsync($"hyder-server: could not start: {e.Message}").ConfigureAwait(false);
            return 1;
        }

        return 0;
    }

    /// <summary>The three configuration layers of a parsed command line; a file that cannot be read throws <see cref="HostConfigurationException"/>.</summary>
    internal static IConfiguration BuildConfiguration(ParseResult parse)
    {
        var builder = new ConfigurationBuilder();
        if (parse.GetValue(s_config) is { } file)
        {
            var path = Path.GetFullPath(file);
            if (!File.Exists(path))
            {
                throw new HostConfigurationException($"--config: {path} does not exist.");
            }

            builder.AddJsonFile(path, optional: false);
        }
        else
        {
            builder.AddJsonFile(Path.Combine(Directory.GetCurrentDirectory(), "appsettings.json"), optional: true);
        }

        builder.AddEnvironmentVariables(EnvironmentPrefix);
        var given = new Dictionary<string, string?>(StringComparer.OrdinalIgnoreCase);
        foreach (var (option, key) in s_values)
        {
            if (parse.GetResult(option) is { Implicit: false })
            {
                given[key] = parse.GetValue(option);
            }
        }

        if (parse.GetResult(s_embedded) is { Implicit: false })
        {
            given[SettingKeys.Embedded] = parse.GetValue(s_embedded) ? "true" : "false";
        }

        if (parse.GetResult(s_groupMeld) is { Implicit: false })
        {
            given[SettingKeys.GroupMeld] = parse.GetValue(s_groupMeld) ? "true" : "false";
        }

        if (parse.GetResult(s_allowPlaintext) is { Implicit: false })
        {
            given[SettingKeys.ClusterTlsAllowPlaintext] = parse.GetValue(s_allowPlaintext) ? "true" : "false";
        }

        if (parse.GetResult(s_peers) is { Implicit: false })
        {
            given[SettingKeys.Peers] = string.Join(',', parse.GetValue(s_peers) ?? []);
        }

        builder.AddInMemoryCollection(given);
        try
        {
            return builder.Build();
        }
        catch (Exception e) when (e is InvalidDataException or FormatException or IOException)
        {
            throw new HostConfigurationException($"configuration file: {e.Message}");
        }
    }
}
