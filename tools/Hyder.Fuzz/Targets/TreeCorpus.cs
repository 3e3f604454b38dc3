using System.Buffers.Binary;
using Hyder.Fuzz.Engine;
using Hyder.Server.Core;
using Hyder.Tree;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>An intention or checkpoint as its blocks: the final block and the parts, in order.</summary>
/// <param name="Name">What it holds, for output.</param>
/// <param name="Final">The final block.</param>
/// <param name="Parts">The earlier blocks.</param>
internal sealed record EncodedBlocks(string Name, byte[] Final, byte[][] Parts)
{
    /// <summary>The blocks with block <paramref name="index"/> (-1: the final) replaced.</summary>
    public (byte[] Final, ReadOnlyMemory<byte>[] Parts) With(int index, byte[] block)
    {
        var parts = Parts.Select(p => (ReadOnlyMemory<byte>)p).ToArray();
        if (index >= 0)
        {
            parts[index] = block;
            return (Final, parts);
        }

        return (block, parts);
    }
}

/// <summary>Which block of an encoding a seed is.</summary>
internal sealed record BlockSeed(EncodedBlocks Blocks, int Index);

/// <summary>
/// Valid intentions and checkpoints made by the real encoders, the way the serialization tests make
/// them (tests/Hyder.Tree.Tests/Serialization: a database run through random transactions, then
/// transactions on a pinned snapshot with reads, puts, deletes, scans and commutative operations
/// (operation lists, docs/doppel.md), at an 8 KiB and a 256-byte block size). The encoders draw a random nonce per encoding; it is replaced by one derived from
/// the encoding's place, so the corpus is byte-identical in every process and a case number replays.
/// </summary>
internal sealed class TreeCorpus : IPersistentNodeSource
{
    private static readonly Lazy<TreeCorpus> s_shared = new(() => new TreeCorpus());
    private readonly Dictionary<long, (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts)> _log = [];
    private readonly Random _random = new(20240610);
    private long _nonce = 0x4859_4445_5246_555A;
    private long _nextPartPosition = 1_000_000;

    private TreeCorpus()
    {
        for (var step = 0; step < 30; step++)
        {
            Step(step);
        }

        Snapshot = Database.PinCurrent();
        foreach (var (blockSize, payload) in new[] { (8192, 8), (256, 60), (128, 40) })
        {
            foreach (var isolation in new[] { IsolationLevel.Serializable, IsolationLevel.SnapshotIsolation, IsolationLevel.ReadCommitted })
            {
                var tx = Database.BeginAt(Snapshot, isolation);
                var keys = TreeInspector.Contents(Snapshot.Root);
                tx.TryGet(Key(3), out _);
                tx.Put(Key(10), Payload(payload));
                tx.Put(Key(77), Payload(payload));
                tx.Delete(keys[5].Key);
                tx.Insert(Key(500 + blockSize), Payload(payload));
                tx.Scan(Key(20), Key(30), 4, []);
                tx.Add(Key(11), 5, min: -100);
                tx.OPut(Key(12), 2, Payload(8));
                tx.TopKInsert(Key(13), 3, 7, Payload(8));
                var i = tx.Complete()!;
                Intentions.Add(Encode($"intention {isolation} / {blockSize} B", IntentionEncoder.Encode(i, blockSize)));
                i.ReleasePins();
            }
        }

        var info = new CheckpointInfo(Database.LastAppended, Snapshot.Sequence, Database.LastAppended + 1, new StageSequences(Database.FinalMeld.NextEphemeralSequence, [11, 12], 13));
        CheckpointMetadata = info.Encode();
        foreach (var blockSize in new[] { 8192, 1024, 256 })
        {
            Checkpoints.Add(Encode($"checkpoint / {blockSize} B", CheckpointEncoder.Encode(Snapshot, CheckpointMetadata, blockSize)));
            SelfContainedCheckpoints.Add(EncodeSelfContained($"checkpoint format 4 / {blockSize} B", blockSize));
        }
    }

    /// <summary>The corpus, built once per process.</summary>
    public static TreeCorpus Shared => s_shared.Value;

    /// <summary>The database whose log the intentions and checkpoints refer to.</summary>
    public Database Database { get; } = new(finalMeldThreadId: 3);

    /// <summary>The state the sample intentions ran on and the checkpoints hold (kept pinned).</summary>
    public DatabaseState Snapshot { get; }

    /// <summary>Intentions that ran on <see cref="Snapshot"/>, single- and multi-block.</summary>
    public List<EncodedBlocks> Intentions { get; } = [];

    /// <summary>Checkpoints of <see cref="Snapshot"/>, single- and multi-block.</summary>
    public List<EncodedBlocks> Checkpoints { get; } = [];

    /// <summary>Self-contained (format 4) checkpoints of <see cref="Snapshot"/>, their parts at consecutive positions.</summary>
    public List<EncodedBlocks> SelfContainedCheckpoints { get; } = [];

    /// <summary>The server's metadata stored with the checkpoints.</summary>
    public byte[] CheckpointMetadata { get; }

    /// <summary>Seeds for every block of <paramref name="encodings"/>, with the header and the first body fields marked.</summary>
    public static IEnumerable<Seed> Seeds(IEnumerable<EncodedBlocks> encodings)
    {
        foreach (var e in encodings)
        {
            for (var index = -1; index < e.Parts.Length; index++)
            {
                var block = index < 0 ? e.Final : e.Parts[index];
                yield return new Seed(index < 0 ? $"{e.Name}, final" : $"{e.Name}, part {index}", block, BlockFields, new BlockSeed(e, index));
            }
        }
    }

    /// <summary>The fields every block has: length, CRC, nonce, then a varint (part count or chunk index).</summary>
    public static readonly Field[] BlockFields =
    [
        new(5, 1, FieldKind.UInt, "kind"),
        new(6, 4, FieldKind.UInt, "block length"),
        new(10, 4, FieldKind.UInt, "CRC"),
        new(14, 8, FieldKind.Int, "nonce"),
        new(22, 0, FieldKind.Varint, "part count or chunk index"),
        new(23, 0, FieldKind.Varint, "first part position or stream field"),
    ];

    /// <summary>Recomputes a block's CRC over the length its header claims (clipped to the bytes there), as its format version defines it (<see cref="BlockFormat.Checksum"/>).</summary>
    public static void Reseal(byte[] block)
    {
        if (block.Length < BlockFormat.HeaderSize)
        {
            return;
        }

        var length = (int)Math.Min(BinaryPrimitives.ReadUInt32LittleEndian(block.AsSpan(6)), (uint)block.Length);
        if (length >= BlockFormat.HeaderSize)
        {
            BinaryPrimitives.WriteUInt32LittleEndian(block.AsSpan(10), BlockFormat.Checksum(block.AsSpan(0, length)));
        }
    }

    /// <inheritdoc />
    public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position) =>
        _log.TryGetValue(position, out var blocks)
            ? blocks
            : throw new IntentionFormatException($"log position @{position} holds no intention");

    private void Step(int step)
    {
        var s = Database.PinCurrent();
        var blockSize = step % 3 == 0 ? 256 : 8192;
        var encoded = new List<(Intention, EncodedBlocks)>();
        for (var t = 0; t < 1 + (step % 2); t++)
        {
            var tx = Database.BeginAt(s, (IsolationLevel)(step % 4));
            var ops = step == 0 ? 60 : 1 + _random.Next(6);
            for (var o = 0; o < ops; o++)
            {
                var k = Key(_random.Next(step == 0 ? 60 : 80));
                switch (step == 0 ? 1 : _random.Next(5))
                {
                    case 0:
                        tx.TryGet(k, out _);
                        break;
                    case 1 or 2:
                        tx.Put(k, Payload(blockSize == 256 ? 40 : 8));
                        break;
                    case 3:
                        tx.Delete(k);
                        break;
                    default:
                        tx.Scan(k, Key(_random.Next(80, 100)), 1 + _random.Next(5), []);
                        break;
                }
            }

            if (tx.Complete() is { } i)
            {
                encoded.Add((i, Encode($"step {step}.{t}", IntentionEncoder.Encode(i, blockSize))));
            }
        }

        foreach (var (i, blocks) in encoded)
        {
            Database.Append(i);
            _log[i.Position] = (blocks.Final, blocks.Parts.Select(p => (ReadOnlyMemory<byte>)p).ToArray());
            Database.Meld(i);
        }

        Database.Release(s);
    }

    private EncodedBlocks Encode(string name, EncodedIntention encoded)
    {
        var positions = encoded.Parts.Select(_ => _nextPartPosition++).ToArray();
        var final = encoded.Finish(positions).ToArray();
        var parts = encoded.Parts.Select(p => p.ToArray()).ToArray();
        var nonce = _nonce++;
        foreach (var block in parts.Append(final))
        {
            BinaryPrimitives.WriteInt64LittleEndian(block.AsSpan(BlockFormat.HeaderSize), nonce);
            Reseal(block);
        }

        return new EncodedBlocks(name, final, parts);
    }

    private EncodedBlocks EncodeSelfContained(string name, int blockSize)
    {
        var writer = new CheckpointWriter(Snapshot, CheckpointMetadata, blockSize);
        var parts = writer.Parts().ToArray();
        var first = _nextPartPosition;
        _nextPartPosition += parts.Length;
        var final = writer.Finish(first, first + parts.Length - 1, first - 1);
        var nonce = _nonce++;
        foreach (var block in parts.Append(final))
        {
            BinaryPrimitives.WriteInt64LittleEndian(block.AsSpan(BlockFormat.HeaderSize), nonce);
            Reseal(block);
        }

        return new EncodedBlocks(name, final, parts);
    }

    private static byte[] Key(int k) => System.Text.Encoding.ASCII.GetBytes($"k{k:D6}");

    private byte[] Payload(int length)
    {
        var p = new byte[length];
        _random.NextBytes(p);
        return p;
    }
}
