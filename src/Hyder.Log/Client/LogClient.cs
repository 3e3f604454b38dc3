using Hyder.Log.Layout;
using Hyder.Log.Transport;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Log.Client;

/// <summary>
/// The shared log as one client sees it: tokens from the sequencer, chain replication driven by
/// the client (write head to tail, acknowledge after the tail, read from the tail), completion of
/// half-written chains, hole filling, and a retry after fetching the new projection whenever a
/// unit answers that the client's epoch is stale.
/// </summary>
public sealed partial class LogClient : ISharedLog
{
    private readonly IProjectionStore _store;
    private readonly ILogConnector _connector;
    private readonly LogClientOptions _options;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _refresh = new(1, 1);
    private readonly TokenBatcher _tokens = new();
    private ClientView _view;

    private LogClient(IProjectionStore store, ILogConnector connector, Projection projection, LogClientOptions options, ILogger logger)
    {
        _store = store;
        _connector = connector;
        _options = options;
        _logger = logger;
        _view = new ClientView(projection, connector);
    }

    /// <summary>Reads the latest projection from <paramref name="store"/> and returns a client for it.</summary>
    public static async Task<LogClient> ConnectAsync(
        IProjectionStore store,
        ILogConnector connector,
        LogClientOptions? options = null,
        ILogger? logger = null,
        CancellationToken cancellationToken = default)
    {
        var projection = await store.GetLatestAsync(cancellationToken).ConfigureAwait(false)
            ?? throw new SharedLogException("The projection store holds no projection; bootstrap the log first.");
        return new LogClient(store, connector, projection, options ?? new LogClientOptions(), logger ?? NullLogger.Instance);
    }

    /// <inheritdoc />
    public int BlockSize => _view.Projection.BlockSize;

    /// <summary>Token requests sent to the sequencer by appends (batched when appends overlap).</summary>
    public long TokenRequests => _tokens.Requests;

    /// <summary>The projection this client currently uses.</summary>
    public Projection Projection => _view.Projection;

    /// <inheritdoc />
    public async ValueTask<long> TailAsync(CancellationToken cancellationToken = default)
    {
        var deadline = Deadline();
        while (true)
        {
            var view = _view;
            try
            {
                var reply = await view.Sequencer.NextAsync(view.Epoch, 0, cancellationToken).ConfigureAwait(false);
                if (reply.Status == LogStatus.Ok)
                {
                    return reply.Address;
                }

                ThrowUnlessRetryable(reply.Status, -1);
            }
            catch (UnitUnreachableException)
            {
            }

            await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <inheritdoc />
    public async ValueTask TrimAsync(long address, CancellationToken cancellationToken = default)
    {
        ThrowIfOutOfRange(address);
        await OnEveryUnitAsync(view => view.ChainFor(address), (unit, epoch) => unit.TrimAsync(epoch, address, cancellationToken), cancellationToken)
            .ConfigureAwait(false);
    }

    /// <inheritdoc />
    public async ValueTask PrefixTrimAsync(long before, CancellationToken cancellationToken = default)
    {
        ThrowIfOutOfRange(Math.Max(0, before - 1));
        await OnEveryUnitAsync(view => view.AllUnits, (unit, epoch) => unit.PrefixTrimAsync(epoch, before, cancellationToken), cancellationToken)
            .ConfigureAwait(false);
    }

    private async Task OnEveryUnitAsync(
        Func<ClientView, Units.ILogUnit[]> units,
        Func<Units.ILogUnit, long, ValueTask<Units.UnitReply>> call,
        CancellationToken cancellationToken)
    {
        var deadline = Deadline();
        while (true)
        {
            var view = _view;
            var done = true;
            foreach (var unit in units(view))
            {
                try
                {
                    var reply = await call(unit, view.Epoch).ConfigureAwait(false);
                    if (reply.Status != LogStatus.Ok)
                    {
                        ThrowUnlessRetryable(reply.Status, -1);
                        done = false;
                        break;
                    }
                }
                catch (UnitUnreachableException)
                {
                    done = false;
                    break;
                }
            }

            if (done)
            {
                return;
            }

            await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Fetches the latest projection if it is newer than <paramref name="seen"/>.</summary>
    internal async Task RefreshAsync(ClientView seen, CancellationToken cancellationToken)
    {
        await _refresh.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_view != seen)
            {
                return;
            }

            Projection? latest;
            try
            {
                latest = await _store.GetLatestAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (Exception e) when (e is SharedLogException or HttpRequestException or IOException)
            {
                // The store is unreachable for now; the caller backs off and asks again.
                LogStoreUnreachable(e.Message);
                return;
            }

            if (latest is not null && latest.Epoch > seen.Epoch)
            {
                _view = new ClientView(latest, _connector);
                LogNewProjection(latest.Epoch);
            }
        }
        finally
        {
            _refresh.Release();
        }
    }

    private long Deadline() => Now() + (long)_options.OperationTimeout.TotalMilliseconds;

    /// <summary>Milliseconds on the options' clock.</summary>
    private long Now() => (long)_options.TimeProvider.GetElapsedTime(0).TotalMilliseconds;

    private async Task BackOffAsync(ClientView seen, long deadline, CancellationToken cancellationToken)
    {
        await RefreshAsync(seen, cancellationToken).ConfigureAwait(false);
        if (_view != seen)
        {
            return;
        }

        if (Now() > deadline)
        {
            throw new SharedLogException(LogStatus.Failed, -1, $"The log did not answer within {_options.OperationTimeout} (epoch {seen.Epoch}).");
        }

        await Task.Delay(_options.RetryDelay, _options.TimeProvider, cancellationToken).ConfigureAwait(false);
    }

    private static void ThrowUnlessRetryable(LogStatus status, long address)
    {
        if (status is not (LogStatus.StaleEpoch or LogStatus.NotReady))
        {
            throw new SharedLogException(status, address, $"The log answered {status} at address {address}.");
        }
    }

    private static void ThrowIfOutOfRange(long address)
    {
        if (!LogAddress.IsValid(address))
        {
            throw new SharedLogException(LogStatus.OutOfRange, address, $"Address {address} is outside the log (0 to {LogAddress.Max}).");
        }
    }

    /// <inheritdoc />
    public ValueTask DisposeAsync()
    {
        _refresh.Dispose();
        return default;
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The projection store did not answer: {Reason}")]
    private partial void LogStoreUnreachable(string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Log client moved to projection epoch {Epoch}")]
    private partial void LogNewProjection(long epoch);
}
