using Hyder.Hosting;
using Hyder.Log;
using Hyder.Log.Client;
using Hyder.Log.Embedded;
using Hyder.Log.Layout;
using Hyder.Log.Transport;
using Hyder.Server.Broadcast;
using Hyder.Server.Grpc;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Host;

/// <summary>
/// Runs one transaction server: opens the log (embedded or remote), starts broadcast, the
/// <see cref="TransactionServer"/> and the gRPC server, and prints the ready line. Stops in the
/// reverse order: gRPC first (no new calls, calls in flight finish), then the transaction server,
/// broadcast, and the log last, so nothing still running can reach a closed log.
/// </summary>
internal sealed partial class ServerHostService : IHostedService, IAsyncDisposable
{
    private readonly HostSettings _settings;
    private readonly ILoggerFactory _loggers;
    private readonly ILogger _logger;
    private readonly ServiceStatus _status;
    private ISharedLog? _log;
    private IProjectionStore? _store;
    private TcpConnector? _connector;
    private string? _temporaryDirectory;
    private BroadcastHub? _hub;
    private TransactionServer? _server;
    private HyderGrpcServer? _rpc;
    private int _stopped;

    public ServerHostService(HostSettings settings, ServiceStatus status, ILoggerFactory loggers)
    {
        _settings = settings;
        _status = status;
        _loggers = loggers;
        _logger = loggers.CreateLogger<ServerHostService>();
    }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        var options = _settings.Server;
        try
        {
            _log = await OpenLogAsync(cancellationToken).ConfigureAwait(false);
            BroadcastHubAdapter? broadcast = null;
            if (_settings.Broadcast)
            {
                _hub = new BroadcastHub(
                    new BroadcastOptions
                    {
                        ClusterId = _settings.ClusterId,
                        ServerId = options.ServerId,
                        Listen = _settings.BroadcastListen!,
                        Peers = _settings.Peers,
                        MaxBlockSize = Math.Max(options.Cluster.BlockSize, _log.BlockSize),
                        Security = _settings.ClusterSecurity,
                    },
                    _loggers.CreateLogger<BroadcastHub>());
                await _hub.StartAsync(cancellationToken).ConfigureAwait(false);
                broadcast = new BroadcastHubAdapter(_hub);
            }

            if (_settings.Authenticator.AnonymousRole != Hyder.Security.ClientRole.None)
            {
                LogAnonymous(Hyder.Security.ClientRoles.Name(_settings.Authenticator.AnonymousRole));
            }

            // The listener opens before the catch-up, so health checks learn NOT_SERVING (not
            // "connection refused") while the server melds the log; Hyder calls get UNAVAILABLE.
            _rpc = await HyderGrpcServer.StartAsync(
                new GrpcServerOptions
                {
                    EndPoint = _settings.Listen,
                    LoggerFactory = _loggers,
                    Tls = _settings.Tls,
                    Limits = _settings.GrpcLimits,
                    Authenticator = _settings.Authenticator,
                    MaxMessageBytes = options.Limits.MaxMessageBytes,
                    Reflection = _settings.GrpcReflection,
                },
                cancellationToken).ConfigureAwait(false);
            LogCatchingUp(options.ServerId, _rpc.Address);
            _server = await TransactionServer.StartAsync(_log, options, broadcast, _loggers.CreateLogger<TransactionServer>(), cancellationToken).ConfigureAwait(false);

            // TransactionServer.StartAsync returned once it had melded up to the log's tail as it was at start.
            _rpc.Serve(_server);
        }
        catch
        {
            await StopAsync(CancellationToken.None).ConfigureAwait(false);
            throw;
        }

        var address = _rpc.Address.ToString().TrimEnd('/');
        LogReady(options.ServerId, address, options.Cluster, (object?)_hub?.LocalEndPoint ?? "off");
        _status.Text = $"Server {options.ServerId} serving gRPC on {address}";

        // The one line scripts and tests wait for, on stdout whatever the log level.
        await Console.Out.WriteLineAsync($"hyder-server {options.ServerId} ready on {address}").ConfigureAwait(false);
        await Console.Out.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (_rpc is not null)
        {
            await _rpc.StopAsync(cancellationToken).ConfigureAwait(false);
            await _rpc.DisposeAsync().ConfigureAwait(false);
            _rpc = null;
        }

        if (_server is not null)
        {
            await _server.DisposeAsync().ConfigureAwait(false);
            _server = null;
        }

        if (_hub is not null)
        {
            await _hub.DisposeAsync().ConfigureAwait(false);
            _hub = null;
        }

        if (_log is not null)
        {
            await _log.DisposeAsync().ConfigureAwait(false);
            _log = null;
        }

        if (_connector is not null)
        {
            await _connector.DisposeAsync().ConfigureAwait(false);
            _connector = null;
        }

        if (_store is IAsyncDisposable store)
        {
            await store.DisposeAsync().ConfigureAwait(false);
        }

        _store = null;
        if (_temporaryDirectory is not null)
        {
            try
            {
                Directory.Delete(_temporaryDirectory, recursive: true);
                LogTemporaryRemoved(_temporaryDirectory);
            }
            catch (IOException e)
            {
                LogTemporaryLeft(_temporaryDirectory, e.Message);
            }

            _temporaryDirectory = null;
        }

        if (_stopped++ == 0)
        {
            LogStopped();
        }
    }

    /// <summary>Releases whatever a failed start or an abandoned host left open.</summary>
    public async ValueTask DisposeAsync() => await StopAsync(CancellationToken.None).ConfigureAwait(false);

    private async Task<ISharedLog> OpenLogAsync(CancellationToken cancellationToken)
    {
        if (_settings.Embedded)
        {
            var directory = _settings.DataDirectory;
            if (directory is null)
            {
                _temporaryDirectory = Path.Combine(Path.GetTempPath(), $"hyder-server-{Environment.ProcessId}-{Guid.NewGuid():N}");
                directory = _temporaryDirectory;
                LogTemporary(directory);
            }

            Directory.CreateDirectory(directory);
            var log = await EmbeddedLog.OpenAsync(
                new EmbeddedLogOptions
                {
                    DataDirectory = directory,
                    BlockSize = Math.Max(_settings.Server.Cluster.BlockSize, Hyder.Log.Units.LogUnitOptions.DefaultBlockSize),
                    Fsync = _settings.Fsync,
                    CommitDelay = _settings.CommitDelay,
                    CachedSlots = _settings.PageCacheSlots,
                },
                _loggers,
                cancellationToken).ConfigureAwait(false);
            LogEmbedded(directory);
            return log;
        }

        try
        {
            _store = ProjectionStoreSpec.Open(_settings.ProjectionStore!, security: _settings.ClusterSecurity);
        }
        catch (ArgumentException e)
        {
            throw new Hyder.Server.Cluster.ServerStartException($"--log (Log:ProjectionStore): {e.Message}", e);
        }

        var projection = await _store.GetLatestAsync(cancellationToken).ConfigureAwait(false)
            ?? throw new Hyder.Server.Cluster.ServerStartException($"--log (Log:ProjectionStore): {_settings.ProjectionStore} holds no projection; bootstrap the log first (hyder-log admin bootstrap).");
        _connector = new TcpConnector(projection.BlockSize, security: _settings.ClusterSecurity);
        var client = await LogClient.ConnectAsync(_store, _connector, new LogClientOptions(), _loggers.CreateLogger<LogClient>(), cancellationToken).ConfigureAwait(false);
        LogRemote(_settings.ProjectionStore!, projection.Epoch);
        return client;
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Server {ServerId} serving gRPC on {Address} ({Cluster}; broadcast {Broadcast})")]
    private partial void LogReady(string serverId, string address, Hyder.Server.Cluster.ClusterSettings cluster, object broadcast);

    [LoggerMessage(Level = LogLevel.Information, Message = "Server {ServerId} listening on {Address}, health NOT_SERVING until it has caught up with the log")]
    private partial void LogCatchingUp(string serverId, Uri address);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Callers without credentials get the {Role} role (--anonymous; docs/security.md)")]
    private partial void LogAnonymous(string role);

    [LoggerMessage(Level = LogLevel.Warning, Message = "No --data: the embedded log lives in the temporary directory {Directory}, removed on exit (nothing survives a restart)")]
    private partial void LogTemporary(string directory);

    [LoggerMessage(Level = LogLevel.Information, Message = "Embedded log open in {Directory}")]
    private partial void LogEmbedded(string directory);

    [LoggerMessage(Level = LogLevel.Information, Message = "Remote log through {Store}, epoch {Epoch}")]
    private partial void LogRemote(string store, long epoch);

    [LoggerMessage(Level = LogLevel.Information, Message = "Removed the temporary directory {Directory}")]
    private partial void LogTemporaryRemoved(string directory);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not remove the temporary directory {Directory}: {Reason}")]
    private partial void LogTemporaryLeft(string directory, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Server stopped cleanly")]
    private partial void LogStopped();
}
