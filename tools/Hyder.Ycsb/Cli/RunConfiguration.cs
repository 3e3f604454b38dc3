using System.CommandLine;
using System.Globalization;
using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Generators;
using Hyder.Server.Cluster;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Targets.Hyder;
using Hyder.Ycsb.Workloads;
using O = Hyder.Ycsb.Cli.YcsbOptions;

namespace Hyder.Ycsb.Cli;

/// <summary>A bad option value: the command prints the message and the usage and exits with code 2.</summary>
internal sealed class UsageException : Exception
{
    public UsageException()
    {
    }

    public UsageException(string message)
        : base(message)
    {
    }

    public UsageException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}

/// <summary>A command line turned into checked settings, a workload and a way to open the target.</summary>
internal sealed class RunConfiguration
{
    private readonly string? _postgres;
    private readonly string _tablePrefix;
    private readonly string? _connect;
    private readonly EmbeddedClusterSettings? _embedded;

    private RunConfiguration(ParseResult parse, bool run)
    {
        var target = parse.GetValue(O.Target);
        _connect = parse.GetValue(O.Connect);
        if (_connect is not null && target is not null && target != "embedded")
        {
            throw new UsageException($"--connect drives a running Hyder cluster; it cannot be combined with --target {target}.");
        }

        TargetName = _connect is not null ? "connect" : target ?? "embedded";
        if (_connect is not null && string.IsNullOrWhiteSpace(_connect))
        {
            throw new UsageException("--connect needs an address, e.g. http://127.0.0.1:7300.");
        }

        _postgres = parse.GetValue(O.Postgres);
        _tablePrefix = parse.GetValue(O.TablePrefix)!;
        if (TargetName == "postgres" && string.IsNullOrWhiteSpace(_postgres))
        {
            throw new UsageException("--target postgres needs --pg \"<connection string>\".");
        }

        if (TargetName != "postgres" && _postgres is not null)
        {
            throw new UsageException("--pg only applies to --target postgres.");
        }

        if (!System.Text.RegularExpressions.Regex.IsMatch(_tablePrefix, "^[a-z_][a-z0-9_]*$"))
        {
            throw new UsageException("--table-prefix must be lower-case letters, digits and underscores, starting with a letter or underscore.");
        }

        LoadFirst = run && parse.GetValue(O.Load);
        if (TargetName == "memory" && run && !LoadFirst)
        {
            throw new UsageException("the memory target keeps nothing between processes: use run --load.");
        }

        var duration = run ? parse.GetValue(O.Duration) : null;
        var operations = run ? parse.GetValue(O.Operations) : null;
        if (run && duration is null && operations is null)
        {
            duration = 10;
        }

        Settings = new DriverSettings
        {
            Threads = Positive(parse, O.Threads),
            InFlightPerThread = Positive(parse, O.InFlight),
            TargetThroughput = AtLeastZero(parse, O.TargetThroughput),
            Warmup = run ? TimeSpan.FromSeconds(AtLeastZero(parse, O.Warmup)) : TimeSpan.Zero,
            Duration = duration is { } d ? (d > 0 ? TimeSpan.FromSeconds(d) : throw new UsageException("--duration must be positive.")) : null,
            OperationCount = operations is { } n ? (n > 0 ? n : throw new UsageException("--operations must be positive.")) : null,
            MaxRetries = AtLeastZero(parse, O.Retries),
            Seed = parse.GetValue(O.Seed),
            KeySize = Between(parse, O.KeySize, 4, 1024),
            ValueSize = Between(parse, O.ValueSize, 1, 16 * 1024 * 1024),
            HashedKeys = parse.GetValue(O.InsertOrder) == "hashed",
            StatusInterval = TimeSpan.FromSeconds(parse.GetValue(O.StatusInterval) is var s and > 0 ? s : throw new UsageException("--status-interval must be positive.")),
            LoadBatch = Positive(parse, O.LoadBatch),
            OneShot = run && parse.GetValue(O.OneShot),
            Pipeline = !(run && parse.GetValue(O.NoPipeline)),
        };

        Multiplex = run && parse.GetValue(O.Multiplex);
        if (Multiplex && (TargetName != "connect" || !Settings.OneShot))
        {
            throw new UsageException("--multiplex sends one-shot transactions on one stream: it needs --connect and --one-shot.");
        }

        Workload = CreateWorkload(parse);
        var capacity = new KeyCodec(Settings.KeySize, Settings.HashedKeys).Capacity;
        if (Workload.KeySpaces.Any(k => k.InitialRecords >= capacity))
        {
            throw new UsageException($"--record-count does not fit {Settings.KeySize}-byte keys (at most {capacity - 1}); use --key-size 8.");
        }

        _embedded = EmbeddedSettings(parse, run);
        JsonPath = parse.GetValue(O.Json);
        CsvPath = parse.GetValue(O.Csv);
    }

    public string TargetName { get; }

    public DriverSettings Settings { get; }

    /// <summary>--multiplex: the remote target's one-shot transactions share one ExecuteStream call.</summary>
    public bool Multiplex { get; }

    public Workload Workload { get; }

    public bool LoadFirst { get; }

    public string? JsonPath { get; }

    public string? CsvPath { get; }

    public static RunConfiguration From(ParseResult parse, bool run) => new(parse, run);

    /// <summary>Opens the target: starts the embedded cluster, or connects.</summary>
    public async Task<ITarget> CreateTargetAsync(CancellationToken cancellationToken) => TargetName switch
    {
        "embedded" => await HyderEmbeddedTarget.StartAsync(_embedded!, cancellationToken).ConfigureAwait(false),
        "connect" => new HyderRemoteTarget(_connect!, Multiplex),
        "postgres" => new PostgresTarget(_postgres!, _tablePrefix, Settings.Sessions),
        "memory" => new MemoryReferenceTarget(),
        _ => throw new UsageException($"unknown target {TargetName}."),
    };

    /// <summary>The settings as text, for the report header and the JSON output.</summary>
    public IReadOnlyDictionary<string, string> Describe(ITarget target) => new SortedDictionary<string, string>(StringComparer.Ordinal)
    {
        ["target"] = target.Description,
        ["pipeline"] = _embedded?.Pipeline ?? "",
        ["workload"] = Workload.Describe(),
        ["records"] = string.Join(", ", Workload.KeySpaces.Select(k => $"{k.Name} {k.InitialRecords}")),
        ["threads"] = Invariant(Settings.Threads),
        ["inFlightPerThread"] = Invariant(Settings.InFlightPerThread),
        ["targetThroughput"] = Invariant(Settings.TargetThroughput),
        ["warmupSeconds"] = Invariant(Settings.Warmup.TotalSeconds),
        ["durationSeconds"] = Settings.Duration is { } d ? Invariant(d.TotalSeconds) : "",
        ["operations"] = Settings.OperationCount is { } n ? Invariant(n) : "",
        ["seed"] = Invariant(Settings.Seed),
        ["keySize"] = Invariant(Settings.KeySize),
        ["valueSize"] = Invariant(Settings.ValueSize),
        ["insertOrder"] = Settings.HashedKeys ? "hashed" : "ordered",
        ["retries"] = Invariant(Settings.MaxRetries),
        ["oneShot"] = Settings.OneShot ? "yes" : "no",
        ["multiplex"] = Multiplex ? "yes" : "no",
        ["pipelinedOperations"] = Settings.Pipeline ? "yes" : "no",
        ["machine"] = $"{Environment.ProcessorCount} cores, {System.Runtime.InteropServices.RuntimeInformation.OSDescription}, .NET {Environment.Version}",
    };

    /// <summary>The embedded cluster's settings; null for other targets, which must not be given them.</summary>
    private EmbeddedClusterSettings? EmbeddedSettings(ParseResult parse, bool run)
    {
        Option[] embeddedOnly = [O.Servers, O.PremeldThreads, O.PremeldDistance, O.GroupMeld, O.Commutative, O.SplitPhase, O.HotThreshold, O.Data, O.Fsync, O.CommitDelay, O.PageCacheSlots, O.FinalMeldNice];
        if (TargetName != "embedded")
        {
            if (embeddedOnly.FirstOrDefault(o => parse.GetResult(o) is { Implicit: false }) is { } given)
            {
                throw new UsageException($"{given.Name} only applies to --target embedded.");
            }

            return null;
        }

        var data = parse.GetValue(O.Data);
        if (run && !LoadFirst && data is null)
        {
            throw new UsageException("the embedded cluster starts empty in a temporary directory: use run --load, or keep a loaded cluster with --data DIR.");
        }

        var servers = Between(parse, O.Servers, 1, 16);
        var threads = Between(parse, O.PremeldThreads, 0, 64);
        var distance = Between(parse, O.PremeldDistance, 1, 1000);
        if (threads == 0 && parse.GetResult(O.PremeldDistance) is { Implicit: false })
        {
            throw new UsageException("--distance needs --premeld-threads above 0.");
        }

        var splitPhase = Between(parse, O.SplitPhase, 0, global::Hyder.Doppel.SplitPhaseOptions.MaxPhaseLength);
        var hotThreshold = Between(parse, O.HotThreshold, 1, int.MaxValue);
        if (splitPhase > 0 && !parse.GetValue(O.Commutative))
        {
            throw new UsageException("--split-phase stages commutative operations: add --commutative.");
        }

        if (splitPhase == 0 && parse.GetResult(O.HotThreshold) is { Implicit: false })
        {
            throw new UsageException("--hot-threshold needs --split-phase above 0.");
        }

        var commitDelay = parse.GetValue(O.CommitDelay);
        if (Hyder.Log.Units.LogUnitOptions.CommitDelayMicrosecondsError(commitDelay) is { } commitDelayError)
        {
            throw new UsageException(commitDelayError);
        }

        var pageCacheSlots = parse.GetValue(O.PageCacheSlots);
        if (Hyder.Log.Units.LogUnitOptions.CachedSlotsError(pageCacheSlots) is { } pageCacheSlotsError)
        {
            throw new UsageException(pageCacheSlotsError);
        }

        var nice = parse.GetValue(O.FinalMeldNice);
        if (Hyder.Tree.Pipeline.PipelineThreading.NiceError(nice, "--final-meld-nice") is { } niceError)
        {
            throw new UsageException(niceError + ".");
        }

        return new EmbeddedClusterSettings
        {
            Servers = servers,
            Cluster = new ClusterSettings { PremeldThreads = threads, Distance = threads > 0 ? distance : 0, GroupMeld = parse.GetValue(O.GroupMeld), SplitPhaseLength = splitPhase, HotThreshold = hotThreshold },
            DataDirectory = data is null ? null : Path.GetFullPath(data),
            Fsync = parse.GetValue(O.Fsync) == "group",
            CommitDelay = TimeSpan.FromMicroseconds(commitDelay),
            PageCacheSlots = pageCacheSlots,
            FinalMeldNice = nice,
            Commutative = parse.GetValue(O.Commutative),
            Sessions = Settings.Sessions,
        };
    }

    private Workload CreateWorkload(ParseResult parse)
    {
        var records = parse.GetValue(O.RecordCount) is var r and > 0 ? r : throw new UsageException("--record-count must be positive.");
        var isolation = parse.GetValue(O.Isolation) switch
        {
            "repeatable-read" => IsolationLevel.RepeatableRead,
            "snapshot" => IsolationLevel.Snapshot,
            "read-committed" => IsolationLevel.ReadCommitted,
            _ => IsolationLevel.Serializable,
        };
        var theta = parse.GetValue(O.ZipfianConstant);
        if (!(theta > 0 && theta < 1))
        {
            throw new UsageException("--zipfian-constant must be within (0, 1) (Gray's generator, as YCSB's).");
        }

        var hotData = Fraction(parse, O.HotspotDataFraction);
        var hotOps = parse.GetValue(O.HotspotOperationFraction) ?? 1 - hotData;
        if (hotOps is < 0 or > 1)
        {
            throw new UsageException("--hotspot-op-fraction must be within [0, 1].");
        }

        var distributions = new DistributionSettings { ZipfianConstant = theta, HotspotDataFraction = hotData, HotspotOperationFraction = hotOps };
        Distribution? distribution = parse.GetValue(O.Distribution) switch
        {
            null => null,
            "uniform" => Generators.Distribution.Uniform,
            "zipfian" => Generators.Distribution.Zipfian,
            "hotspot" => Generators.Distribution.Hotspot,
            _ => Generators.Distribution.Latest,
        };
        var name = parse.GetValue(O.Workload)!;
        switch (name)
        {
            case "tx":
                var reads = AtLeastZero(parse, O.Reads);
                var writes = AtLeastZero(parse, O.Writes);
                if (reads + writes == 0)
                {
                    throw new UsageException("--reads and --writes cannot both be 0.");
                }

                var readOnly = Fraction(parse, O.ReadOnlyShare);
                if (readOnly > 0 && reads == 0)
                {
                    throw new UsageException("--read-only-share needs --reads above 0.");
                }

                return new TransactionalWorkload(records, reads, writes, readOnly, distribution ?? Generators.Distribution.Uniform, distributions, isolation);
            case "incr1":
                if (records < 2)
                {
                    throw new UsageException("incr1 needs --record-count of at least 2 (the hot counter and others).");
                }

                return new Incr1Workload(records, Fraction(parse, O.HotShare), isolation);
            case "like":
                if (records > ZipfTable.MaxItems)
                {
                    throw new UsageException($"like keeps a table of page popularity: --record-count at most {ZipfTable.MaxItems}.");
                }

                var alpha = parse.GetValue(O.LikeAlpha);
                if (!(alpha >= 0) || double.IsInfinity(alpha))
                {
                    throw new UsageException("--like-alpha must be a finite number ≥ 0.");
                }

                return new LikeWorkload(records, records, alpha, Fraction(parse, O.WriteShare), isolation);
            case "stock":
                if (TargetName is "postgres" or "memory")
                {
                    throw new UsageException($"stock needs bounded Adds, which --target {TargetName} does not have: use the embedded target or --connect.");
                }

                if (records > ZipfTable.MaxItems)
                {
                    throw new UsageException($"stock keeps a table of item popularity: --record-count at most {ZipfTable.MaxItems}.");
                }

                var cap = parse.GetValue(O.StockCap);
                if (cap < 2)
                {
                    throw new UsageException("--stock-cap must be at least 2.");
                }

                return new StockWorkload(records, theta, cap, Fraction(parse, O.WriteShare), Fraction(parse, O.RestockShare), isolation);
            default:
                var mix = CoreMix.Preset(name[0]);
                if (distribution is { } chosen)
                {
                    mix = mix with { Distribution = chosen };
                }

                return new CoreWorkload(name, mix, records, Positive(parse, O.MaxScanLength), distributions, isolation);
        }
    }

    private static int Positive(ParseResult parse, Option<int> option) =>
        parse.GetValue(option) is var v and > 0 ? v : throw new UsageException($"{option.Name} must be positive.");

    private static int AtLeastZero(ParseResult parse, Option<int> option) =>
        parse.GetValue(option) is var v and >= 0 ? v : throw new UsageException($"{option.Name} cannot be negative.");

    private static double AtLeastZero(ParseResult parse, Option<double> option) =>
        parse.GetValue(option) is var v and >= 0 && !double.IsInfinity(v) ? v : throw new UsageException($"{option.Name} must be a finite number ≥ 0.");

    private static int Between(ParseResult parse, Option<int> option, int low, int high) =>
        parse.GetValue(option) is var v && v >= low && v <= high ? v : throw new UsageException($"{option.Name} must be within [{low}, {high}].");

    private static double Fraction(ParseResult parse, Option<double> option) =>
        parse.GetValue(option) is var v and >= 0 and <= 1 ? v : throw new UsageException($"{option.Name} must be within [0, 1].");

    private static string Invariant(IFormattable value) => value.ToString(null, CultureInfo.InvariantCulture);
}
