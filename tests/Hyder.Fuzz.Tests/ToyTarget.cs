using System.Buffers.Binary;
using Hyder.Fuzz.Engine;

namespace Hyder.Fuzz.Tests;

/// <summary>The bug a <see cref="ToyTarget"/> has.</summary>
public enum ToyBug
{
    /// <summary>None: a careful decoder.</summary>
    None,

    /// <summary>Trusts its length field as an index.</summary>
    IndexOutOfRange,

    /// <summary>Allocates what its length field claims.</summary>
    UnboundedAllocation,

    /// <summary>Loops forever on a zero step.</summary>
    Loop,

    /// <summary>Takes its time on a zero step, then returns.</summary>
    Slow,

    /// <summary>Takes its time on the first zero step it sees only (the machine was busy), then answers at once.</summary>
    SlowOnce,

    /// <summary>Rejects with its documented exception but no message.</summary>
    NoMessage,

    /// <summary>Lets an ArgumentOutOfRangeException through where it documents ArgumentException.</summary>
    ArgumentOutOfRange,
}

/// <summary>
/// A deliberately broken decoder of a toy format (u32 length, then that many bytes, then a step
/// byte), so the oracle can be shown to catch each kind of fault: a fuzzer that cannot fail proves
/// nothing.
/// </summary>
public sealed class ToyTarget(ToyBug bug) : FuzzTarget
{
    private static volatile bool s_looping = true;
    private int _slowed;

    public override string Name => $"toy-{bug}";

    public override string Description => "a toy length-prefixed format";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(ArgumentException)];

    /// <summary>Lets looping cases end (the runner has given up on them by then).</summary>
    public static void ReleaseLoops() => s_looping = false;

    public override void Execute(byte[] input, Seed seed)
    {
        if (input.Length < 5)
        {
            throw new ArgumentException(bug == ToyBug.NoMessage ? "" : "shorter than a header");
        }

        var length = BinaryPrimitives.ReadUInt32LittleEndian(input);
        switch (bug)
        {
            case ToyBug.IndexOutOfRange:
                _ = input[4 + (int)(length & 0xFFFF)];
                break;
            case ToyBug.UnboundedAllocation:
                GC.KeepAlive(new byte[length & 0x3FF_FFFF]);
                break;
            case ToyBug.Loop when input[4] == 0:
                while (s_looping)
                {
                    Thread.SpinWait(100);
                }

                break;
            case ToyBug.Slow when input[4] == 0:
                Thread.Sleep(400);
                break;
            case ToyBug.SlowOnce when input[4] == 0 && Interlocked.Exchange(ref _slowed, 1) == 0:
                Thread.Sleep(400);
                break;
            case ToyBug.ArgumentOutOfRange when length > (uint)input.Length:
                throw new ArgumentOutOfRangeException(nameof(input), "a length past the end");
        }

        if (length > (uint)input.Length - 5)
        {
            throw new ArgumentException(bug == ToyBug.NoMessage ? "" : $"length {length} is more than the {input.Length - 5} bytes left");
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        byte[] a = [3, 0, 0, 0, 1, 7, 8, 9];
        byte[] b = [10, 0, 0, 0, 2, .. Enumerable.Range(0, 10).Select(i => (byte)i)];
        Field[] fields = [new(0, 4, FieldKind.UInt, "length"), new(4, 1, FieldKind.UInt, "step")];
        yield return new Seed("three bytes", a, fields);
        yield return new Seed("ten bytes", b, fields);
    }
}
