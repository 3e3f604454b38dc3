using System.Collections.Concurrent;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Log.Client;

/// <summary>Turns the endpoints named in a projection into units and a sequencer to call.</summary>
public interface ILogConnector
{
    /// <summary>The log unit at <paramref name="endpoint"/>.</summary>
    ILogUnit Unit(string endpoint);

    /// <summary>The sequencer at <paramref name="endpoint"/>.</summary>
    ISequencer Sequencer(string endpoint);
}

/// <summary>Endpoints that name objects of this process (the embedded log and tests).</summary>
public sealed class InProcessConnector : ILogConnector
{
    private readonly ConcurrentDictionary<string, ILogUnit> _units = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, ISequencer> _sequencers = new(StringComparer.Ordinal);

    /// <summary>Registers (or replaces) a unit under <paramref name="endpoint"/>.</summary>
    public void Add(string endpoint, ILogUnit unit) => _units[endpoint] = unit;

    /// <summary>Registers (or replaces) a sequencer under <paramref name="endpoint"/>.</summary>
    public void Add(string endpoint, ISequencer sequencer) => _sequencers[endpoint] = sequencer;

    /// <summary>Forgets a unit; calls to it then fail as if it had crashed.</summary>
    public void Remove(string endpoint) => _units.TryRemove(endpoint, out _);

    /// <inheritdoc />
    public ILogUnit Unit(string endpoint) =>
        _units.TryGetValue(endpoint, out var unit) ? unit : new UnreachableUnit(endpoint);

    /// <inheritdoc />
    public ISequencer Sequencer(string endpoint) =>
        _sequencers.TryGetValue(endpoint, out var sequencer) ? sequencer : throw new UnitUnreachableException(endpoint, null);

    private sealed class UnreachableUnit(string endpoint) : ILogUnit
    {
        private ValueTask<UnitReply> Fail() => ValueTask.FromException<UnitReply>(new UnitUnreachableException(endpoint, null));

        public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) => Fail();

        public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) => Fail();
    }
}

/// <summary>Endpoints "address:port" reached over TCP, one pipelined connection per endpoint.</summary>
public sealed class TcpConnector : ILogConnector, IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, RemoteConnection> _connections = new(StringComparer.Ordinal);
    private readonly int _maxPayload;
    private readonly TimeSpan _requestTimeout;
    private readonly TransportSecurity _security;

    /// <summary>
    /// Creates a connector for blocks up to <paramref name="blockSize"/> bytes. A server that has
    /// not answered a request within <paramref name="requestTimeout"/> (10 s by default) is
    /// treated as failed: its connection is closed and the calls in flight fail as unreachable.
    /// Connections use mutual TLS when <paramref name="security"/> says so (null: plaintext); a
    /// refused handshake fails the call as unreachable, with the reason in its message.
    /// </summary>
    public TcpConnector(int blockSize = LogUnitOptions.DefaultBlockSize, TimeSpan? requestTimeout = null, TransportSecurity? security = null)
    {
        _security = security ?? TransportSecurity.Plaintext;
        _maxPayload = Math.Max(blockSize, LogServer.MaxControlPayload);
        _requestTimeout = requestTimeout ?? TimeSpan.FromSeconds(10);
    }

    /// <inheritdoc />
    public ILogUnit Unit(string endpoint) => new RemoteLogUnit(Connection(endpoint));

    /// <inheritdoc />
    public ISequencer Sequencer(string endpoint) => new RemoteSequencer(Connection(endpoint));

    private RemoteConnection Connection(string endpoint) =>
        _connections.GetOrAdd(endpoint, e => new RemoteConnection(e, _security, _maxPayload, TimeSpan.FromSeconds(2), _requestTimeout));

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var connection in _connections.Values)
        {
            await connection.DisposeAsync().ConfigureAwait(false);
        }

        _connections.Clear();
    }
}
