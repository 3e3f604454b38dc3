using System.Diagnostics;
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

        // The enumerator answers synchronously, so the shared loader completes without waiting.
        var load = LoadCoreAsync(final, new SyncBlocks(blocks.GetEnumerator()), pool);
        Debug.Assert(load.IsCompleted, "a load over synchronous blocks completes synchronously");
        (var root, metadata) = load.GetAwaiter().GetResult();
        return root;
    }

    /// <summary>
    /// Loads the checkpoint's state from blocks that arrive asynchronously (read from the log one
    /// at a time), holding one part and one record at a time besides the nodes it builds; the
    /// caller's thread is never blocked on a read (a cooperative server loads on its only thread).
    /// </summary>
    /// <param name="finalBlock">The checkpoint's final block.</param>
    /// <param name="blocks">The log's blocks at positions <see cref="CheckpointFinal.FirstPart"/> to <see cref="CheckpointFinal.LastPart"/>, in order (holes and fills left out).</param>
    /// <param name="pool">Where nodes come from.</param>
    /// <param name="cancellationToken">Stops the enumeration of <paramref name="blocks"/>.</param>
    /// <returns>The root (null for an empty state) and the server's opaque bytes stored with the checkpoint.</returns>
    public static async Task<(Node? Root, byte[] Metadata)> LoadAsync(ReadOnlyMemory<byte> finalBlock, IAsyncEnumerable<ReadOnlyMemory<byte>> blocks, NodePool pool, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(blocks);
        ArgumentNullException.ThrowIfNull(pool);
        var final = ReadFinal(finalBlock.Span);
        return await LoadCoreAsync(final, blocks.GetAsyncEnumerator(cancellationToken), pool).ConfigureAwait(false);
    }

    private static async ValueTask<(Node? Root, byte[] Metadata)> LoadCoreAsync(CheckpointFinal final, IAsyncEnumerator<ReadOnlyMemory<byte>> blocks, NodePool pool)
    {
        await using var feed = new PartFeed(blocks, final);
        var (table, metadata) = ReadHeaderSection(await feed.RecordAsync("header section").ConfigureAwait(false), final);
        var lease = new NodePoolLease(pool);
        try
        {
            var linker = new Linker(table, lease);
            for (var i = 0; i < final.NodeCount; i++)
            {
                linker.Add((await feed.RecordAsync("record").ConfigureAwait(false)).Span, i);
            }

            var root = linker.Root(final.NodeCount);
            feed.ExpectEnd();
            return (root, metadata);
        }
        catch
        {
            lease.ReturnAll();
            throw;
        }
    }

    private static (long[] Table, byte[] Metadata) ReadHeaderSection(ReadOnlyMemory<byte> section, CheckpointFinal final)
    {
        var hr = new ByteReader(section.Span, $"{Label}, header section");
        var table = NodeCodec.ReadPositionTable(ref hr);
        var metadata = hr.Bytes("metadata");
        if (hr.Int("node count", int.MaxValue) != final.NodeCount)
        {
            hr.Fail("the node count differs from the final block's");
        }

        hr.ExpectEnd();
        return (table, metadata);
    }

    /// <summary>Links the records into the tree as they arrive (post order: children before their parent).</summary>
    private sealed class Linker(long[] table, NodePoolLease lease)
    {
        // Sized as records arrive, not by the final block's count: a count the bytes cannot back
        // must not allocate (the stream ends first and the load fails).
        private readonly List<Node> _nodes = [];
        private readonly List<int> _minOf = [];
        private readonly List<int> _maxOf = [];
        private readonly List<int> _stack = [];
        private readonly HashSet<NodeVersion> _versions = [];
        private int _depth;

        public void Add(ReadOnlySpan<byte> bytes, int i)
        {
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
            if (!_versions.Add(vn))
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
            _nodes.Add(n);
            _minOf.Add(i);
            _maxOf.Add(i);
            CheckpointCodec.LinkChildren(ref r, n, i, shape, CollectionsMarshal.AsSpan(_nodes), CollectionsMarshal.AsSpan(_minOf), CollectionsMarshal.AsSpan(_maxOf), CollectionsMarshal.AsSpan(_stack), ref _depth);

            if (_depth == _stack.Count)
            {
                _stack.Add(i);
            }
            else
            {
                _stack[_depth] = i;
            }

            _depth++;
        }

        public Node? Root(int count)
        {
            if (_depth > 1)
            {
                throw new IntentionFormatException($"{Label}: {_depth - 1} node(s) are not reachable from the root (node {_stack[_depth - 2]} has no parent)");
            }

            return count == 0 ? null : _nodes[count - 1];
        }
    }

    /// <summary>Synchronous blocks as an asynchronous enumerator that always answers at once.</summary>
    private sealed class SyncBlocks(IEnumerator<ReadOnlyMemory<byte>> inner) : IAsyncEnumerator<ReadOnlyMemory<byte>>
    {
        public ReadOnlyMemory<byte> Current => inner.Current;

        public ValueTask<bool> MoveNextAsync() => ValueTask.FromResult(inner.MoveNext());

        public ValueTask DisposeAsync()
        {
            inner.Dispose();
            return ValueTask.CompletedTask;
        }
    }

    /// <summary>The stream, part by part: the parts of this checkpoint among the blocks given, in chunk order.</summary>
    private sealed class PartFeed(IAsyncEnumerator<ReadOnlyMemory<byte>> blocks, CheckpointFinal final) : IAsyncDisposable
    {
        private ReadOnlyMemory<byte> _data = ReadOnlyMemory<byte>.Empty;
        private int _next;
        private byte[] _record = new byte[256];

        /// <summary>The next length-prefixed record of the stream (valid until the next call).</summary>
        public async ValueTask<ReadOnlyMemory<byte>> RecordAsync(string what)
        {
            ulong length = 0;
            for (var shift = 0; ; shift += 7)
            {
                if (shift > 28)
                {
                    Fail($"the length of a {what} is not a valid varint");
                }

                while (_data.IsEmpty)
                {
                    await NextPartAsync(what).ConfigureAwait(false);
                }

                var b = _data.Span[0];
                _data = _data[1..];
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
                    await NextPartAsync(what).ConfigureAwait(false);
                }

                var take = Math.Min(n - at, _data.Length);
                _data.Span[..take].CopyTo(_record.AsSpan(at));
                _data = _data[take..];
                at += take;
            }

            return _record.AsMemory(0, n);
        }

        public void ExpectEnd()
        {
            if (!_data.IsEmpty || _next != final.PartCount)
            {
                Fail($"{_data.Length} bytes and {final.PartCount - _next} part(s) are left after the last record");
            }
        }

        private async ValueTask NextPartAsync(string what)
        {
            if (_next == final.PartCount)
            {
                Fail($"the stream ends inside a {what} after all {final.PartCount} parts");
            }

            while (await blocks.MoveNextAsync().ConfigureAwait(false))
            {
                var block = blocks.Current;
                if (!BlockHeader.TryParse(block.Span, out var header, out _) || header.Kind != BlockKind.CheckpointPart || header.Version != BlockFormat.CheckpointVersion)
                {
                    continue;
                }

                if (!TryReadPartHeader(block.Span[BlockFormat.HeaderSize..header.Length], _next, final.Nonce, out var index, out var bodyAt))
                {
                    continue;
                }

                if (index < (ulong)_next)
                {
                    // A second copy of a part already read (a retried append).
                    continue;
                }

                if (index > (ulong)_next)
                {
                    Fail($"part {index} comes before part {_next} (missing or reordered)");
                }

                _data = block[(BlockFormat.HeaderSize + bodyAt)..header.Length];
                _next++;
                return;
            }

            Fail($"the log holds {_next} of its {final.PartCount} parts between positions {final.FirstPart} and {final.LastPart}");
        }

        /// <summary>A part's nonce and chunk index (false: another writer's block).</summary>
        private static bool TryReadPartHeader(ReadOnlySpan<byte> body, int next, long nonce, out ulong index, out int bodyAt)
        {
            var r = new ByteReader(body, $"{Label}, part {next}");
            index = 0;
            bodyAt = 0;
            if (r.Remaining < 9 || (long)r.U64("nonce") != nonce)
            {
                return false;
            }

            index = r.Varint("chunk index", int.MaxValue);
            bodyAt = r.Position;
            return true;
        }

        private static void Fail(string what) => throw new IntentionFormatException($"{Label}: {what}");

        public ValueTask DisposeAsync() => blocks.DisposeAsync();
    }
}
