using System.Buffers;
using System.IO.Pipelines;
using Hyder.Fuzz.Engine;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Feeds bytes to a stream decoder through a <see cref="Pipe"/> the way a socket would: in chunks
/// (sizes drawn from the input's own hash, so a case replays), every continuation inline on the
/// calling thread, so allocation is measured where the decoder runs.
/// </summary>
internal static class PipeFeed
{
    private static readonly PipeOptions s_options = new(
        pauseWriterThreshold: 0, readerScheduler: PipeScheduler.Inline, writerScheduler: PipeScheduler.Inline, useSynchronizationContext: false);

    /// <summary>Runs <paramref name="decode"/> over <paramref name="input"/> and returns when it has finished.</summary>
    public static void Run(byte[] input, Func<PipeReader, Task> decode)
    {
        var pipe = new Pipe(s_options);
        var decoding = DecodeAsync(pipe.Reader, decode);
        var random = new FuzzRandom(Hash(input));
        var whole = random.OneIn(2);
        for (var at = 0; at < input.Length && !decoding.IsCompleted;)
        {
            var n = whole ? input.Length : Math.Min(input.Length - at, random.OneIn(4) ? random.Next(1, 4) : random.Next(1, 128));
            pipe.Writer.Write(input.AsSpan(at, n));
            var flush = pipe.Writer.FlushAsync().AsTask().GetAwaiter().GetResult();
            at += n;
            if (flush.IsCompleted)
            {
                break;
            }
        }

        pipe.Writer.Complete();
        decoding.GetAwaiter().GetResult();
    }

    private static async Task DecodeAsync(PipeReader reader, Func<PipeReader, Task> decode)
    {
        try
        {
            await decode(reader).ConfigureAwait(false);
        }
        finally
        {
            await reader.CompleteAsync().ConfigureAwait(false);
        }
    }

    /// <summary>FNV-1a over the input: the chunking depends on the bytes alone.</summary>
    public static ulong Hash(ReadOnlySpan<byte> input)
    {
        var h = 0xCBF29CE484222325UL;
        foreach (var b in input)
        {
            h = (h ^ b) * 0x100000001B3UL;
        }

        return h;
    }
}
