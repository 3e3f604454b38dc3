using Hyder.Tree.Memory;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>The shape of one run of <see cref="PipelineLog"/>.</summary>
/// <param name="Seed">Drives every random choice.</param>
/// <param name="KeySpace">Distinct keys.</param>
/// <param name="InitialKeys">Keys bulk-loaded (through the codec, as intention #1).</param>
/// <param name="Transactions">Transactions run through the pipeline.</param>
/// <param name="MaxLag">Largest snapshot lag, in batches (the conflict zone).</param>
/// <param name="Options">Premeld t and d, group meld.</param>
/// <param name="Threaded">Run the threaded pipeline instead of the reference one.</param>
/// <param name="CommutativePercent">Share of commutative operations in the random transactions (0: none).</param>
public sealed record PipelineLogConfig(int Seed, int KeySpace, int InitialKeys, int Transactions, int MaxLag, PipelineOptions Options, bool Threaded, int CommutativePercent = 0);

/// <summary>
/// A server's log in memory: every intention goes through <see cref="IntentionEncoder"/>, its
/// blocks are appended at increasing positions, and it is sealed at the position of its final
/// block (<see cref="Intention.Seal"/>: this branch's <see cref="Database"/> has no positioned
/// append), then run through a reference or threaded pipeline.
/// </summary>
internal sealed class PipelineLog : IPersistentNodeSource, IDisposable
{
    private readonly Random _random;
    private readonly PipelineLogConfig _config;
    private readonly ReferencePipeline? _reference;
    private readonly ThreadedPipeline? _threaded;
    private readonly List<DatabaseState> _window = [];
    private long _nextPosition = 1_000;
    private long _lastOrdinal;

    public PipelineLog(PipelineLogConfig config, int payloadBytes = 8)
    {
        _config = config;
        _random = new Random(config.Seed);
        PayloadBytes = payloadBytes;
        var keys = Enumerable.Range(0, config.KeySpace).OrderBy(_ => _random.Next()).Take(config.InitialKeys).Order()
            .Select(k => new KeyValuePair<byte[], byte[]>(Key(k), Payload())).ToList();
        if (config.Threaded)
        {
            _threaded = new ThreadedPipeline(Database, config.Options, window: 64);
        }
        else
        {
            _reference = new ReferencePipeline(Database, config.Options);
        }

        _window.Add(Database.PinCurrent());
        if (keys.Count > 0)
        {
            // The bulk load is intention #1, through the codec and the pipeline like any other.
            var tx = Database.BeginAt(_window[0], IsolationLevel.SnapshotIsolation, Database.MeldPool);
            tx.LoadSorted(keys);
            Submit(Append(tx.Complete()!));
            Settle();
        }
    }

    public Database Database { get; } = new();

    public int PayloadBytes { get; }

    /// <summary>Every intention's blocks by the position of its final block.</summary>
    public Dictionary<long, (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts)> Log { get; } = [];

    public int Reads { get; private set; }

    public int Intentions { get; private set; }

    /// <summary>Intentions (or groups) premeld ran on.</summary>
    public long Premelded => _reference?.Premelded ?? _threaded!.PremeldOperators.Sum(p => p.Counters.Melds);

    /// <summary>Pairs group meld ran on.</summary>
    public long Groups => _reference?.Groups ?? _threaded?.GroupOperator?.Counters.Melds ?? 0;

    public static byte[] Key(int k) => System.Text.Encoding.ASCII.GetBytes($"k{k:D7}");

    public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position)
    {
        Reads++;

        // A real log answers a read of a position that holds no intention with an error of its own.
        return Log.TryGetValue(position, out var blocks) ? blocks : throw new IntentionFormatException($"no intention at position {position}");
    }

    /// <summary>Runs a batch of up to <paramref name="concurrency"/> transactions on random recent snapshots and waits until they are decided.</summary>
    public void Batch(int concurrency, int maxOps)
    {
        for (var j = 0; j < concurrency; j++)
        {
            var snapshot = _window[_window.Count - 1 - _random.Next(_window.Count)];
            var tx = Database.BeginAt(snapshot, (IsolationLevel)_random.Next(4));
            RandomWork(tx, maxOps);
            if (tx.Complete() is { } intention)
            {
                Submit(Append(intention));
            }
        }

        Settle();
    }

    /// <summary>Waits until every intention submitted is decided (with group meld, a lone first part gets a partner).</summary>
    public void Settle()
    {
        if (_config.Options.GroupMeld && _lastOrdinal % 2 == 1)
        {
            var tx = Database.BeginAt(_window[^1], IsolationLevel.ReadCommitted);
            tx.Put(Key(_random.Next(_config.KeySpace)), Payload());
            Submit(Append(tx.Complete()!));
        }

        _threaded?.WaitFor(_lastOrdinal);
        if (_window[^1] != Database.Current)
        {
            _window.Add(Database.PinCurrent());
            if (_window.Count > _config.MaxLag + 1)
            {
                Database.Release(_window[0]);
                _window.RemoveAt(0);
            }
        }
    }

    public byte[] Payload()
    {
        var p = new byte[PayloadBytes];
        _random.NextBytes(p);
        return p;
    }

    /// <summary>
    /// Persistent nodes of <paramref name="root"/> whose metadata differs from what checkpoint
    /// format 1 derived from their intention's log image (flags, SSV, SCV, height, ranges or a
    /// child): the nodes a format-1 checkpoint would have loaded wrong.
    /// </summary>
    public int RewrittenPersistentNodes(Node? root)
    {
        var images = new Dictionary<long, IntentionImage>();
        var pool = new NodePool(1024);
        var rewritten = 0;
        foreach (var n in IntentionEncoder.PostOrder(root, OwnerRange.All))
        {
            if (!n.Vn.IsPersistent)
            {
                continue;
            }

            if (!images.TryGetValue(n.Vn.Position, out var image))
            {
                var (final, parts) = Log[n.Vn.Position];
                images[n.Vn.Position] = image = IntentionDecoder.DecodeImage(final.Span, parts, pool);
            }

            var i = n.Vn.Index;
            var logged = image.Nodes[i];
            var leftInside = LoggedChild(image, n.Vn.Position, image.LeftIndex(i), image.LeftVersion(i));
            var rightInside = LoggedChild(image, n.Vn.Position, image.RightIndex(i), image.RightVersion(i));
            if (logged.Flags != (n.Flags & NodeCodec.StoredFlags) || logged.Ssv != n.Ssv || logged.Scv != n.Scv || logged.Height != n.Height
                || (logged.DependencyRanges?.Length ?? 0) != (n.DependencyRanges?.Length ?? 0)
                || leftInside != (n.Left?.Vn ?? default) || rightInside != (n.Right?.Vn ?? default))
            {
                rewritten++;
            }
        }

        return rewritten;
    }

    /// <summary>The child format 1 derived from the log: a read-only copy stands for the node it was copied from (its SSV).</summary>
    private static NodeVersion LoggedChild(IntentionImage image, long position, int index, NodeVersion outside) =>
        index < 0 ? outside : image.Nodes[index].SubtreeIsOnlyReadDependent ? image.Nodes[index].Ssv : NodeVersion.Persistent(position, index);

    public void Dispose()
    {
        _threaded?.Dispose();
        _reference?.ReleaseAll();
        foreach (var s in _window)
        {
            Database.Release(s);
        }

        _window.Clear();
    }

    /// <summary>Encodes the intention, appends its blocks (parts first, the final block last) and seals it at the final block's position.</summary>
    private Intention Append(Intention intention)
    {
        var encoded = IntentionEncoder.Encode(intention);
        var parts = encoded.Parts.Select(_ => _nextPosition++).ToArray();
        var position = _nextPosition++;
        Log[position] = (encoded.Finish(parts), encoded.Parts);
        intention.Seal(++_lastOrdinal, position);
        Intentions++;
        return intention;
    }

    private void Submit(Intention intention)
    {
        if (_threaded is not null)
        {
            _threaded.Submit(intention);
            return;
        }

        _reference!.Process(intention);
    }

    private void RandomWork(Transaction tx, int maxOps)
    {
        // One write first, so every transaction reaches the log (and pairs stay predictable).
        tx.Put(Key(_random.Next(_config.KeySpace)), Payload());
        RandomOperations.Run(tx, _random, _random.Next(maxOps), _config.KeySpace, Key, Payload, _config.CommutativePercent);
    }
}
