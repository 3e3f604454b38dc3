using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using Hyder.Log;
using Hyder.Server.Broadcast;

namespace Hyder.Server.Tests;

/// <summary>A hand-driven broadcast connection for feeding a hub bytes no hub would send.</summary>
internal sealed class RawPeer : IAsyncDisposable
{
    private readonly Socket _socket;

    private RawPeer(Socket socket) => _socket = socket;

    public static async Task<RawPeer> Connect(IPEndPoint endPoint)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        await socket.ConnectAsync(endPoint);
        return new RawPeer(socket);
    }

    /// <summary>Sends a hello and returns the status of the answer.</summary>
    public async Task<LogStatus> Handshake(string clusterId = "test", string serverId = "raw")
    {
        await Send(Hello(LogStatus.Ok, clusterId, serverId));
        var header = await ReadExactly(32);
        await ReadExactly((int)BinaryPrimitives.ReadUInt32LittleEndian(header) - 28);
        return (LogStatus)header[5];
    }

    public async Task Send(byte[] bytes) => await _socket.SendAsync(bytes, SocketFlags.None);

    /// <summary>Waits for the hub to close the connection (end of stream or reset); false if it stays open.</summary>
    public async Task<bool> ClosedByPeer()
    {
        using var timeout = new CancellationTokenSource(Cluster.Patience);
        var buffer = new byte[256];
        try
        {
            while (true)
            {
                if (await _socket.ReceiveAsync(buffer, SocketFlags.None, timeout.Token) == 0)
                {
                    return true;
                }
            }
        }
        catch (SocketException)
        {
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    /// <summary>Reads the hub's hello on a connection the hub opened, then answers it.</summary>
    public static async Task<RawPeer> AcceptHandshake(TcpListener listener, string clusterId = "test")
    {
        var peer = new RawPeer(await listener.AcceptSocketAsync());
        var header = await peer.ReadExactly(32);
        await peer.ReadExactly((int)BinaryPrimitives.ReadUInt32LittleEndian(header) - 28);
        await peer.Send(Hello(LogStatus.Ok, clusterId, "raw"));
        return peer;
    }

    public static byte[] Hello(LogStatus status, string clusterId, string serverId)
    {
        var frame = new byte[32 + BroadcastFrames.MaxHelloPayload];
        return frame[..BroadcastFrames.WriteHello(frame, status, clusterId, serverId)];
    }

    public static byte[] BlockFrame(long position, byte[] block)
    {
        var frame = new byte[32 + block.Length];
        BroadcastFrames.WriteBlock(frame, position, 0, block);
        return frame;
    }

    private async Task<byte[]> ReadExactly(int count)
    {
        var buffer = new byte[count];
        for (var read = 0; read < count;)
        {
            var n = await _socket.ReceiveAsync(buffer.AsMemory(read), SocketFlags.None);
            read += n > 0 ? n : throw new IOException("closed");
        }

        return buffer;
    }

    public ValueTask DisposeAsync()
    {
        _socket.Dispose();
        return ValueTask.CompletedTask;
    }
}
