using System.CommandLine;
using System.Net;
using Hyder.Hosting;
using Hyder.Log.Storage;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Host;

/// <summary>The root command: serve one or more roles until SIGTERM or Ctrl-C.</summary>
internal static class ServeCommand
{
    private static readonly Option<string[]> s_role = new("--role")
    {
        Description = "Roles to run: unit, sequencer, projection (repeat or separate with commas).",
        AllowMultipleArgumentsPerToken = true,
    };

    private static readonly Option<string?> s_data = new("--data") { Description = "Data directory (unit segments, projection files)." };

    private static readonly Option<int> s_port = new("--port") { Description = "TCP port to listen on.", DefaultValueFactory = _ => 7100 };

    private static readonly Option<string> s_listen = new("--listen")
    {
        Description = "Address to listen on.",
        DefaultValueFactory = _ => "127.0.0.1",
    };

    private static readonly Option<string?> s_advertise = new("--advertise")
    {
        Description = "This server's endpoint as projections name it (default LISTEN:PORT).",
    };

    private static readonly Option<int> s_blockSize = new("--block-size") { Description = "Largest block in bytes.", DefaultValueFactory = _ => 8192 };

    private static readonly Option<int> s_slots = new("--slots-per-segment") { Description = "Slots per segment file.", DefaultValueFactory = _ => 8192 };

    private static readonly Option<string> s_fsync = new("--fsync")
    {
        Description = "group: acknowledge after a group-commit fsync (default); none: after the write reaches the page cache.",
        DefaultValueFactory = _ => "group",
    };

    private static readonly Option<int> s_commitDelay = new("--commit-delay-us")
    {
        Description = $"Microseconds a group commit waits for more writes before its fsync, when the previous fsync covered at least {LogUnitOptions.DefaultCommitSiblings} slots and this process has work queued (default 0: never; docs/log.md).",
        DefaultValueFactory = _ => 0,
    };

    private static readonly Option<int> s_pageCacheSlots = new("--page-cache-slots")
    {
        Description = $"How many of the newest durable slots each unit leaves in the page cache; older ones are dropped after each group-commit fsync (Linux; default {LogUnitOptions.DefaultCachedSlots}; 0: leave the page cache to the kernel; docs/log.md).",
        DefaultValueFactory = _ => LogUnitOptions.DefaultCachedSlots,
    };

    private static readonly Option<string?> s_logFormat = new("--log-format")
    {
        Description = $"Console log format: {ServiceHosting.LogFormatValues} (default systemd when systemd started the process, else simple).",
    };

    private static readonly Option<string?> s_logTarget = new("--log-target")
    {
        Description = $"Where the log goes: {HostLogOptions.TargetValues} (default eventlog with --service, else console; eventlog only on Windows).",
    };

    private static readonly Option<string?> s_logFile = new("--log-file")
    {
        Description = "The log file of --log-target file: appended, one line per event, rolled over to FILE.1 at 64 MiB.",
    };

    private static readonly Option<string?> s_eventSource = new("--event-source")
    {
        Description = "The event source of --log-target eventlog and the service's name with --service (default hyder-log).",
    };

    private static readonly Option<string?> s_metricsListen = new("--metrics-listen")
    {
        Description = HostMetrics.OptionDescription + " Metric names: docs/server.md.",
        HelpName = "host:port",
    };

    private static readonly Option<bool> s_service = new("--service")
    {
        Description = "Runs as a Windows service (deploy/windows/install.ps1 passes it; Windows only): the log goes to the event log unless --log-target says otherwise. The service lifetime itself comes on whenever the Service Control Manager starts the process.",
    };

    /// <summary>The projection store option, shared with the admin commands.</summary>
    public static readonly Option<string?> ProjectionStore = new("--projection-store")
    {
        Description = "Projection store: file:DIR, etcd:http://127.0.0.1:2379 or tcp:ADDRESS:PORT.",
    };

    public static void Configure(RootCommand root)
    {
        root.Options.Add(s_role);
        root.Options.Add(s_data);
        root.Options.Add(s_port);
        root.Options.Add(s_listen);
        root.Options.Add(s_advertise);
        root.Options.Add(s_blockSize);
        root.Options.Add(s_slots);
        root.Options.Add(s_fsync);
        root.Options.Add(s_commitDelay);
        root.Options.Add(s_pageCacheSlots);
        root.Options.Add(ProjectionStore);
        root.Options.Add(s_logFormat);
        root.Options.Add(s_logTarget);
        root.Options.Add(s_logFile);
        root.Options.Add(s_eventSource);
        root.Options.Add(s_service);
        root.Options.Add(s_metricsListen);
        ClusterTlsOptions.AddTo(root);
        root.SetAction(RunAsync);
    }

    private static async Task<int> RunAsync(ParseResult parse, CancellationToken cancellationToken)
    {
        HostSettings options;
        try
        {
            options = ReadSettings(parse);
        }
        catch (HostConfigurationException e)
        {
            await Console.Error.WriteLineAsync(e.Message).ConfigureAwait(false);
            return 2;
        }

        return await RunHostAsync(options, cancellationToken).ConfigureAwait(false);
    }

    private static async Task<int> RunHostAsync(HostSettings options, CancellationToken cancellationToken)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();

        // First, so READY=1 follows the roles' start and the watchdog outlives their stop.
        builder.Services.AddServiceHosting(options.Logging.EventSource, Environment.GetEnvironmentVariable);
        builder.Logging.ClearProviders();
        try
        {
            builder.Logging.AddHostLogging(options.Logging);
            builder.Services.AddHostMetrics(options.MetricsListen, "--metrics-listen", LogServer.MeterName);
        }
        catch (HostLoggingException e)
        {
            await Console.Error.WriteLineAsync(e.Message).ConfigureAwait(false);
            return 2;
        }

        builder.Services.AddSingleton(options);
        builder.Services.AddHostedService<LogHostService>();
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(10));
        using var host = builder.Build();
        try
        {
            await host.RunAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (System.Net.HttpListenerException e)
        {
            await Console.Error.WriteLineAsync($"--metrics-listen: {e.Message}").ConfigureAwait(false);
            return 1;
        }

        return 0;
    }

    /// <summary>The settings of a parsed command line; what the host cannot run with throws <see cref="HostConfigurationException"/> (exit code 2).</summary>
    internal static HostSettings ReadSettings(ParseResult parse)
    {
        var roles = (parse.GetValue(s_role) ?? []).SelectMany(r => r.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)).ToHashSet();
        if (roles.Count == 0 || roles.Any(r => r is not ("unit" or "sequencer" or "projection")))
        {
            throw new HostConfigurationException("--role must name unit, sequencer and/or projection.");
        }

        // Checked here, not where they are used, so a bad value exits with code 2 and a sentence
        // instead of an exception from inside the host's start.
        var listen = parse.GetValue(s_listen);
        if (!IPAddress.TryParse(listen, out var address))
        {
            throw new HostConfigurationException($"--listen '{listen}' is not an IP address (use 0.0.0.0 to listen on every interface).");
        }

        var port = parse.GetValue(s_port);
        if (port is < IPEndPoint.MinPort or > IPEndPoint.MaxPort)
        {
            throw new HostConfigurationException($"--port {port} is outside {IPEndPoint.MinPort}..{IPEndPoint.MaxPort}.");
        }

        // LogUnitOptions.Validate's limits; the sequencer and the admin commands read blocks of this size too.
        var blockSize = parse.GetValue(s_blockSize);
        if (blockSize is < 64 or > 1 << 20)
        {
            throw new HostConfigurationException($"--block-size {blockSize} is outside 64..{1 << 20} bytes.");
        }

        var slots = parse.GetValue(s_slots);
        if (slots < 2)
        {
            throw new HostConfigurationException($"--slots-per-segment {slots}: a segment holds at least two slots.");
        }

        var commitDelay = parse.GetValue(s_commitDelay);
        if (LogUnitOptions.CommitDelayMicrosecondsError(commitDelay) is { } commitDelayError)
        {
            throw new HostConfigurationException(commitDelayError);
        }

        var pageCacheSlots = parse.GetValue(s_pageCacheSlots);
        if (LogUnitOptions.CachedSlotsError(pageCacheSlots) is { } pageCacheSlotsError)
        {
            throw new HostConfigurationException(pageCacheSlotsError);
        }

        HostLogOptions logging;
        try
        {
            logging = HostLogOptions.Read(
                parse.GetValue(s_service),
                parse.GetValue(s_logTarget),
                parse.GetValue(s_logFormat),
                parse.GetValue(s_logFile),
                parse.GetValue(s_eventSource),
                "hyder-log",
                Environment.GetEnvironmentVariable,
                OperatingSystem.IsWindows());
        }
        catch (HostLoggingException e)
        {
            throw new HostConfigurationException(e.Message);
        }

        TransportSecurity security;
        try
        {
            security = ClusterTlsOptions.Read(parse);
        }
        catch (ArgumentException e)
        {
            throw new HostConfigurationException(e.Message);
        }

        var options = new HostSettings
        {
            Security = security,
            Unit = roles.Contains("unit"),
            Sequencer = roles.Contains("sequencer"),
            Projection = roles.Contains("projection"),
            DataDirectory = parse.GetValue(s_data),
            EndPoint = new IPEndPoint(address, port),
            Advertise = parse.GetValue(s_advertise),
            BlockSize = blockSize,
            SlotsPerSegment = slots,
            Fsync = parse.GetValue(s_fsync) == "none" ? FsyncPolicy.None : FsyncPolicy.GroupCommit,
            CommitDelay = TimeSpan.FromMicroseconds(commitDelay),
            CachedSlots = pageCacheSlots,
            ProjectionStore = parse.GetValue(ProjectionStore),
            Logging = logging,
            MetricsListen = parse.GetValue(s_metricsListen),
        };
        if ((options.Unit || options.Projection) && options.DataDirectory is null)
        {
            throw new HostConfigurationException("--data is required for the unit and projection roles.");
        }

        if (options.Sequencer && options.ProjectionStore is null && !options.Projection)
        {
            throw new HostConfigurationException("--projection-store is required for the sequencer role.");
        }

        return options;
    }
}

/// <summary>What this host runs, from the command line.</summary>
internal sealed class HostSettings
{
    public bool Unit { get; init; }

    public bool Sequencer { get; init; }

    public bool Projection { get; init; }

    public string? DataDirectory { get; init; }

    public required IPEndPoint EndPoint { get; init; }

    public string? Advertise { get; init; }

    public int BlockSize { get; init; }

    public int SlotsPerSegment { get; init; }

    public FsyncPolicy Fsync { get; init; }

    public TimeSpan CommitDelay { get; init; }

    /// <summary><c>--page-cache-slots</c> (<see cref="LogUnitOptions.CachedSlots"/>).</summary>
    public int CachedSlots { get; init; } = LogUnitOptions.DefaultCachedSlots;

    public string? ProjectionStore { get; init; }

    /// <summary>Service and log options: <c>--service</c>, <c>--log-target</c>, <c>--log-format</c>, <c>--log-file</c>, <c>--event-source</c>.</summary>
    public required HostLogOptions Logging { get; init; }

    /// <summary><c>--metrics-listen</c>: where the <c>Hyder.Log</c> meter is served for Prometheus, or null.</summary>
    public string? MetricsListen { get; init; }

    /// <summary>Mutual TLS with the other members, or plaintext when explicitly allowed.</summary>
    public required TransportSecurity Security { get; init; }
}

/// <summary>A command line the host cannot run with; the message says what to change.</summary>
internal sealed class HostConfigurationException(string message) : Exception(message);
