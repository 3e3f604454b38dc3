using System.Net;
using System.Net.Sockets;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Log.Transport;

/// <summary>
/// Serves the log protocol over TCP for whatever roles this process runs: a log unit, the
/// sequencer and/or a projection store. Each connection is served independently; a bad frame
/// closes only its own connection.
/// </summary>
public sealed partial class LogServer : IAsyncDisposable
{
    private readonly Socket _listener;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stopping = new();
    private readonly List<ServerConnection> _connections = [];
    private readonly List<Task> _running = [];
    private Task? _acceptLoop;
    private long _refused;

    /// <summary>
    /// Binds to <paramref name="endPoint"/> (port 0 picks a free port). Connections use mutual TLS
    /// when <paramref name="security"/> says so (null: plaintext): a client without a certificate
    /// of the cluster CA, or speaking plaintext, is refused at the handshake.
    /// </summary>
    public LogServer(
        IPEndPoint endPoint,
        LogUnit? unit = null,
        ISequencer? sequencer = null,
        IProjectionStore? projections = null,
        ILogger? logger = null,
        int maxInFlightPerConnection = 256,
        TransportSecurity? security = null)
    {
        Security = security ?? TransportSecurity.Plaintext;
        Unit = unit;
        Sequencer = sequencer;
        Projections = projections;
        MaxInFlightPerConnection = maxInFlightPerConnection;
        _logger = logger ?? NullLogger.Instance;
        MaxPayload = Math.Max(unit?.BlockSize ?? 0, MaxControlPayload);
        _listener = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        _listener.Bind(endPoint);
        _listener.Listen(512);
        LocalEndPoint = (IPEndPoint)_listener.LocalEndPoint!;
        CreateMeter();
    }

    /// <summary>The largest payload of a control frame (a projection's JSON).</summary>
    public const int MaxControlPayload = 64 * 1024;

    /// <summary>The bound address.</summary>
    public IPEndPoint LocalEndPoint { get; }

    internal LogUnit? Unit { get; }

    /// <summary>Plaintext or mutual TLS.</summary>
    public TransportSecurity Security { get; }

    /// <summary>Connections refused at the TLS handshake (wrong CA, no certificate, plaintext); a handshake that only timed out is not counted.</summary>
    public long RefusedConnections => Interlocked.Read(ref _refused);

    internal void CountRefused() => Interlocked.Increment(ref _refused);

    internal ISequencer? Sequencer { get; }

    internal IProjectionStore? Projections { get; }

    internal int MaxPayload { get; }

    internal int MaxInFlightPerConnection { get; }

    internal ILogger Logger => _logger;

    /// <summary>Connections served so far that are still open.</summary>
    public int OpenConnections
    {
        get
        {
            lock (_connections)
            {
                return _connections.Count;
            }
        }
    }

    /// <summary>Starts accepting connections.</summary>
    public void Start()
    {
        _acceptLoop = AcceptLoopAsync();
        LogListening(LocalEndPoint, Security.IsTls ? "mutual TLS" : "plaintext", Unit is not null, Sequencer is not null, Projections is not null);
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stopping.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await _listener.AcceptAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                return;
            }

            socket.NoDelay = true;
            var connection = new ServerConnection(this, socket);
            lock (_connections)
            {
                _connections.Add(connection);
            }

            var running = RunConnectionAsync(connection);
            lock (_connections)
            {
                _running.RemoveAll(t => t.IsCompleted);
                _running.Add(running);
            }
        }
    }

    private async Task RunConnectionAsync(ServerConnection connection)
    {
        try
        {
            await connection.RunAsync(_stopping.Token).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            // One connection's failure never takes the server down.
            LogConnectionFailed(connection.Remote, e);
        }
        finally
        {
            lock (_connections)
            {
                _connections.Remove(connection);
            }
        }
    }

    /// <summary>Stops accepting, closes every connection and waits for them.</summary>
    public async ValueTask DisposeAsync()
    {
        _meter?.Dispose();
        await _stopping.CancelAsync().ConfigureAwait(false);
        _listener.Dispose();
        if (_acceptLoop is not null)
        {
            await _acceptLoop.ConfigureAwait(false);
        }

        ServerConnection[] open;
        lock (_connections)
        {
            open = [.. _connections];
        }

        foreach (var connection in open)
        {
            connection.Abort();
        }

        // Requests in flight finish (their answers may no longer reach the client) before the
        // caller closes the unit under them.
        Task[] running;
        lock (_connections)
        {
            running = [.. _running];
        }

        await Task.WhenAll(running).ConfigureAwait(false);
        _stopping.Dispose();
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Connection from {Remote} failed")]
    private partial void LogConnectionFailed(string remote, Exception exception);

    [LoggerMessage(Level = LogLevel.Information, Message = "Log server listening on {EndPoint}, {Security} (unit: {Unit}, sequencer: {Sequencer}, projection store: {Projections})")]
    private partial void LogListening(IPEndPoint endPoint, string security, bool unit, bool sequencer, bool projections);
}
