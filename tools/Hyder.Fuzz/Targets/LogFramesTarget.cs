using System.Buffers;
using System.IO.Pipelines;
using System.Text;
using System.Text.Json;
using Hyder.Fuzz.Engine;
using Hyder.Log;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Fuzz.Targets;

/// <summary>Which end of a log connection reads the stream.</summary>
internal enum LogSide
{
    /// <summary>A log server reading requests.</summary>
    Server,

    /// <summary>A client (FrameClient) reading responses.</summary>
    Client,
}

/// <summary>
/// The log protocol's byte stream as each end reads it, through a pipe in socket-sized chunks.
/// Server side: ServerConnection's read loop (<see cref="Frame.TryRead"/>, the request checks of
/// <see cref="ServerConnection.Validate"/>) and ServerRequest's dispatch of each frame to a real
/// in-memory log unit, sequencer and <see cref="Projection.FromJson"/>. Client side: FrameClient's
/// read loop and the projection a GetProjection answer carries.
/// </summary>
internal sealed class LogFramesTarget : FuzzTarget
{
    private const int BlockSize = 256;
    private static readonly int s_serverMaxPayload = Math.Max(BlockSize, LogServer.MaxControlPayload);

    public override string Name => "log-frames";

    public override string Description => "Frame.TryRead and the request checks of a log server, each request served by a unit, sequencer and Projection.FromJson; FrameClient's response reading";

    // IOException: FrameClient's malformed response (the connection breaks); ArgumentException and
    // JsonException: a projection that does not parse (ServerRequest answers Failed, the client throws).
    public override IReadOnlyList<Type> Documented { get; } = [typeof(IOException), typeof(ArgumentException), typeof(JsonException)];

    public override void Execute(byte[] input, Seed seed)
    {
        if ((LogSide)seed.Context! == LogSide.Server)
        {
            var unit = LogUnit.Open(new LogUnitOptions { BlockSize = BlockSize });
            var sequencer = new Sequencer();
            sequencer.ResetAsync(1, 0).AsTask().GetAwaiter().GetResult();
            PipeFeed.Run(input, reader => ServeAsync(reader, unit, sequencer));
            unit.Dispose();
        }
        else
        {
            PipeFeed.Run(input, ReadResponsesAsync);
        }
    }

    /// <summary>ServerConnection.ReadLoopAsync, with ServerRequest.Start run inline for each frame.</summary>
    private static async Task ServeAsync(PipeReader input, LogUnit unit, Sequencer sequencer)
    {
        var read = new byte[BlockSize];
        while (true)
        {
            var result = await input.ReadAsync().ConfigureAwait(false);
            var buffer = result.Buffer;
            try
            {
                while (true)
                {
                    var parse = Frame.TryRead(ref buffer, s_serverMaxPayload, out var header, out var payload, out var error);
                    if (parse == FrameParse.Incomplete)
                    {
                        break;
                    }

                    error ??= ServerConnection.Validate(header);
                    if (error is not null)
                    {
                        FuzzRejectionException.Throw(error);
                    }

                    await ServeAsync(header, payload, unit, sequencer, read).ConfigureAwait(false);
                }

                if (result.IsCompleted)
                {
                    if (buffer.Length > 0)
                    {
                        FuzzRejectionException.Throw($"connection closed inside a frame ({buffer.Length} bytes left)");
                    }

                    return;
                }
            }
            finally
            {
                input.AdvanceTo(buffer.Start, buffer.End);
            }
        }
    }

    private static async Task ServeAsync(FrameHeader header, ReadOnlySequence<byte> payload, LogUnit unit, Sequencer sequencer, byte[] read)
    {
        switch (header.Op)
        {
            case FrameOp.Ping or FrameOp.GetProjection:
                return;
            case FrameOp.Token:
                await sequencer.NextAsync(header.Epoch, header.Arg).ConfigureAwait(false);
                return;
            case FrameOp.Reset:
                await sequencer.ResetAsync(header.Epoch, header.Address).ConfigureAwait(false);
                return;
            case FrameOp.InstallProjection:
                Projection.FromJson(Encoding.UTF8.GetString(payload));
                return;
        }

        var reply = header.Op switch
        {
            FrameOp.Write => await unit.WriteAsync(header.Epoch, header.Address, payload.ToArray()).ConfigureAwait(false),
            FrameOp.Read => await unit.ReadAsync(header.Epoch, header.Address, read).ConfigureAwait(false),
            FrameOp.Fill => await unit.FillAsync(header.Epoch, header.Address).ConfigureAwait(false),
            FrameOp.Trim => await unit.TrimAsync(header.Epoch, header.Address).ConfigureAwait(false),
            FrameOp.PrefixTrim => await unit.PrefixTrimAsync(header.Epoch, header.Address).ConfigureAwait(false),
            FrameOp.Seal => await unit.SealAsync(header.Epoch).ConfigureAwait(false),
            _ => await unit.HighestAsync(header.Epoch).ConfigureAwait(false),
        };
        _ = reply;
    }

    /// <summary>FrameClient.ReadLoopAsync and Deliver, with RemoteProjectionStore's parse of a projection answer.</summary>
    private static async Task ReadResponsesAsync(PipeReader input)
    {
        var destination = new byte[LogServer.MaxControlPayload];
        while (true)
        {
            var result = await input.ReadAsync().ConfigureAwait(false);
            var buffer = result.Buffer;
            while (true)
            {
                var parse = Frame.TryRead(ref buffer, LogServer.MaxControlPayload, out var header, out var payload, out var error);
                if (parse == FrameParse.Incomplete)
                {
                    break;
                }

                if (parse == FrameParse.Malformed)
                {
                    input.AdvanceTo(buffer.Start, buffer.End);
                    throw new IOException($"Malformed response from the fuzzer: {error}");
                }

                var length = (int)payload.Length;
                if (length <= destination.Length)
                {
                    payload.CopyTo(destination);
                    if (header.Op == FrameOp.GetProjection && header.Status == LogStatus.Ok)
                    {
                        Projection.FromJson(Encoding.UTF8.GetString(destination, 0, length));
                    }
                }
            }

            input.AdvanceTo(buffer.Start, buffer.End);
            if (result.IsCompleted)
            {
                // The end of the case's bytes: a clean end between frames, a broken connection inside one.
                if (buffer.Length > 0)
                {
                    throw new IOException($"the server closed the connection inside a frame ({buffer.Length} bytes left).");
                }

                return;
            }
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var projection = ProjectionJsonTarget.Samples()[1];
        var json = Encoding.UTF8.GetBytes(projection.ToJson());
        var block = Enumerable.Range(0, 100).Select(i => (byte)(i * 7)).ToArray();
        var requests = new List<(string Name, byte[] Bytes)>
        {
            ("ping", EncodeFrame(FrameOp.Ping, LogStatus.Ok, 1, 0, 0, 0, [])),
            ("write", EncodeFrame(FrameOp.Write, LogStatus.Ok, 2, 0, 1, 5, block)),
            ("read", EncodeFrame(FrameOp.Read, LogStatus.Ok, 3, 0, 1, 5, [])),
            ("fill", EncodeFrame(FrameOp.Fill, LogStatus.Ok, 4, 0, 1, 6, [])),
            ("trim", EncodeFrame(FrameOp.Trim, LogStatus.Ok, 5, 0, 1, 5, [])),
            ("prefix trim", EncodeFrame(FrameOp.PrefixTrim, LogStatus.Ok, 6, 0, 1, 3, [])),
            ("seal", EncodeFrame(FrameOp.Seal, LogStatus.Ok, 7, 0, 2, 0, [])),
            ("highest", EncodeFrame(FrameOp.Highest, LogStatus.Ok, 8, 0, 2, 0, [])),
            ("token", EncodeFrame(FrameOp.Token, LogStatus.Ok, 9, 4, 1, 0, [])),
            ("reset", EncodeFrame(FrameOp.Reset, LogStatus.Ok, 10, 0, 2, 40, [])),
            ("get projection", EncodeFrame(FrameOp.GetProjection, LogStatus.Ok, 11, 0, 0, 0, [])),
            ("install projection", EncodeFrame(FrameOp.InstallProjection, LogStatus.Ok, 12, 0, projection.Epoch, 0, json)),
        };
        foreach (var (name, bytes) in requests)
        {
            yield return new Seed($"request {name}", bytes, FrameFields(0), LogSide.Server);
        }

        yield return Stream("request stream", LogSide.Server, requests.Select(r => r.Bytes));
        var responses = new List<(string Name, byte[] Bytes)>
        {
            ("read answer", EncodeFrame(FrameOp.Read, LogStatus.Ok, 3, 100, 1, 100, block)),
            ("write answer", EncodeFrame(FrameOp.Write, LogStatus.Written, 2, 0, 1, 0, [])),
            ("token answer", EncodeFrame(FrameOp.Token, LogStatus.Ok, 9, 0, 1, 77, [])),
            ("stale epoch", EncodeFrame(FrameOp.Seal, LogStatus.StaleEpoch, 7, 0, 3, 0, [])),
            ("projection answer", EncodeFrame(FrameOp.GetProjection, LogStatus.Ok, 11, 0, projection.Epoch, 0, json)),
        };
        foreach (var (name, bytes) in responses)
        {
            yield return new Seed($"response {name}", bytes, FrameFields(0), LogSide.Client);
        }

        yield return Stream("response stream", LogSide.Client, responses.Select(r => r.Bytes));
    }

    private static Seed Stream(string name, LogSide side, IEnumerable<byte[]> frames)
    {
        var bytes = new List<byte>();
        var fields = new List<Field>();
        foreach (var frame in frames)
        {
            fields.AddRange(FrameFields(bytes.Count));
            bytes.AddRange(frame);
        }

        return new Seed(name, [.. bytes], fields, side);
    }

    /// <summary>The header fields of a frame at <paramref name="at"/>.</summary>
    public static Field[] FrameFields(int at) =>
    [
        new(at, 4, FieldKind.UInt, "body length"),
        new(at + 4, 1, FieldKind.UInt, "op"),
        new(at + 5, 1, FieldKind.UInt, "status"),
        new(at + 6, 1, FieldKind.UInt, "version"),
        new(at + 8, 4, FieldKind.UInt, "request id"),
        new(at + 12, 4, FieldKind.Int, "argument"),
        new(at + 16, 8, FieldKind.Int, "epoch"),
        new(at + 24, 8, FieldKind.Int, "address"),
    ];

    /// <summary>A frame as <see cref="Hyder.Log.Transport.Frame.Write"/> writes it.</summary>
    public static byte[] EncodeFrame(FrameOp op, LogStatus status, uint requestId, int arg, long epoch, long address, ReadOnlySpan<byte> payload)
    {
        var bytes = new byte[Hyder.Log.Transport.Frame.HeaderSize + payload.Length];
        Hyder.Log.Transport.Frame.Write(bytes, new FrameHeader
        {
            Op = op,
            Status = status,
            RequestId = requestId,
            Arg = arg,
            Epoch = epoch,
            Address = address,
            PayloadLength = payload.Length,
        });
        payload.CopyTo(bytes.AsSpan(Hyder.Log.Transport.Frame.HeaderSize));
        return bytes;
    }
}
