using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Storage;
using Hyder.Log.Units;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Log.Embedded;

/// <summary>How an embedded log is laid out.</summary>
public sealed class EmbeddedLogOptions
{
    /// <summary>The data directory (one sub-directory per unit, plus the projections); null keeps everything in memory.</summary>
    public string? DataDirectory { get; set; }

    /// <summary>Chains the log is striped over.</summary>
    public int Chains { get; set; } = 1;

    /// <summary>Replicas per chain.</summary>
    public int Replicas { get; set; } = 1;

    /// <summary>The largest block.</summary>
    public int BlockSize { get; set; } = LogUnitOptions.DefaultBlockSize;

    /// <summary>When writes become durable (files only).</summary>
    public FsyncPolicy Fsync { get; set; } = FsyncPolicy.GroupCommit;

    /// <summary>Slots per segment file (files only).</summary>
    public int SlotsPerSegment { get; set; } = 8192;

    /// <summary>How long a busy group commit waits for more writes before its fsync (<see cref="LogUnitOptions.CommitDelay"/>; files only).</summary>
    public TimeSpan CommitDelay { get; set; } = LogUnitOptions.EmbeddedCommitDelay;

    /// <summary>How many of the newest durable slots each unit leaves in the page cache (<see cref="LogUnitOptions.CachedSlots"/>; 0: all; files only).</summary>
    public int CachedSlots { get; set; } = LogUnitOptions.DefaultCachedSlots;

    /// <summary>The client's waits and retries.</summary>
    public LogClientOptions Client { get; set; } = new();
}

/// <summary>
/// The sequencer, the log units and the projection store inside this process, behind the same
/// <see cref="ISharedLog"/> as a cluster. Reopening a data directory starts a new epoch, so the
/// fresh sequencer hands out addresses above everything the units hold.
/// </summary>
public sealed class EmbeddedLog : ISharedLog
{
    private readonly LogClient _client;
    private readonly List<LogUnit> _units;

    private EmbeddedLog(LogClient client, List<LogUnit> units, InProcessConnector connector, LogAdmin admin)
    {
        _client = client;
        _units = units;
        Connector = connector;
        Admin = admin;
    }

    /// <summary>The in-process endpoints (units are named "unit-C-R", the sequencer "sequencer").</summary>
    public InProcessConnector Connector { get; }

    /// <summary>Reconfiguration of this log.</summary>
    public LogAdmin Admin { get; }

    /// <summary>The client every call goes through.</summary>
    public LogClient Client => _client;

    /// <summary>The units, chain by chain.</summary>
    public IReadOnlyList<LogUnit> Units => _units;

    /// <inheritdoc />
    public int BlockSize => _client.BlockSize;

    /// <summary>Opens (or creates) an embedded log.</summary>
    public static async Task<EmbeddedLog> OpenAsync(EmbeddedLogOptions options, ILoggerFactory? loggers = null, CancellationToken cancellationToken = default)
    {
        loggers ??= NullLoggerFactory.Instance;
        var connector = new InProcessConnector();
        connector.Add("sequencer", new Sequencer());
        var units = new List<LogUnit>();
        var chains = new List<IReadOnlyList<string>>();
        for (var c = 0; c < options.Chains; c++)
        {
            var chain = new List<string>();
            for (var r = 0; r < options.Replicas; r++)
            {
                var name = $"unit-{c}-{r}";
                var unit = LogUnit.Open(
                    new LogUnitOptions
                    {
                        BlockSize = options.BlockSize,
                        DataDirectory = options.DataDirectory is null ? null : Path.Combine(options.DataDirectory, name),
                        Fsync = options.Fsync,
                        SlotsPerSegment = options.SlotsPerSegment,
                        CommitDelay = options.CommitDelay,
                        CachedSlots = options.CachedSlots,
                    },
                    loggers.CreateLogger<LogUnit>());
                units.Add(unit);
                connector.Add(name, unit);
                chain.Add(name);
            }

            chains.Add(chain);
        }

        IProjectionStore store = options.DataDirectory is null
            ? new MemoryProjectionStore()
            : new FileProjectionStore(Path.Combine(options.DataDirectory, "projections"));
        var admin = new LogAdmin(store, connector, loggers.CreateLogger<LogAdmin>());
        if (await store.GetLatestAsync(cancellationToken).ConfigureAwait(false) is null)
        {
            await admin.BootstrapAsync(
                new Projection
                {
                    Epoch = 1,
                    BlockSize = options.BlockSize,
                    Sequencer = "sequencer",
                    Ranges = [new LayoutRange { Start = 0, Chains = chains }],
                },
                cancellationToken).ConfigureAwait(false);
        }
        else
        {
            await admin.NewEpochAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
        }

        var client = await LogClient.ConnectAsync(store, connector, options.Client, loggers.CreateLogger<LogClient>(), cancellationToken).ConfigureAwait(false);
        return new EmbeddedLog(client, units, connector, admin);
    }

    /// <inheritdoc />
    public ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default) =>
        _client.AppendAsync(block, cancellationToken);

    /// <inheritdoc />
    public ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
        _client.ReadAsync(address, destination, cancellationToken);

    /// <inheritdoc />
    public ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default) =>
        _client.FillAsync(address, cancellationToken);

    /// <inheritdoc />
    public ValueTask TrimAsync(long address, CancellationToken cancellationToken = default) =>
        _client.TrimAsync(address, cancellationToken);

    /// <inheritdoc />
    public ValueTask PrefixTrimAsync(long before, CancellationToken cancellationToken = default) =>
        _client.PrefixTrimAsync(before, cancellationToken);

    /// <inheritdoc />
    public ValueTask<long> TailAsync(CancellationToken cancellationToken = default) => _client.TailAsync(cancellationToken);

    /// <inheritdoc />
    public IAsyncEnumerable<LogRecord> SubscribeAsync(long from, CancellationToken cancellationToken = default) =>
        _client.SubscribeAsync(from, cancellationToken);

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _client.DisposeAsync().ConfigureAwait(false);
        foreach (var unit in _units)
        {
            unit.Dispose();
        }
    }
}
