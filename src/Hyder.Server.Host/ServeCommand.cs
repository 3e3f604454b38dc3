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

    private static readonly Option<string[]> s_apiKeys = new("--api-key")
    {
        Description = "An API key as 'NAME ROLE sha256:HEX' (hyder-server keys new prints it; the token itself never goes here); repeat for more. [Auth:Keys]",
        HelpName = "key",
    };

    private static readonly Option<string[]> s_certificateRoles = new("--certificate-role")
    {
        Description = "A client certificate's role: 'ROLE SUBJECT' (such as 'writer CN=app1') or 'ROLE sha256:HEX' (its SHA-256 thumbprint); repeat for more. Needs --tls-client-ca. [Auth:Certificates]",
        HelpName = "entry",
    };

    private static readonly Option<bool> s_allowPlaintext = new("--allow-plaintext")
    {
        Description = "Allow an http:// --listen address other than loopback: clients, tokens and data cross the network in cleartext. [Tls:AllowPlaintext]",
    };

    private static readonly Option<bool> s_service = new("--service")
    {
        Description = "Runs as a Windows service (deploy/windows/install.ps1 passes it; Windows only): the log goes to the event log unless --log-target says otherwise. The service lifetime itself comes on whenever the Service Control Manager starts the process.",
    };

    private static readonly Option<bool> s_clusterAllowPlaintext = new("--cluster-allow-plaintext")
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
        Value("--listen", SettingKeys.Listen, "url", "gRPC address: https://HOST:PORT with --tls-certificate, or http://HOST:PORT (cleartext: loopback only unless --allow-plaintext). Default http://127.0.0.1:7400; port 0 lets the OS choose."),
        Value("--tls-certificate", SettingKeys.TlsCertificate, "file", "The server's certificate for an https --listen address: PEM (.crt/.pem, with --tls-key unless the key is in the same file) or PKCS#12 (.pfx/.p12)."),
        Value("--tls-key", SettingKeys.TlsKey, "file", "PEM private key (PKCS#8, PKCS#1 or SEC1) of a PEM --tls-certificate."),
        Value("--tls-password", SettingKeys.TlsPassword, "password", "Password of a .pfx --tls-certificate or of an encrypted PEM key."),
        Value("--tls-client-ca", SettingKeys.TlsClientCa, "file", "PEM bundle of the CAs client certificates must chain to; without it no client certificate is asked for."),
        Value("--tls-client-certificates", SettingKeys.TlsClientCertificates, "mode", "With --tls-client-ca: allow (default: a client may present one) or require (the handshake fails without one)."),
        Value("--keys-file", SettingKeys.KeysFile, "file", "API keys, one 'NAME ROLE sha256:HEX' per line (# comments); hyder-server keys new makes them."),
        Value("--anonymous", SettingKeys.Anonymous, "role", "Role of callers without credentials: none, reader, writer or admin. Default: none when keys or certificate roles are configured, else admin on a loopback address (and an error elsewhere)."),
        Value("--max-connections", SettingKeys.MaxConnections, "n", "Open client connections, at most (default 4096; 0: no limit)."),
        Value("--max-connections-per-address", SettingKeys.MaxConnectionsPerAddress, "n", "Open connections from one IP address, at most (default 256; 0: no limit)."),
        Value("--max-streams-per-connection", SettingKeys.MaxStreamsPerConnection, "n", "Calls in flight on one connection, at most (default 100)."),
        Value("--max-stream-transactions", SettingKeys.MaxTransactionsPerStream, "n", "Transactions in flight on one ExecuteStream call, at most (default 128); the server reads no further request of that stream until one is answered."),
        Value("--max-header-bytes", SettingKeys.MaxHeaderBytes, "bytes", "Request headers of one call, at most (default 16384)."),
        Value("--idle-timeout", SettingKeys.IdleTimeout, "seconds", "Close a connection with no call in flight after this long (default 120)."),
        Value("--request-headers-timeout", SettingKeys.RequestHeadersTimeout, "seconds", "A new connection must send its request headers within this time (default 10)."),
        Value("--grpc-reflection", SettingKeys.GrpcReflection, "on|off", "gRPC server reflection, for grpcurl, Postman and IDEs to discover the API (default off). grpc.health.v1.Health is always on."),
        Value("--request-timeout", SettingKeys.RequestTimeout, "seconds", "Grace period after which a unary or server-streaming request must arrive at 240 bytes/s or more, else the call is cut off (default 30; 0: off)."),
        Value("--data", SettingKeys.Data, "dir", "Data directory of the embedded log. Without it the embedded log uses a temporary directory removed on exit."),
        Value("--log", SettingKeys.Log, "store", "A remote log, by its projection store as log hosts take it: file:DIR, etcd:http://HOST:2379 or tcp:HOST:PORT."),
        Value("--fsync", SettingKeys.Fsync, "policy", "Embedded log: group (acknowledge after a group-commit fsync; default) or none (after the page cache)."),
        Value("--page-cache-slots", SettingKeys.PageCacheSlots, "slots", $"Embedded log: how many of the newest durable slots stay in the page cache; older ones are dropped after each group-commit fsync (Linux; default {Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots}; 0: leave the page cache to the kernel)."),
        Value("--commit-delay-us", SettingKeys.CommitDelay, "microseconds", $"Embedded log: how long a busy group commit waits for more writes before its fsync, when the previous fsync covered at least {Hyder.Log.Units.LogUnitOptions.DefaultCommitSiblings} slots and the process has work queued (0: never; default 200, 0 on Windows)."),
        Value("--premeld-threads", SettingKeys.PremeldThreads, "t", "Premeld threads t (0: premeld off; default 0). Cluster setting."),
        Value("--distance", SettingKeys.Distance, "d", "Premeld distance d (default 0). Cluster setting."),
        Value("--block-size", SettingKeys.BlockSize, "bytes", "Intention block size (default 8192). Cluster setting."),
        Value("--state-window", SettingKeys.StateWindow, "W", "Ordinals a snapshot may lie behind before its intention aborts (default 16384). Cluster setting."),
        Value("--commutative", SettingKeys.Commutative, "on|off", "The Doppel module: on runs Add, Max, Min, OPut and TopKInsert as commutative operations (default); off as read-modify-writes. Cluster setting."),
        Value("--split-phase", SettingKeys.SplitPhase, "N", "Split phases of N ordinals for hot keys (default 0: off; docs/doppel.md). Cluster setting."),
        Value("--hot-threshold", SettingKeys.HotThreshold, "n", "Operations on a key in a split phase that make it split in the next (default 64). Cluster setting."),
        Value("--max-split-keys", SettingKeys.MaxSplitKeys, "n", "Most keys split by count in a phase (default 16). Cluster setting."),
        Value("--hot-keys", SettingKeys.HotKeys, "hex,...", "Keys labelled hot, split in every phase (hexadecimal, comma-separated). Cluster setting."),
        Value("--max-in-flight", SettingKeys.MaxInFlight, "n", "Admission control: this server's transactions awaiting their outcome, at most (default 512)."),
        Value("--checkpoint-every", SettingKeys.CheckpointEvery, "n", "Write a checkpoint every n ordinals (default 0: only when asked)."),
        Value("--trim-keep-checkpoints", SettingKeys.TrimKeepCheckpoints, "k", "Trim the shared log below the k-th latest checkpoint each time this server reads a checkpoint in the log (default 0: never; docs/server.md, \"Trimming the log\")."),
        Value("--trim-margin", SettingKeys.TrimMargin, "n", "Log positions kept below the checkpoint a trim keeps (default 0)."),
        Value("--max-key-bytes", SettingKeys.MaxKeyBytes, "bytes", "Longest key (default 1024)."),
        Value("--max-value-bytes", SettingKeys.MaxValueBytes, "bytes", "Longest value (default 65536)."),
        Value("--max-operations", SettingKeys.MaxOperations, "n", "Most operations in one transaction (default 1024)."),
        Value("--max-scan-rows", SettingKeys.MaxScanRows, "n", "Most rows one scan returns (default 10000)."),
        Value("--max-top-k", SettingKeys.MaxTopK, "k", "Largest k of a TopKInsert, 1 to 1024 (default 1024)."),
        Value("--max-message-bytes", SettingKeys.MaxMessageBytes, "bytes", "Largest gRPC request or response (default 4194304)."),
        Value("--broadcast-listen", SettingKeys.BroadcastListen, "endpoint", "Intention broadcast: accept peers on HOST:PORT. Without it and without peers, broadcast is off."),
        Value("--recycle-values", SettingKeys.RecycleValues, "on|off", "on (default): copy each written value into an array the engine reuses once nothing reaches it, so values do not end their lives in generation 2; off: keep each request's array (docs/value-storage.md)."),
        Value("--broadcast-trust", SettingKeys.BroadcastTrust, "on|off", "on: use a peer's broadcast block without reading the log (saves a log read per block; a peer wrong about a position makes this server diverge); off (default): use it only when the log holds the same bytes (docs/broadcast.md, \"Trust\")."),
        Value("--cluster-id", SettingKeys.ClusterId, "name", "The cluster's name in the broadcast handshake; every server uses the same (default hyder)."),
        Value("--spin", SettingKeys.Spin, "policy", "How an idle meld stage waits: auto (spin while every stage thread has a core of its own; default), spin, or yield (spin briefly, then yield, then sleep 1 ms; stage threads not pinned). yield for several servers on one machine."),
        Value("--final-meld-nice", SettingKeys.FinalMeldNice, "n", "Linux: the nice value (-20..19) the final-meld thread asks for while the stages block rather than spin (default 0: leave it at the process's; the YCSB tool's main job asks for -10). Below 0 needs CAP_SYS_NICE or RLIMIT_NICE (systemd: LimitNICE=); refused, the server runs on and its start line says so (docs/server.md, \"Final meld's priority\")."),
        Value("--cluster-tls-cert", SettingKeys.ClusterTlsCertificate, "file", "This member's certificate (PEM; intermediates may follow) for mutual TLS with the log's hosts and the broadcast peers."),
        Value("--cluster-tls-key", SettingKeys.ClusterTlsKey, "file", "The private key of --cluster-tls-cert (PEM, unencrypted)."),
        Value("--cluster-ca", SettingKeys.ClusterTlsCa, "file", "The cluster CA (PEM bundle): the only issuer whose member certificates are accepted."),
        Value("--log-format", SettingKeys.LogFormat, "format", $"Console log format: {ServiceHosting.LogFormatValues} (default systemd when systemd started the process, else simple)."),
        Value("--log-target", SettingKeys.LogTarget, "target", $"Where the log goes: {HostLogOptions.TargetValues} (default eventlog with --service, else console; eventlog only on Windows)."),
        Value("--log-file", SettingKeys.LogFile, "file", "The log file of --log-target file: appended, one line per event, rolled over to FILE.1 at 64 MiB."),
        Value("--event-source", SettingKeys.EventSource, "name", "The event source of --log-target eventlog and the service's name with --service (default hyder-server)."),
        Value("--metrics-listen", SettingKeys.MetricsListen, "host:port", HostMetrics.OptionDescription + " Metric names: docs/server.md."),
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
        root.Options.Add(s_clusterAllowPlaintext);
        root.Options.Add(s_peers);
        root.Options.Add(s_apiKeys);
        root.Options.Add(s_certificateRoles);
        root.Options.Add(s_allowPlaintext);
        root.Subcommands.Add(KeysCommand.Create());
        root.Subcommands.Add(TrimCommand.Create());
        root.Options.Add(s_service);
        root.SetAction(RunAsync);
        return root;
    }

    private static (Option<string>, string) Value(string name, string key, string helpName, string description) =>
        (new Option<string>(name) { Description = $"{description} [{key}]", HelpName = helpName }, key);

    private static async Task<int> RunAsync(ParseResult parse, CancellationToken cancellationToken)
    {
        HostSettings settings;
        IConfiguration configuration;
        HostLogOptions logOptions;
        try
        {
            configuration = BuildConfiguration(parse);
            settings = HostSettings.Read(configuration);
            logOptions = HostLogOptions.Read(
                parse.GetValue(s_service),
                configuration[SettingKeys.LogTarget],
                configuration[SettingKeys.LogFormat],
                configuration[SettingKeys.LogFile],
                configuration[SettingKeys.EventSource],
                "hyder-server",
                Environment.GetEnvironmentVariable,
                OperatingSystem.IsWindows(),
                Describe);
        }
        catch (Exception e) when (e is HostConfigurationException or HostLoggingException)
        {
            await Console.Error.WriteLineAsync($"hyder-server: {e.Message}").ConfigureAwait(false);
            return BadConfiguration;
        }

        return await RunHostAsync(settings, configuration, logOptions, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The log category of ASP.NET Core's per-request hosting diagnostics.</summary>
    private const string HostingDiagnosticsCategory = "Microsoft.AspNetCore.Hosting.Diagnostics";

    private static async Task<int> RunHostAsync(HostSettings settings, IConfiguration configuration, HostLogOptions logOptions, CancellationToken cancellationToken)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true, Args = [] });

        // First, so READY=1 follows the server's start and the watchdog outlives its stop.
        builder.Services.AddServiceHosting(logOptions.EventSource, Environment.GetEnvironmentVariable);
        // The host's and Kestrel's own lifecycle chatter stays out; the server logs its own ready line.
        builder.Logging.AddFilter("Microsoft.Hosting.Lifetime", LogLevel.Warning);
        builder.Logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
        // ASP.NET Core's hosting diagnostics start an Activity and a logging scope for every call
        // whenever their logger is on at any level, to log "Request starting/finished" lines at
        // Information: on the unary Execute path that is work and allocation per call for lines a
        // database server does not write. Off unless the configuration names the category
        // (Logging:LogLevel:Microsoft.AspNetCore.Hosting.Diagnostics; docs/server.md, "Logging").
        builder.Logging.AddFilter(HostingDiagnosticsCategory, LogLevel.None);
        builder.Logging.AddConfiguration(configuration.GetSection("Logging"));
        try
        {
            builder.Logging.AddHostLogging(logOptions);
            builder.Services.AddHostMetrics(configuration[SettingKeys.MetricsListen], $"--metrics-listen [{SettingKeys.MetricsListen}]", Hyder.Server.ServerMetrics.MeterName);
        }
        catch (HostLoggingException e)
        {
            await Console.Error.WriteLineAsync($"hyder-server: {e.Message}").ConfigureAwait(false);
            return BadConfiguration;
        }

        builder.Services.AddSingleton(settings);
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
        catch (Exception e) when (e is IOException or System.Net.Sockets.SocketException or System.Net.HttpListenerException or Hyder.Log.SharedLogException or TimeoutException)
        {
            // A port in use, an unreachable log: the message says it; a stack trace would not help.
            await Console.Error.WriteLineAsync($"hyder-server: could not start: {e.Message}").ConfigureAwait(false);
            return 1;
        }

        return 0;
    }

    /// <summary>An option with its configuration key, as messages name it.</summary>
    private static string Describe(string option) => option switch
    {
        "--log-format" => $"--log-format [{SettingKeys.LogFormat}]",
        "--log-target" => $"--log-target [{SettingKeys.LogTarget}]",
        "--log-file" => $"--log-file [{SettingKeys.LogFile}]",
        "--event-source" => $"--event-source [{SettingKeys.EventSource}]",
        _ => option,
    };

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
            given[SettingKeys.AllowPlaintext] = parse.GetValue(s_allowPlaintext) ? "true" : "false";
        }

        // One child key per value: a certificate subject may hold commas.
        foreach (var (option, key) in new[] { (s_apiKeys, SettingKeys.ApiKeys), (s_certificateRoles, SettingKeys.CertificateRoles) })
        {
            if (parse.GetResult(option) is { Implicit: false })
            {
                var values = parse.GetValue(option) ?? [];
                for (var i = 0; i < values.Length; i++)
                {
                    given[$"{key}:{i}"] = values[i];
                }
            }
        }

        if (parse.GetResult(s_clusterAllowPlaintext) is { Implicit: false })
        {
            given[SettingKeys.ClusterTlsAllowPlaintext] = parse.GetValue(s_clusterAllowPlaintext) ? "true" : "false";
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
