using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Threading.Channels;

namespace Hyder.Processes.Tests.Faults;

/// <summary>
/// A TCP proxy on loopback that forwards every connection it accepts to one target and does to
/// the bytes what its <see cref="Settings"/> say: delay and jitter, loss by dropping or resetting
/// the connection, one-way blackholes, a bandwidth cap. The kernel here has no <c>sch_netem</c>, so
/// the real-process tests put these between processes instead: a process is given the proxy's
/// endpoint in place of its peer's.
/// </summary>
/// <remarks>
/// Every decision comes from a <see cref="Random"/> seeded by the proxy's seed, the connection's
/// number (in accept order) and the direction, and draws the same numbers per chunk whatever the
/// settings, so for a given sequence of chunks the faults repeat (how TCP cuts a stream into chunks
/// is the kernel's, so a whole run is not reproducible byte for byte). Settings can change at any
/// time; a chunk uses those in force when it is read.
/// </remarks>
public sealed class FaultProxy : IAsyncDisposable
{
    private const int ChunkBytes = 16 * 1024;

    private readonly Socket _listener;
    private readonly IPEndPoint _target;
    private readonly int _seed;
    private readonly CancellationTokenSource _stop = new();
    private readonly ConcurrentDictionary<long, Link> _links = new();
    private readonly Task _accepting;
    private FaultSettings _settings;
    private long _connections;
    private long _forwardBytes;
    private long _backwardBytes;
    private long _blackholed;
    private long _drops;
    private long _resets;
    private long _refused;

    /// <summary>Listens on 127.0.0.1, a port the OS picks (<see cref="EndPoint"/>), and forwards to <paramref name="target"/>.</summary>
    public FaultProxy(string name, IPEndPoint target, int seed, FaultSettings? settings = null)
    {
        Name = name;
        _target = target;
        _seed = seed;
        _settings = settings ?? FaultSettings.None;
        _listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        _listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        _listener.Listen(64);
        EndPoint = (IPEndPoint)_listener.LocalEndPoint!;
        _accepting = AcceptLoopAsync();
    }

    /// <summary>A name for output (the link it stands in for).</summary>
    public string Name { get; }

    /// <summary>Where clients connect.</summary>
    public IPEndPoint EndPoint { get; }

    /// <summary>The faults applied from the next chunk on.</summary>
    public FaultSettings Settings
    {
        get => Volatile.Read(ref _settings);
        set => Volatile.Write(ref _settings, value ?? throw new ArgumentNullException(nameof(value)));
    }

    /// <summary>What it has done so far.</summary>
    public FaultCounters Counters => new(
        Interlocked.Read(ref _connections), Interlocked.Read(ref _forwardBytes), Interlocked.Read(ref _backwardBytes),
        Interlocked.Read(ref _blackholed), Interlocked.Read(ref _drops), Interlocked.Read(ref _resets), Interlocked.Read(ref _refused));

    /// <summary>The connections open now.</summary>
    public int OpenConnections => _links.Count;

    /// <summary>Resets every open connection now (both sides see an RST); new ones are accepted as before.</summary>
    public void ResetAll()
    {
        foreach (var link in _links.Values)
        {
            link.Abort(reset: true, () => Interlocked.Increment(ref _resets));
        }
    }

    /// <summary>The generator behind connection <paramref name="connection"/>'s decisions in one direction (exposed for tests).</summary>
    internal static Random Dice(int seed, long connection, bool forward) => new(unchecked((seed * 1_000_003) + ((int)connection * 2) + (forward ? 0 : 1)));

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        _listener.Dispose();
        foreach (var link in _links.Values)
        {
            link.Abort(reset: true);
        }

        try
        {
            await _accepting.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
        }

        _stop.Dispose();
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _listener.AcceptAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException or OperationCanceledException)
            {
                return;
            }

            var number = Interlocked.Increment(ref _connections);
            _ = RunAsync(client, number);
        }
    }

    private async Task RunAsync(Socket client, long number)
    {
        var server = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        client.NoDelay = true;
        try
        {
            await server.ConnectAsync(_target, _stop.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException or ObjectDisposedException)
        {
            // The target is down: the client sees what it would see connecting to it directly.
            Interlocked.Increment(ref _refused);
            new Link(client, server).Abort(reset: true);
            return;
        }

        var link = new Link(client, server);
        _links[number] = link;
        try
        {
            await Task.WhenAll(
                PumpAsync(link, client, server, Dice(_seed, number, forward: true), forward: true),
                PumpAsync(link, server, client, Dice(_seed, number, forward: false), forward: false)).ConfigureAwait(false);
        }
        finally
        {
            _links.TryRemove(number, out _);
            link.Abort(reset: false);
        }
    }

    /// <summary>
    /// One direction: a reader that decides each chunk's fate as it arrives, and a writer that sends
    /// each at its due time, so a delay holds chunks back without slowing the reading.
    /// </summary>
    private async Task PumpAsync(Link link, Socket from, Socket to, Random dice, bool forward)
    {
        var queue = Channel.CreateUnbounded<(long Due, byte[] Bytes, int Length)>(new UnboundedChannelOptions { SingleReader = true, SingleWriter = true });
        var writer = WriteAsync(link, to, queue.Reader);
        var lastDue = 0L;
        try
        {
            while (true)
            {
                var buffer = new byte[ChunkBytes];
                int n;
                try
                {
                    n = await from.ReceiveAsync(buffer, SocketFlags.None, _stop.Token).ConfigureAwait(false);
                }
                catch (Exception e) when (e is SocketException or ObjectDisposedException or OperationCanceledException)
                {
                    link.Abort(reset: true);
                    return;
                }

                if (n == 0)
                {
                    return; // the writer shuts the other side's sending down once it has sent what is queued
                }

                // The same three draws for every chunk, whatever the settings.
                var s = Settings;
                var reset = dice.NextDouble() < s.Reset;
                var drop = dice.NextDouble() < s.Drop;
                var jitter = dice.NextDouble();
                if (reset || drop)
                {
                    link.Abort(reset, () => Interlocked.Increment(ref reset ? ref _resets : ref _drops));
                    return;
                }

                if (forward ? s.BlackholeForward : s.BlackholeBackward)
                {
                    Interlocked.Add(ref _blackholed, n);
                    continue;
                }

                var due = Stopwatch.GetTimestamp() + (long)((s.Delay.TotalSeconds + (s.Jitter.TotalSeconds * jitter)) * Stopwatch.Frequency);
                lastDue = Math.Max(due, lastDue);
                queue.Writer.TryWrite((lastDue, buffer, n));
            }
        }
        finally
        {
            queue.Writer.TryComplete();
            await writer.ConfigureAwait(false);
        }

        async Task WriteAsync(Link link, Socket to, ChannelReader<(long Due, byte[] Bytes, int Length)> chunks)
        {
            var nextFree = 0L;
            try
            {
                await foreach (var (due, bytes, length) in chunks.ReadAllAsync(_stop.Token).ConfigureAwait(false))
                {
                    var rate = Settings.BytesPerSecond;
                    var at = Math.Max(due, rate > 0 ? nextFree : 0);
                    var wait = Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), at);
                    if (wait > TimeSpan.Zero)
                    {
                        await Task.Delay(wait, _stop.Token).ConfigureAwait(false);
                    }

                    for (var sent = 0; sent < length;)
                    {
                        sent += await to.SendAsync(bytes.AsMemory(sent, length - sent), SocketFlags.None, _stop.Token).ConfigureAwait(false);
                    }

                    Interlocked.Add(ref forward ? ref _forwardBytes : ref _backwardBytes, length);
                    if (rate > 0)
                    {
                        nextFree = Math.Max(nextFree, Stopwatch.GetTimestamp()) + (long)((double)length / rate * Stopwatch.Frequency);
                    }
                }

                if (!link.Aborted)
                {
                    to.Shutdown(SocketShutdown.Send);
                }
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException or OperationCanceledException)
            {
                link.Abort(reset: true);
            }
        }
    }

    /// <summary>The two sockets of one proxied connection.</summary>
    private sealed class Link(Socket client, Socket server)
    {
        private int _aborted;

        public bool Aborted => Volatile.Read(ref _aborted) != 0;

        /// <summary>
        /// Closes both sides, with an RST when <paramref name="reset"/>; true for the call that did
        /// it, which runs <paramref name="counted"/> first, so a counter is up before either side
        /// can see the close.
        /// </summary>
        public bool Abort(bool reset, Action? counted = null)
        {
            if (Interlocked.Exchange(ref _aborted, 1) != 0)
            {
                return false;
            }

            counted?.Invoke();
            foreach (var socket in (Socket[])[client, server])
            {
                try
                {
                    if (reset)
                    {
                        socket.LingerState = new LingerOption(true, 0);
                    }
                    else if (socket.Connected)
                    {
                        socket.Shutdown(SocketShutdown.Both);
                    }
                }
                catch (Exception e) when (e is SocketException or ObjectDisposedException)
                {
                }

                socket.Dispose();
            }

            return true;
        }
    }
}
