using System.Buffers.Binary;
using System.IO.Pipelines;
using Hyder.Fuzz.Engine;
using Hyder.Log;
using Hyder.Log.Transport;
using Hyder.Server.Broadcast;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// An inbound intention-broadcast connection from a peer transaction server: the real
/// <see cref="Handshake.ReceiveAsync"/>, then BroadcastHub's block loop (<see cref="Frame.TryRead"/>
/// and <see cref="BroadcastFrames.ValidateBlock"/>), through a pipe in socket-sized chunks.
/// </summary>
internal sealed class BroadcastTarget : FuzzTarget
{
    private const int MaxBlockSize = 8192;

    public override string Name => "broadcast";

    public override string Description => "Handshake.ReceiveAsync (BroadcastFrames.ReadHello) and the inbound block loop (Frame.TryRead, BroadcastFrames.ValidateBlock)";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(BroadcastProtocolException)];

    public override bool HasFixup => true;

    public override void Execute(byte[] input, Seed seed) => PipeFeed.Run(input, ReceiveAsync);

    /// <summary>Recomputes the hello's and every block frame's checksum (the frame's argument).</summary>
    public override void Fixup(byte[] input, Seed seed)
    {
        for (var at = 0L; at + Frame.HeaderSize <= input.Length;)
        {
            var frame = input.AsSpan((int)at);
            var end = Math.Min(at + 4 + BinaryPrimitives.ReadUInt32LittleEndian(frame), input.Length);
            var payload = input.AsSpan((int)at + Frame.HeaderSize, (int)Math.Max(0, end - at - Frame.HeaderSize));
            var checksum = (FrameOp)frame[4] switch
            {
                FrameOp.BroadcastHello => Crc32C.Compute(payload),
                FrameOp.BroadcastBlock => BroadcastFrames.BlockChecksum(BinaryPrimitives.ReadInt64LittleEndian(frame[24..]), payload),
                _ => (uint)BinaryPrimitives.ReadInt32LittleEndian(frame[12..]),
            };
            BinaryPrimitives.WriteUInt32LittleEndian(frame[12..], checksum);
            at = Math.Max(end, at + Frame.HeaderSize);
        }
    }

    private static async Task ReceiveAsync(PipeReader input)
    {
        await Handshake.ReceiveAsync(input, CancellationToken.None).ConfigureAwait(false);

        // BroadcastHub.ReadBlocksAsync.
        while (true)
        {
            var result = await input.ReadAsync().ConfigureAwait(false);
            var buffer = result.Buffer;
            try
            {
                while (true)
                {
                    var parse = Frame.TryRead(ref buffer, MaxBlockSize, out var header, out var payload, out var error);
                    if (parse == FrameParse.Incomplete)
                    {
                        break;
                    }

                    error ??= BroadcastFrames.ValidateBlock(header, payload);
                    if (error is not null)
                    {
                        throw new BroadcastProtocolException(error);
                    }
                }

                if (result.IsCompleted)
                {
                    return;
                }
            }
            finally
            {
                input.AdvanceTo(buffer.Start, buffer.End);
            }
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var hello = new byte[Frame.HeaderSize + BroadcastFrames.MaxHelloPayload];
        var helloLength = BroadcastFrames.WriteHello(hello, LogStatus.Ok, "hyder", "server-2");
        var refusal = new byte[Frame.HeaderSize + BroadcastFrames.MaxHelloPayload];
        var refusalLength = BroadcastFrames.WriteHello(refusal, LogStatus.Conflict, "clüster-ß", "");
        var blocks = TreeCorpus.Shared.Intentions.Take(3).Select(i => i.Final).ToList();
        var stream = new List<byte>(hello[..helloLength]);
        var fields = new List<Field>(LogFramesTarget.FrameFields(0));
        for (var i = 0; i < blocks.Count; i++)
        {
            var frame = new byte[Frame.HeaderSize + blocks[i].Length];
            BroadcastFrames.WriteBlock(frame, 40 + i, (uint)i, blocks[i]);
            fields.AddRange(LogFramesTarget.FrameFields(stream.Count));
            stream.AddRange(frame);
        }

        yield return new Seed("hello only", hello[..helloLength], LogFramesTarget.FrameFields(0));
        yield return new Seed("refusal", refusal[..refusalLength], LogFramesTarget.FrameFields(0));
        yield return new Seed("hello and three blocks", [.. stream], fields);
    }
}
