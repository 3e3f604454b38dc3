using System.Globalization;
using System.Net;
using Hyder.Log.Storage;
using Hyder.Server.Grpc;
using Hyder.Log.Transport;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree.Pipeline;
using Microsoft.Extensions.Configuration;

namespace Hyder.Server.Host;

/// <summary>The configuration keys, as appsettings.json and HYDER_ environment variables name them.</summary>
internal static class SettingKeys
{
    public const string ServerId = "ServerId";
    public const string Listen = "Listen";
    public const string TlsCertificate = "Tls:Certificate";
    public const string TlsKey = "Tls:Key";
    public const string TlsPassword = "Tls:Password";
    public const string TlsClientCa = "Tls:ClientCa";
    public const string TlsClientCertificates = "Tls:ClientCertificates";
    public const string AllowPlaintext = "Tls:AllowPlaintext";
    public const string GrpcReflection = "Grpc:Reflection";
    public const string ApiKeys = "Auth:Keys";
    public const string KeysFile = "Auth:KeysFile";
    public const string CertificateRoles = "Auth:Certificates";
    public const string Anonymous = "Auth:Anonymous";
    public const string MaxConnections = "Limits:MaxConnections";
    public const string MaxConnectionsPerAddress = "Limits:MaxConnectionsPerAddress";
    public const string MaxStreamsPerConnection = "Limits:MaxStreamsPerConnection";
    public const string MaxTransactionsPerStream = "Limits:MaxTransactionsPerStream";
    public const string MaxHeaderBytes = "Limits:MaxHeaderBytes";
    public const string IdleTimeout = "Limits:IdleTimeout";
    public const string RequestHeadersTimeout = "Limits:RequestHeadersTimeout";
    public const string RequestTimeout = "Limits:RequestTimeout";
    public const string Embedded = "Log:Embedded";
    public const string Data = "Log:Data";
    public const string Log = "Log:ProjectionStore";
    public const string Fsync = "Log:Fsync";
    public const string CommitDelay = "Log:CommitDelayMicroseconds";
    public const string PageCacheSlots = "Log:PageCacheSlots";
    public const string PremeldThreads = "Cluster:PremeldThreads";
    public const string Distance = "Cluster:Distance";
    public const string GroupMeld = "Cluster:GroupMeld";
    public const string BlockSize = "Cluster:BlockSize";
    public const string StateWindow = "Cluster:StateWindow";
    public const string Commutative = "Cluster:Commutative";
    public const string SplitPhase = "Cluster:SplitPhase";
    public const string HotThreshold = "Cluster:HotThreshold";
    public const string MaxSplitKeys = "Cluster:MaxSplitKeys";
    public const string HotKeys = "Cluster:HotKeys";
    public const string MaxInFlight = "MaxInFlight";

    /// <summary>Recycle written values (docs/value-storage.md); on by default.</summary>
    public const string RecycleValues = "RecycleValues";
    public const string CheckpointEvery = "CheckpointEvery";
    public const string TrimKeepCheckpoints = "Trim:KeepCheckpoints";
    public const string TrimMargin = "Trim:Margin";
    public const string MaxKeyBytes = "Limits:MaxKeyBytes";
    public const string MaxValueBytes = "Limits:MaxValueBytes";
    public const string MaxOperations = "Limits:MaxOperations";
    public const string MaxScanRows = "Limits:MaxScanRows";
    public const string MaxTopK = "Limits:MaxTopK";
    public const string MaxMessageBytes = "Limits:MaxMessageBytes";
    public const string BroadcastListen = "Broadcast:Listen";
    public const string Peers = "Broadcast:Peers";
    public const string ClusterId = "Broadcast:ClusterId";

    /// <summary>Take a peer's broadcast block without reading the log (docs/broadcast.md, "Trust").</summary>
    public const string BroadcastTrust = "Broadcast:Trust";
    public const string LogFormat = "Logging:Format";
    public const string LogTarget = "Logging:Target";
    public const string LogFile = "Logging:File";
    public const string EventSource = "Logging:EventSource";
    public const string Spin = "Pipeline:Spin";
    public const string FinalMeldNice = "Pipeline:FinalMeldNice";
    public const string MetricsListen = "Metrics:Listen";
    public const string ClusterTlsCertificate = "ClusterTls:Certificate";
    public const string ClusterTlsKey = "ClusterTls:Key";
    public const string ClusterTlsCa = "ClusterTls:Ca";
    public const string ClusterTlsAllowPlaintext = "ClusterTls:AllowPlaintext";

    /// <summary>The command-line option of a key, for messages.</summary>
    public static string OptionOf(string key) => key switch
    {
        ServerId => "--server-id",
        Listen => "--listen",
        TlsCertificate => "--tls-certificate",
        TlsKey => "--tls-key",
        TlsPassword => "--tls-password",
        TlsClientCa => "--tls-client-ca",
        TlsClientCertificates => "--tls-client-certificates",
        AllowPlaintext => "--allow-plaintext",
        ApiKeys => "--api-key",
        KeysFile => "--keys-file",
        CertificateRoles => "--certificate-role",
        Anonymous => "--anonymous",
        MaxConnections => "--max-connections",
        MaxConnectionsPerAddress => "--max-connections-per-address",
        MaxStreamsPerConnection => "--max-streams-per-connection",
        MaxTransactionsPerStream => "--max-stream-transactions",
        MaxHeaderBytes => "--max-header-bytes",
        IdleTimeout => "--idle-timeout",
        RequestHeadersTimeout => "--request-headers-timeout",
        RequestTimeout => "--request-timeout",
        Embedded => "--embedded",
        Data => "--data",
        Log => "--log",
        Fsync => "--fsync",
        CommitDelay => "--commit-delay-us",
        PageCacheSlots => "--page-cache-slots",
        PremeldThreads => "--premeld-threads",
        Distance => "--distance",
        GroupMeld => "--group-meld",
        BlockSize => "--block-size",
        StateWindow => "--state-window",
        Commutative => "--commutative",
        GrpcReflection => "--grpc-reflection",
        SplitPhase => "--split-phase",
        HotThreshold => "--hot-threshold",
        MaxSplitKeys => "--max-split-keys",
        HotKeys => "--hot-keys",
        MaxInFlight => "--max-in-flight",
        RecycleValues => "--recycle-values",
        CheckpointEvery => "--checkpoint-every",
        TrimKeepCheckpoints => "--trim-keep-checkpoints",
        TrimMargin => "--trim-margin",
        MaxKeyBytes => "--max-key-bytes",
        MaxValueBytes => "--max-value-bytes",
        MaxOperations => "--max-operations",
        MaxScanRows => "--max-scan-rows",
        MaxTopK => "--max-top-k",
        MaxMessageBytes => "--max-message-bytes",
        BroadcastListen => "--broadcast-listen",
        Peers => "--peer",
        ClusterId => "--cluster-id",
        BroadcastTrust => "--broadcast-trust",
        LogFormat => "--log-format",
        LogTarget => "--log-target",
        LogFile => "--log-file",
        EventSource => "--event-source",
        Spin => "--spin",
        FinalMeldNice => "--final-meld-nice",
        MetricsListen => "--metrics-listen",
        ClusterTlsCertificate => "--cluster-tls-cert",
        ClusterTlsKey => "--cluster-tls-key",
        ClusterTlsCa => "--cluster-ca",
        ClusterTlsAllowPlaintext => "--cluster-allow-plaintext",
        _ => key,
    };
}

/// <summary>Configuration the host cannot run with; the message names the option and its key.</summary>
internal sealed class HostConfigurationException(string message) : Exception(message);

/// <summary>Everything the host runs, read and checked from configuration.</summary>
internal sealed partial class HostSettings
{
    public const string DefaultListen = "http://127.0.0.1:7400";

    public required ServerOptions Server { get; init; }

    /// <summary>The gRPC endpoint.</summary>
    public required IPEndPoint Listen { get; init; }

    /// <summary>TLS of the gRPC endpoint; null: cleartext HTTP/2 (h2c).</summary>
    public GrpcServerTls? Tls { get; init; }

    /// <summary>Who may call what (see <see cref="ReadAuthenticator"/>).</summary>
    public required ClientAuthenticator Authenticator { get; init; }

    /// <summary>Connection, stream, header and timeout limits of the gRPC endpoint.</summary>
    public required GrpcServerLimits GrpcLimits { get; init; }

    /// <summary>Whether the gRPC endpoint answers server reflection (off unless Grpc:Reflection is on).</summary>
    public bool GrpcReflection { get; init; }

    /// <summary>The log runs in this process.</summary>
    public bool Embedded { get; init; }

    /// <summary>The embedded log's directory; null: a temporary one, removed on exit.</summary>
    public string? DataDirectory { get; init; }

    public FsyncPolicy Fsync { get; init; }

    /// <summary>The embedded log's group-commit delay (<see cref="Hyder.Log.Units.LogUnitOptions.CommitDelay"/>).</summary>
    public TimeSpan CommitDelay { get; init; } = Hyder.Log.Units.LogUnitOptions.EmbeddedCommitDelay;

    /// <summary>How many of the embedded log's newest durable slots stay in the page cache (<see cref="Hyder.Log.Units.LogUnitOptions.CachedSlots"/>).</summary>
    public int PageCacheSlots { get; init; } = Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots;

    /// <summary>The remote log's projection store (file:, etcd: or tcp:).</summary>
    public string? ProjectionStore { get; init; }

    /// <summary>Where broadcast accepts peers; null with no peers: broadcast off.</summary>
    public IPEndPoint? BroadcastListen { get; init; }

    public IReadOnlyList<IPEndPoint> Peers { get; init; } = [];

    public string ClusterId { get; init; } = "hyder";

    public bool Broadcast => BroadcastListen is not null || Peers.Count > 0;

    /// <summary>
    /// Mutual TLS (or plaintext, when configured) towards the log's hosts and the broadcast peers;
    /// plaintext and unused for an embedded log without broadcast.
    /// </summary>
    public TransportSecurity ClusterSecurity { get; init; } = TransportSecurity.Plaintext;

    /// <summary>Reads and checks every setting; throws <see cref="HostConfigurationException"/> naming the first bad one.</summary>
    public static HostSettings Read(IConfiguration c)
    {
        var embedded = Bool(c, SettingKeys.Embedded, false);
        var store = Text(c, SettingKeys.Log);
        var data = Text(c, SettingKeys.Data);
        if (embedded == (store is not null))
        {
            throw embedded
                ? Bad(SettingKeys.Log, "choose one log: --embedded runs it in this process, --log names a remote one, not both.")
                : Bad(SettingKeys.Embedded, "no log configured: give --embedded (optionally with --data DIR) or --log file:DIR|etcd:URL|tcp:HOST:PORT.");
        }

        if (data is not null && !embedded)
        {
            throw Bad(SettingKeys.Data, "--data is the embedded log's directory; a remote log (--log) keeps its data in its own hosts.");
        }

        var fsync = Text(c, SettingKeys.Fsync) ?? "group";
        if (fsync is not ("group" or "none"))
        {
            throw Bad(SettingKeys.Fsync, $"'{fsync}' is not a policy: group or none.");
        }

        var cluster = new ClusterSettings
        {
            PremeldThreads = Int(c, SettingKeys.PremeldThreads, 0, 0, 253),
            Distance = Int(c, SettingKeys.Distance, 0, 0, int.MaxValue),
            GroupMeld = Bool(c, SettingKeys.GroupMeld, false),
            BlockSize = Int(c, SettingKeys.BlockSize, 8192, 256, 1 << 20),
            StateWindow = Int(c, SettingKeys.StateWindow, 1 << 14, 16, int.MaxValue),
            CommutativeOperations = (Text(c, SettingKeys.Commutative) ?? "on") switch
            {
                "on" => true,
                "off" => false,
                var other => throw Bad(SettingKeys.Commutative, $"'{other}' is not on or off."),
            },
            SplitPhaseLength = Int(c, SettingKeys.SplitPhase, 0, 0, Doppel.SplitPhaseOptions.MaxPhaseLength),
            HotThreshold = Int(c, SettingKeys.HotThreshold, 64, 1, int.MaxValue),
            MaxSplitKeys = Int(c, SettingKeys.MaxSplitKeys, 16, 0, Doppel.SplitPhaseOptions.MaxSplitKeysLimit),
            HotKeys = Text(c, SettingKeys.HotKeys) ?? "",
        };
        try
        {
            cluster.Validate();
        }
        catch (ArgumentException e)
        {
            throw Bad(e.ParamName == nameof(ClusterSettings.SplitPhaseLength) ? SettingKeys.SplitPhase : SettingKeys.HotKeys, e.Message);
        }

        var defaults = new EngineLimits();
        var limits = new EngineLimits
        {
            MaxKeyBytes = Int(c, SettingKeys.MaxKeyBytes, defaults.MaxKeyBytes, 1, int.MaxValue),
            MaxValueBytes = Int(c, SettingKeys.MaxValueBytes, defaults.MaxValueBytes, 0, int.MaxValue),
            MaxOperations = Int(c, SettingKeys.MaxOperations, defaults.MaxOperations, 1, int.MaxValue),
            MaxScanRows = Int(c, SettingKeys.MaxScanRows, defaults.MaxScanRows, 1, int.MaxValue),
            MaxTopK = Int(c, SettingKeys.MaxTopK, defaults.MaxTopK, 1, Tree.Commutative.Operation.MaxTopK),
            MaxMessageBytes = Int(c, SettingKeys.MaxMessageBytes, defaults.MaxMessageBytes, 1024, int.MaxValue),
        };
        var serverId = Text(c, SettingKeys.ServerId) ?? "server-1";
        if (System.Text.Encoding.UTF8.GetByteCount(serverId) > 255)
        {
            throw Bad(SettingKeys.ServerId, "at most 255 UTF-8 bytes.");
        }

        var spin = SpinPolicyOf(c);
        var options = new ServerOptions
        {
            ServerId = serverId,
            Cluster = cluster,
            Limits = limits,
            MaxInFlight = Int(c, SettingKeys.MaxInFlight, 512, 1, 1 << 20),
            CheckpointEvery = Int(c, SettingKeys.CheckpointEvery, 0, 0, int.MaxValue),
            TrimKeepCheckpoints = Int(c, SettingKeys.TrimKeepCheckpoints, 0, 0, 1 << 20),
            TrimMargin = Int(c, SettingKeys.TrimMargin, 0, 0, int.MaxValue),
            TrustBroadcast = OnOff(c, SettingKeys.BroadcastTrust, false),
            RecycleValues = OnOff(c, SettingKeys.RecycleValues, true),
            Threading = new PipelineThreading
            {
                Spin = spin,
                PinToCores = spin == SpinPolicy.SpinThenYield ? false : null,
                // Left alone unless asked: measured, a raised final meld helps a process whose clients
                // run inside it and cost a server whose client shared its two cores (docs/server.md).
                FinalMeldNice = Int(c, SettingKeys.FinalMeldNice, 0, -20, 19),
            },
        };

        var (listen, https) = Address(c);
        var tls = ReadTls(c, listen, https);
        var authenticator = ReadAuthenticator(c, listen, tls?.ClientCertificateAuthorities is not null);
        var rpcLimits = ReadLimits(c);

        var broadcastListen = Text(c, SettingKeys.BroadcastListen) is { } b ? EndPoint(SettingKeys.BroadcastListen, b) : null;
        var peers = PeerList(c);
        var clusterId = Text(c, SettingKeys.ClusterId) ?? "hyder";
        if (System.Text.Encoding.UTF8.GetByteCount(clusterId) > 255)
        {
            throw Bad(SettingKeys.ClusterId, "at most 255 UTF-8 bytes.");
        }

        var broadcast = broadcastListen is not null || peers.Count > 0;
        var clusterSecurity = ReadClusterSecurity(c, needed: !embedded || broadcast);

        return new HostSettings
        {
            ClusterSecurity = clusterSecurity,
            Server = options,
            Listen = listen,
            Tls = tls,
            Authenticator = authenticator,
            GrpcLimits = rpcLimits,
            GrpcReflection = OnOff(c, SettingKeys.GrpcReflection, false),
            Embedded = embedded,
            DataDirectory = data is null ? null : Path.GetFullPath(data),
            Fsync = fsync == "none" ? FsyncPolicy.None : FsyncPolicy.GroupCommit,
            CommitDelay = TimeSpan.FromMicroseconds(Int(
                c,
                SettingKeys.CommitDelay,
                (int)Hyder.Log.Units.LogUnitOptions.EmbeddedCommitDelay.TotalMicroseconds,
                0,
                Hyder.Log.Units.LogUnitOptions.MaxCommitDelayMicroseconds)),
            PageCacheSlots = Int(c, SettingKeys.PageCacheSlots, Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots, 0, int.MaxValue),
            ProjectionStore = store,
            BroadcastListen = broadcastListen ?? (peers.Count > 0 ? new IPEndPoint(IPAddress.Loopback, 0) : null),
            Peers = peers,
            ClusterId = clusterId,
        };
    }

    private static SpinPolicy SpinPolicyOf(IConfiguration c) => Text(c, SettingKeys.Spin) switch
    {
        null or "auto" => SpinPolicy.Auto,
        "spin" => SpinPolicy.Spin,
        "yield" => SpinPolicy.SpinThenYield,
        var other => throw Bad(SettingKeys.Spin, $"'{other}' is not a policy: auto, spin or yield."),
    };

    /// <summary>
    /// The ClusterTls settings: required (TLS or an explicit plaintext) when this server talks to
    /// other members, loaded and checked whenever they are given.
    /// </summary>
    private static TransportSecurity ReadClusterSecurity(IConfiguration c, bool needed)
    {
        var certificate = Text(c, SettingKeys.ClusterTlsCertificate);
        var key = Text(c, SettingKeys.ClusterTlsKey);
        var ca = Text(c, SettingKeys.ClusterTlsCa);
        var allowPlaintext = Bool(c, SettingKeys.ClusterTlsAllowPlaintext, false);
        if (!needed && certificate is null && key is null && ca is null)
        {
            return TransportSecurity.Plaintext;
        }

        try
        {
            return TransportSecurity.FromSettings(certificate, key, ca, allowPlaintext);
        }
        catch (ArgumentException e)
        {
            // The message names the options and their keys, as Bad does.
            throw new HostConfigurationException(needed || allowPlaintext ? e.Message : e.Message + " (an embedded log without broadcast has no cluster traffic: the ClusterTls settings can go.)");
        }
    }

    private static HostConfigurationException Bad(string key, string message) =>
        new($"{SettingKeys.OptionOf(key)} ({key}): {message}");

    private static string? Text(IConfiguration c, string key) => c[key] is { Length: > 0 } v ? v.Trim() : null;

    private static int Int(IConfiguration c, string key, int fallback, int min, int max)
    {
        if (Text(c, key) is not { } text)
        {
            return fallback;
        }

        if (!int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value))
        {
            throw Bad(key, $"'{text}' is not a whole number.");
        }

        if (value < min || value > max)
        {
            throw Bad(key, max == int.MaxValue ? $"{value} is below the least allowed, {min}." : $"{value} is outside {min}..{max}.");
        }

        return value;
    }

    private static bool OnOff(IConfiguration c, string key, bool fallback) => Text(c, key) switch
    {
        null => fallback,
        "on" => true,
        "off" => false,
        var other => throw Bad(key, $"'{other}' is not on or off."),
    };

    private static bool Bool(IConfiguration c, string key, bool fallback)
    {
        if (Text(c, key) is not { } text)
        {
            return fallback;
        }

        return bool.TryParse(text, out var value) ? value : throw Bad(key, $"'{text}' is not true or false.");
    }

    private static (IPEndPoint EndPoint, bool Https) Address(IConfiguration c)
    {
        var text = Text(c, SettingKeys.Listen) ?? DefaultListen;
        if (!Uri.TryCreate(text, UriKind.Absolute, out var uri) || uri.Scheme is not ("http" or "https")
            || uri.AbsolutePath != "/" || uri.IsDefaultPort && !text.Contains(":" + uri.Port.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal))
        {
            throw Bad(SettingKeys.Listen, $"'{text}' is not an address like http://127.0.0.1:7400 (scheme, IP address and port).");
        }

        var host = uri.Host.Trim('[', ']');
        IPAddress address;
        if (host == "localhost")
        {
            address = IPAddress.Loopback;
        }
        else if (!IPAddress.TryParse(host, out address!))
        {
            throw Bad(SettingKeys.Listen, $"'{uri.Host}' is not an IP address (use 0.0.0.0 to listen on every interface).");
        }

        return (new IPEndPoint(address, uri.Port), uri.Scheme == "https");
    }

    private static IPEndPoint EndPoint(string key, string text)
    {
        if (IPEndPoint.TryParse(text, out var endPoint) && text.Contains(':', StringComparison.Ordinal))
        {
            return endPoint;
        }

        var colon = text.LastIndexOf(':');
        if (colon > 0 && text[..colon] == "localhost" && int.TryParse(text[(colon + 1)..], CultureInfo.InvariantCulture, out var port) && port is >= 0 and <= 65535)
        {
            return new IPEndPoint(IPAddress.Loopback, port);
        }

        throw Bad(key, $"'{text}' is not an endpoint like 10.0.0.2:7401.");
    }

    private static List<IPEndPoint> PeerList(IConfiguration c)
    {
        var section = c.GetSection(SettingKeys.Peers);
        var texts = section.Value is { Length: > 0 } joined
            ? joined.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            : section.GetChildren().Select(s => s.Value?.Trim()).OfType<string>().Where(s => s.Length > 0).ToArray();
        var peers = new List<IPEndPoint>(texts.Length);
        foreach (var text in texts)
        {
            var peer = EndPoint(SettingKeys.Peers, text);
            if (peer.Port == 0)
            {
                throw Bad(SettingKeys.Peers, $"'{text}' has no port.");
            }

            peers.Add(peer);
        }

        return peers;
    }
}
