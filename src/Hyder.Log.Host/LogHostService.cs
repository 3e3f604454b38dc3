using Hyder.Hosting;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Host;

/// <summary>
/// Runs the configured roles behind one <see cref="LogServer"/>. A sequencer that starts under
/// a projection naming it has lost its soft state, so it moves the log to a new epoch (sealing
/// the units and restarting above their tails) before it hands out a token.
/// </summary>
internal sealed partial class LogHostService : BackgroundService
{
    private readonly HostSettings _settings;
    private readonly ILoggerFactory _loggers;
    private readonly ILogger _logger;
    private readonly ServiceStatus _status;
    private LogUnit? _unit;
    private LogServer? _server;
    private IProjectionStore? _store;
    private TcpConnector? _connector;

    public LogHostService(HostSettings settings, ServiceStatus status, ILoggerFactory loggers)
    {
        _settings = settings;
        _status = status;
        _loggers = loggers;
        _logger = loggers.CreateLogger<LogHostService>();
    }

    public override async Task StartAsync(CancellationToken cancellationToken)
    {
        if (_settings.Unit)
        {
            _unit = LogUnit.Open(
                new LogUnitOptions
                {
                    BlockSize = _settings.BlockSize,
                    DataDirectory = Path.Combine(_settings.DataDirectory!, "unit"),
                    SlotsPerSegment = _settings.SlotsPerSegment,
                    Fsync = _settings.Fsync,
                    CommitDelay = _settings.CommitDelay,
                    CachedSlots = _settings.CachedSlots,
                },
                _loggers.CreateLogger<LogUnit>());
        }

        if (_settings.Projection)
        {
            _store = new FileProjectionStore(Path.Combine(_settings.DataDirectory!, "projections"));
        }
        else if (_settings.ProjectionStore is not null)
        {
            _store = ProjectionStoreSpec.Open(_settings.ProjectionStore, security: _settings.Security);
        }

        var sequencer = _settings.Sequencer ? new Sequencer() : null;
        _server = new LogServer(_settings.EndPoint, _unit, sequencer, _settings.Projection ? _store : null, _loggers.CreateLogger<LogServer>(), security: _settings.Security);
        _server.Start();
        LogReady(_server.LocalEndPoint.Port);
        string[] roles = [.. new[] { (_settings.Unit, "unit"), (_settings.Sequencer, "sequencer"), (_settings.Projection, "projection") }.Where(r => r.Item1).Select(r => r.Item2)];
        _status.Text = $"Serving {string.Join(", ", roles)} on {_server.LocalEndPoint}{(_settings.Security.IsTls ? " (mutual TLS)" : "")}";
        await base.StartAsync(cancellationToken).ConfigureAwait(false);
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        if (!_settings.Sequencer || _store is null)
        {
            return;
        }

        var me = _settings.Advertise ?? _server!.LocalEndPoint.ToString();
        _connector = new TcpConnector(_settings.BlockSize, security: _settings.Security);
        var admin = new LogAdmin(_store, _connector, _loggers.CreateLogger<LogAdmin>());
        while (!stoppingToken.IsCancellationRequested)
        {
            try
            {
                var current = await _store.GetLatestAsync(stoppingToken).ConfigureAwait(false);
                if (current is null)
                {
                    LogAwaitingBootstrap();
                    return;
                }

                if (current.Sequencer != me)
                {
                    LogNotNamed(current.Epoch, current.Sequencer, me);
                    return;
                }

                var next = await admin.NewEpochAsync(cancellationToken: stoppingToken).ConfigureAwait(false);
                LogSequencerReady(next.Epoch);
                return;
            }
            catch (SharedLogException e)
            {
                LogRetryingEpoch(e.Message);
                await Task.Delay(TimeSpan.FromMilliseconds(200), stoppingToken).ConfigureAwait(false);
            }
        }
    }

    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        await base.StopAsync(cancellationToken).ConfigureAwait(false);
        if (_server is not null)
        {
            await _server.DisposeAsync().ConfigureAwait(false);
        }

        if (_connector is not null)
        {
            await _connector.DisposeAsync().ConfigureAwait(false);
        }

        if (_store is IAsyncDisposable disposable)
        {
            await disposable.DisposeAsync().ConfigureAwait(false);
        }

        _unit?.Dispose();
        _settings.Security.Dispose();
        LogStopped();
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Log host ready on port {Port}")]
    private partial void LogReady(int port);

    [LoggerMessage(Level = LogLevel.Information, Message = "No projection yet: the sequencer waits for 'admin bootstrap'")]
    private partial void LogAwaitingBootstrap();

    [LoggerMessage(Level = LogLevel.Warning, Message = "Projection epoch {Epoch} names sequencer {Named}, not {Me}; this sequencer stays idle until a reconfiguration names it")]
    private partial void LogNotNamed(long epoch, string named, string me);

    [LoggerMessage(Level = LogLevel.Information, Message = "Sequencer rebuilt from the sealed units' tails; serving epoch {Epoch}")]
    private partial void LogSequencerReady(long epoch);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not start a new epoch yet ({Reason}); retrying")]
    private partial void LogRetryingEpoch(string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Log host stopped cleanly")]
    private partial void LogStopped();
}
