using System.Buffers;
using System.Diagnostics;
using System.Net;
using Hyder.Log.Transport;
using Hyder.Server.Broadcast;
using Hyder.Testing;

namespace Hyder.Server.Tests;

/// <summary>Helpers for broadcast tests: hubs on loopback with OS-chosen ports, blocks whose bytes follow from their position.</summary>
internal static class Cluster
{
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(10);

    public static async Task<BroadcastHub> StartHub(
        string serverId, string clusterId = "test", int cache = 1024, int queue = 1024, IPEndPoint? listen = null, TransportSecurity? security = null)
    {
        var hub = new BroadcastHub(new BroadcastOptions
        {
            ClusterId = clusterId,
            ServerId = serverId,
            Listen = listen ?? new IPEndPoint(IPAddress.Loopback, 0),
            CacheCapacity = cache,
            SendQueueCapacity = queue,
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(10),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(100),
            HandshakeTimeout = TimeSpan.FromSeconds(5),
            Security = security ?? TransportSecurity.Plaintext,
        });
        await hub.StartAsync();
        return hub;
    }

    /// <summary>Every hub sends to every other one; returns once all connections are up.</summary>
    public static async Task ConnectAll(params BroadcastHub[] hubs)
    {
        foreach (var hub in hubs)
        {
            foreach (var other in hubs)
            {
                if (other != hub)
                {
                    hub.AddPeer(other.LocalEndPoint);
                }
            }
        }

        await WaitUntil(() => hubs.All(h => h.ConnectedPeers == hubs.Length - 1), "all hubs connected");
    }

    /// <summary>Polls <paramref name="condition"/> until it holds; fails the test after <see cref="Patience"/>.</summary>
    public static async Task WaitUntil(Func<bool> condition, string what) => await WaitUntil(condition, () => what);

    /// <summary>As <see cref="WaitUntil(Func{bool}, string)"/>, describing the state at the time of failure.</summary>
    public static async Task WaitUntil(Func<bool> condition, Func<string> what)
    {
        var clock = Stopwatch.StartNew();
        while (!condition())
        {
            if (clock.Elapsed > Patience)
            {
                throw new TimeoutException($"Timed out waiting for: {what()}");
            }

            await Task.Delay(5);
        }
    }

    /// <summary>The block published at <paramref name="position"/>: its bytes are a function of the position.</summary>
    public static byte[] Block(long position, int size = 8192)
    {
        var block = new byte[size];
        var state = (uint)(position * 2654435761L) | 1;
        for (var i = 0; i < size; i++)
        {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            block[i] = (byte)state;
        }

        return block;
    }

    public static byte[]? Take(BroadcastHub hub, long position)
    {
        var writer = new ArrayBufferWriter<byte>();
        return hub.TryTake(position, writer) ? writer.WrittenSpan.ToArray() : null;
    }

    /// <summary>A loopback endpoint nothing listens on yet and no other test is given (<see cref="ReservedPorts"/>).</summary>
    public static IPEndPoint FreeEndPoint() => ReservedPorts.TakeEndPoint();
}
