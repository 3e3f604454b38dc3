using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using Xunit;

namespace Hyder.Processes.Tests.Faults;

/// <summary>The fault proxy on its own, between a test client and an echo server, all on loopback ports the OS picks.</summary>
public sealed class FaultProxyTests : IAsyncLifetime
{
    private static readonly TimeSpan s_bound = TimeSpan.FromSeconds(20);
    private readonly TcpListener _echo = new(IPAddress.Loopback, 0);
    private readonly CancellationTokenSource _stop = new();
    private long _echoed;
    private Task _serving = Task.CompletedTask;

    private IPEndPoint Echo => (IPEndPoint)_echo.LocalEndpoint;

    public Task InitializeAsync()
    {
        _echo.Start();
        _serving = ServeAsync();
        return Task.CompletedTask;
    }

    public async Task DisposeAsync()
    {
        await _stop.CancelAsync();
        _echo.Stop();
        await _serving;
        _stop.Dispose();
    }

    [Fact]
    public async Task BytesGoBothWaysUnchangedAndAnOrderlyCloseReachesTheClient()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1);
        using var client = await ConnectAsync(proxy);
        var sent = new byte[200_000];
        new Random(5).NextBytes(sent);
        var received = await RoundTripAsync(client, sent);
        Assert.Equal(sent, received);
        client.Shutdown(SocketShutdown.Send);
        Assert.Equal(0, await client.ReceiveAsync(new byte[1], SocketFlags.None).WaitAsync(s_bound)); // the echo server closes in turn
        Assert.Equal(sent.Length, proxy.Counters.ForwardBytes);
        Assert.Equal(sent.Length, proxy.Counters.BackwardBytes);
    }

    [Fact]
    public async Task DelayHoldsEveryChunkBackInBothDirections()
    {
        var delay = TimeSpan.FromMilliseconds(150);
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { Delay = delay, Jitter = TimeSpan.FromMilliseconds(50) });
        using var client = await ConnectAsync(proxy);
        var clock = Stopwatch.StartNew();
        Assert.Equal([1, 2, 3], await RoundTripAsync(client, [1, 2, 3]));
        Assert.True(clock.Elapsed >= 2 * delay, $"round trip took {clock.Elapsed.TotalMilliseconds:F0} ms");
    }

    [Fact]
    public async Task ABandwidthCapBoundsTheRate()
    {
        const int Bytes = 256 * 1024, Rate = 512 * 1024;
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { BytesPerSecond = Rate });
        using var client = await ConnectAsync(proxy);
        var clock = Stopwatch.StartNew();
        await RoundTripAsync(client, new byte[Bytes]);

        // Each direction sends its first chunk (at most 16 KiB) at once and every later byte at the
        // capped rate; the echo overlaps the two directions, so one direction's time is the bound.
        var bound = TimeSpan.FromSeconds((Bytes - (16.0 * 1024)) / Rate);
        Assert.True(clock.Elapsed >= bound, $"{Bytes} bytes each way took {clock.Elapsed.TotalMilliseconds:F0} ms, under {bound.TotalMilliseconds:F0} ms");
    }

    [Fact]
    public async Task AOneWayBlackholeSwallowsOneDirectionUntilHealed()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { BlackholeForward = true });
        using var client = await ConnectAsync(proxy);
        await client.SendAsync(new byte[] { 9, 9, 9 });
        await WaitUntilAsync(() => proxy.Counters.BlackholedBytes == 3);
        Assert.Equal(0, Interlocked.Read(ref _echoed));
        Assert.Equal(0, proxy.Counters.ForwardBytes);
        Assert.Equal(1, proxy.OpenConnections); // the connection stays open, as across a cut cable

        proxy.Settings = proxy.Settings.Healed();
        Assert.Equal([4, 5], await RoundTripAsync(client, [4, 5]));
        Assert.Equal(2, Interlocked.Read(ref _echoed));
    }

    [Fact]
    public async Task ABackwardBlackholeLetsRequestsThroughButNoAnswers()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { BlackholeBackward = true });
        using var client = await ConnectAsync(proxy);
        await client.SendAsync(new byte[] { 1, 2 });
        await WaitUntilAsync(() => proxy.Counters.BlackholedBytes == 2);
        Assert.Equal(2, Interlocked.Read(ref _echoed));
        Assert.Equal(0, client.Available);
    }

    [Fact]
    public async Task AResetReachesTheClientAsAnRst()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { Reset = 1 });
        using var client = await ConnectAsync(proxy);
        await client.SendAsync(new byte[] { 1 });
        var e = await Assert.ThrowsAsync<SocketException>(async () => await client.ReceiveAsync(new byte[1], SocketFlags.None).WaitAsync(s_bound));
        Assert.Equal(SocketError.ConnectionReset, e.SocketErrorCode);
        Assert.Equal(1, proxy.Counters.Resets);
        Assert.Equal(0, Interlocked.Read(ref _echoed));
    }

    [Fact]
    public async Task ADropClosesTheConnectionAndLosesTheChunk()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1, new FaultSettings { Drop = 1 });
        using var client = await ConnectAsync(proxy);
        await client.SendAsync(new byte[] { 1 });
        Assert.Equal(0, await client.ReceiveAsync(new byte[1], SocketFlags.None).WaitAsync(s_bound));
        Assert.Equal(1, proxy.Counters.Drops);
        Assert.Equal(0, Interlocked.Read(ref _echoed));
    }

    [Fact]
    public async Task ResetAllResetsOpenConnectionsAndNewOnesStillWork()
    {
        await using var proxy = new FaultProxy("echo", Echo, seed: 1);
        using var first = await ConnectAsync(proxy);
        await RoundTripAsync(first, [1]);
        proxy.ResetAll();
        await Assert.ThrowsAsync<SocketException>(async () => await first.ReceiveAsync(new byte[1], SocketFlags.None).WaitAsync(s_bound));
        using var second = await ConnectAsync(proxy);
        Assert.Equal([2], await RoundTripAsync(second, [2]));
        Assert.Equal(2, proxy.Counters.Connections);
    }

    [Fact]
    public async Task ATargetThatIsDownRefusesThroughTheProxy()
    {
        var down = new IPEndPoint(IPAddress.Loopback, Hyder.Testing.ReservedPorts.Take());
        await using var proxy = new FaultProxy("down", down, seed: 1);
        await Assert.ThrowsAsync<SocketException>(async () =>
        {
            // The reset may come before the client's connect completes, or after.
            using var client = await ConnectAsync(proxy);
            await client.ReceiveAsync(new byte[1], SocketFlags.None).WaitAsync(s_bound);
        });
        await WaitUntilAsync(() => proxy.Counters.RefusedConnects == 1);
    }

    [Fact]
    public void TheSameSeedMakesTheSameDecisionsAndAnotherSeedOthers()
    {
        double[] Draws(int seed, long connection, bool forward)
        {
            var dice = FaultProxy.Dice(seed, connection, forward);
            return [.. Enumerable.Range(0, 30).Select(_ => dice.NextDouble())];
        }

        Assert.Equal(Draws(7, 3, true), Draws(7, 3, true));
        Assert.NotEqual(Draws(7, 3, true), Draws(8, 3, true));
        Assert.NotEqual(Draws(7, 3, true), Draws(7, 4, true));
        Assert.NotEqual(Draws(7, 3, true), Draws(7, 3, false));
    }

    private static async Task<Socket> ConnectAsync(FaultProxy proxy)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(proxy.EndPoint);
        return socket;
    }

    private static async Task<byte[]> RoundTripAsync(Socket client, byte[] bytes)
    {
        var receive = Task.Run(async () =>
        {
            var received = new byte[bytes.Length];
            for (var at = 0; at < received.Length;)
            {
                var n = await client.ReceiveAsync(received.AsMemory(at), SocketFlags.None);
                Assert.True(n > 0, $"closed after {at} of {received.Length} bytes");
                at += n;
            }

            return received;
        });
        await client.SendAsync(bytes);
        return await receive.WaitAsync(s_bound);
    }

    private static async Task WaitUntilAsync(Func<bool> condition)
    {
        using var bound = new CancellationTokenSource(s_bound);
        while (!condition())
        {
            await Task.Delay(5, bound.Token);
        }
    }

    private async Task ServeAsync()
    {
        var connections = new List<Task>();
        try
        {
            while (true)
            {
                var socket = await _echo.AcceptSocketAsync(_stop.Token);
                connections.Add(Task.Run(async () =>
                {
                    using (socket)
                    {
                        var buffer = new byte[64 * 1024];
                        try
                        {
                            int n;
                            while ((n = await socket.ReceiveAsync(buffer, SocketFlags.None, _stop.Token)) > 0)
                            {
                                Interlocked.Add(ref _echoed, n);
                                await socket.SendAsync(buffer.AsMemory(0, n), SocketFlags.None, _stop.Token);
                            }

                            socket.Shutdown(SocketShutdown.Send);
                        }
                        catch (Exception e) when (e is SocketException or OperationCanceledException)
                        {
                        }
                    }
                }));
            }
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException or ObjectDisposedException)
        {
        }

        await Task.WhenAll(connections);
    }
}
