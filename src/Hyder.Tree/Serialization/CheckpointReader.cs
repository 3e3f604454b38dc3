using System.Runtime.InteropServices;
using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>What the final block of a format-4 checkpoint names.</summary>
/// <param name="Nonce">The value every block of the checkpoint carries.</param>
/// <param name="PartCount">How many part blocks hold its stream.</param>
/// <param name="FirstPart">The log position of its first part.</param>
/// <param name="LastPart">The log position of its last part (every part lies in FirstPart..LastPart, in order).</param>
/// <param name="NeedsFrom">The lowest log position a server starting from it reads: nothing below it is needed.</param>
/// <param name="StateSequence">The sequence of the state it holds.</param>
/// <param name="NodeCount">The nodes of that state.</param>
public readonly record struct CheckpointFinal(long Nonce, int PartCount, long FirstPart, long LastPart, long NeedsFrom, long StateSequence, int NodeCount);

/// <summary>
/// Loads a self-contained checkpoint (format 4, <see cref="CheckpointWriter"/>) from its blocks,
/// streaming: it holds one part and one record at a time besides the nodes it builds. The caller
/// hands it the log's blocks from the first to the last part position, in order; blocks of other
/// writers (and a second copy of a part) are skipped by kind, nonce and chunk index. Faults throw
/// <see cref="IntentionFormatException"/>; nodes rented for a failed load go back to the pool.
/// </summary>
/// <remarks>
/// Checked as it links, as for format 3: reserved bits and kinds; each version at most once; keys
/// non-empty and strictly in order; exact AVL heights; exactly one record left at the end; every
/// part present once and in order, and no bytes after the last record.
/// </remarks>
public static class CheckpointReader
{
    private const string Label = "checkpoint";

    /// <summary>The most bytes one record may claim (a key and a payload with their metadata).</summary>
    private const int MaxRecordBytes = 1 << 26;

    /// <summary>Reads and checks a format-4 final block.</summary>
    public static CheckpointFinal ReadFinal(ReadOnlySpan<byte> finalBlock)
    {
        var header = BlockFormat.Parse(finalBlock, $"{Label}, final block");
        if (header.Kind != BlockKind.Checkpoint || header.Version != BlockFormat.CheckpointVersion)
        {
            throw new IntentionFormatException($"{Label}, final block: a {header.Kind} block of format {header.Version}, expected a checkpoint of format {BlockFormat.CheckpointVersion}");
        }

        var r = new ByteReader(finalBlock[BlockFormat.HeaderSize..header.Length], $"{Label}, final block");
        var nonce = (long)r.U64("nonce");
        var parts = r.Int("part count", int.MaxValue);
        var first = (long)r.Varint("first part position", (ulong)NodeVersion.MaxPosition);
        var last = (long)r.Varint("last part position", (ulong)NodeVersion.MaxPosition);
        var needsFrom = (long)r.Varint("needs-from position", (ulong)NodeVersion.MaxPosition);
        var sequence = (long)r.Varint("state sequence", long.MaxValue);
        var count = r.Int("node count", int.MaxValue);
        r.ExpectEnd();
        if (parts < 1 || last < first || last - first < parts - 1)
        {
            r.Fail($"{parts} parts cannot lie at positions {first}..{last}");
        }

        if ((long)count * CheckpointCodec.MinRecordBytes > (long)parts * BlockFormat.MaxBlockSize)
        {
            r.Fail($"{count} nodes cannot fit {parts} parts");
        }

        return new CheckpointFinal(nonce, parts, first, last, needsFrom, sequence, count);
    }

    /// <summary>Loads the checkpoint's state and returns its root (null for an empty state).</summary>
    /// <param name="finalBlock">The checkpoint's final block.</param>
    /// <param name="blocks">The log's blocks at positions <see cref="CheckpointFinal.FirstPart"/> to <see cref="CheckpointFinal.LastPart"/>, in order (holes and fills left out).</param>
    /// <param name="pool">Where nodes come from.</param>
    /// <param name="metadata">The server's opaque bytes stored with the checkpoint.</param>
    public static Node? Load(ReadOnlySpan<byte> finalBlock, IEnumerable<ReadOnlyMemory<byte>> blocks, NodePool pool, out byte[] metadata)
    {
        ArgumentNullException.ThrowIfNull(blocks);
        ArgumentNullException.ThrowIfNull(pool);
        var final = ReadFinal(finalBlock);
        using var feed = new PartFeed(blocks.GetEnumerator(), final);
        var section = feed.Record("header section");
        var hr = new ByteReader(section, $"{Label}, header section");
        var table = NodeCodec.ReadPositionTable(ref hr);
        metadata = hr.Bytes("metadata");
        if (hr.Int("node count", int.MaxValue) != final.NodeCount)
        {
            hr.Fail("the node count differs from the final block's");
        }

        hr.ExpectEnd();
        var lease = new NodePoolLease(pool);
        try
        {
            var root = Link(feed, final.NodeCount, table, lease);
            feed.ExpectEnd();
            return root;
        }
        catch
        {
            lease.ReturnAll();
            throw;
        }
    }

    private static Node? Link(PartFeed feed, int count, long[] table, NodePoolLease lease)
    {
        // Sized as records arrive, not by the final block's count: a count the bytes cannot back
        // must not allocate (the stream ends first and the load fails).
        var nodes = new List<Node>();
        var minOf = new List<int>();
        var maxOf = new List<int>();
        var stack = new List<int>();
        var depth = 0;
        var versions = new HashSet<NodeVersion>();
        for (var i = 0; i < count; i++)
        {
            var bytes = feed.Record("record");
            var r = new ByteReader(bytes, Label) { ItemKind = "node", Item = i };
            var flags = r.Byte("flags");
            if ((flags & ~(byte)NodeCodec.StoredFlags) != 0)
            {
                r.Fail($"flags {flags:X2} set a reserved bit");
            }

            var shape = r.Byte("shape");
            var vnKind = (byte)(shape & 3);
            if (vnKind < NodeCodec.RefPersistent)
            {
                r.Fail($"version kind {vnKind} (a state node is persistent or ephemeral)");
            }

            NodeCodec.CheckScvKind(ref r, shape);
            var vn = NodeCodec.ReadVersion(ref r, vnKind, table, "version");
            if (!versions.Add(vn))
            {
                r.Fail($"version {vn} is written twice");
            }

            var key = r.Bytes("key");
            if (key.Length == 0)
            {
                r.Fail("empty key");
            }

            var payload = r.Bytes("payload");
            var n = lease.Rent();
            n.Key = key;
            n.Payload = payload;
            n.Vn = vn;
            n.Owner = 0;
            n.Flags = (NodeFlags)flags;
            NodeCodec.ReadMetadata(ref r, shape, table, n);
            r.ExpectEnd();
            nodes.Add(n);
            minOf.Add(i);
            maxOf.Add(i);
            CheckpointCodec.LinkChildren(ref r, n, i, shape, CollectionsMarshal.AsSpan(nodes), CollectionsMarshal.AsSpan(minOf), CollectionsMarshal.AsSpan(maxOf), CollectionsMarshal.AsSpan(stack), ref depth);

            if (depth == stack.Count)
            {
                stack.Add(i);
            }
            else
            {
                stack[depth] = i;
            }

            depth++;
        }

        if (depth > 1)
        {
            throw new IntentionFormatException($"{Label}: {depth - 1} node(s) are not reachable from the root (node {stack[depth - 2]} has no parent)");
        }

        return count == 0 ? null : nodes[count - 1];
    }

    /// <summary>The stream, part by part: the parts of this checkpoint among the blocks given, in chunk order.</summary>
    private sealed class PartFeed(IEnumerator<ReadOnlyMemory<byte>> blocks, CheckpointFinal final) : IDisposable
    {
        private ReadOnlyMemory<byte> _data = ReadOnlyMemory<byte>.Empty;
        private int _next;
        private byte[] _record = new byte[256];

        /// <summary>The next length-prefixed record of the stream (valid until the next call).</summary>
        public ReadOnlySpan<byte> Record(string what)
        {
            ulong length = 0;
            for (var shift = 0; ; shift += 7)
            {
                if (shift > 28)
                {
                    Fail($"the length of a {what} is not a valid varint");
                }

                var b = NextByte(what);
                length |= (ulong)(b & 0x7F) << shift;
                if (b < 0x80)
                {
                    break;
                }
            }

            if (length > MaxRecordBytes)
            {
                Fail($"a {what} of {length} bytes is longer than {MaxRecordBytes}");
            }

            var n = (int)length;
            if (_record.Length < n)
            {
                _record = new byte[Math.Max(n, _record.Length * 2)];
            }

            var at = 0;
            while (at < n)
            {
                if (_data.IsEmpty)
                {
                    NextPart(what);
                }

                var take = Math.Min(n - at, _data.Length);
                _data.Span[..take].CopyTo(_record.AsSpan(at));
                _data = _data[take..];
                at += take;
            }

            return _record.AsSpan(0, n);
        }

        public void ExpectEnd()
        {
            if (!_data.IsEmpty || _next != final.PartCount)
            {
                Fail($"{_data.Length} bytes and {final.PartCount - _next} part(s) are left after the last record");
            }
        }

        private byte NextByte(string what)
        {
            while (_data.IsEmpty)
            {
                NextPart(what);
            }

            var b = _data.Span[0];
            _data = _data[1..];
            return b;
        }

        private void NextPart(string what)
        {
            if (_next == final.PartCount)
            {
                Fail($"the stream ends inside a {what} after all {final.PartCount} parts");
            }

            while (blocks.MoveNext())
            {
                var block = blocks.Current;
                if (!BlockHeader.TryParse(block.Span, out var header, out _) || header.Kind != BlockKind.CheckpointPart || header.Version != BlockFormat.CheckpointVersion)
                {
                    continue;
                }

                var r = new ByteReader(block.Span[BlockFormat.HeaderSize..header.Length], $"{Label}, part {_next}");
                if (r.Remaining < 9 || (long)r.U64("nonce") != final.Nonce)
                {
                    continue;
                }

                var index = r.Varint("chunk index", int.MaxValue);
                if (index < (ulong)_next)
                {
                    // A second copy of a part already read (a retried append).
                    continue;
                }

                if (index > (ulong)_next)
                {
                    Fail($"part {index} comes before part {_next} (missing or reordered)");
                }

                _data = block[(BlockFormat.HeaderSize + r.Position)..header.Length];
                _next++;
                return;
            }

            Fail($"the log holds {_next} of its {final.PartCount} parts between positions {final.FirstPart} and {final.LastPart}");
        }

        private static void Fail(string what) => throw new IntentionFormatException($"{Label}: {what}");

        public void Dispose() => blocks.Dispose();
    }
}
