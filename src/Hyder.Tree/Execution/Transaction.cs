using Hyder.Tree.Commutative;
using Hyder.Tree.Memory;

namespace Hyder.Tree;

/// <summary>
/// A transaction running on an immutable snapshot. Its working tree starts as the snapshot's root
/// and grows by copy-on-write into the intention (meld paper Appendix E): writes copy the path to
/// the root; at serializable and repeatable read, reads copy their path too and mark the node read.
/// </summary>
/// <remarks>
/// Single-threaded: one transaction belongs to one executor thread, and allocates from that
/// thread's pool. <see cref="Complete"/> hands the intention over (or nothing, when read-only);
/// <see cref="Dispose"/> without completing throws the work away.
/// </remarks>
public sealed partial class Transaction : IDisposable
{
    private static long s_nextToken;

    private Database _database;
    private NodePool _pool;
    private long _token;
    private Node? _root;
    private List<DeleteEntry>? _deletes;
    private List<KeyRange>? _ranges;
    private List<CreatedKey>? _created;
    private bool _wrote;
    private bool _hasOperations;
    private bool _finished;

    // The nodes this transaction made (the first MaxMadeNodes), for the validator's prefetch
    // (Intention.MadeNodes); the array stays with the pooled transaction and is reused.
    private const int MaxMadeNodes = 4096;

    private Node[]? _made;
    private int _madeCount;

    internal Transaction(Database database, DatabaseState snapshot, IsolationLevel isolation, NodePool pool)
    {
        _database = database;
        _pool = pool;
        Snapshot = snapshot;
        Start(database, snapshot, isolation, pool);
    }

    /// <summary>Starts (or, pooled, restarts) the transaction on <paramref name="snapshot"/>, which it holds a pin of.</summary>
    private void Start(Database database, DatabaseState snapshot, IsolationLevel isolation, NodePool pool)
    {
        _database = database;
        Snapshot = snapshot;
        Isolation = isolation;
        _pool = pool;
        _root = snapshot.Root;
        _token = NextToken();
        _wrote = false;
        _hasOperations = false;
        _finished = false;
        _recycled = false;
        if (_made is not null)
        {
            Array.Clear(_made, 0, _madeCount);
        }

        _madeCount = 0;
        CommutativeMode = default;
    }

    /// <summary>A fresh executor token (negative, never reused in this process): marks an unsealed intention's nodes.</summary>
    internal static long NextToken() => Interlocked.Decrement(ref s_nextToken);

    /// <summary>The state the transaction reads.</summary>
    public DatabaseState Snapshot { get; private set; }

    /// <summary>The transaction's isolation level.</summary>
    public IsolationLevel Isolation { get; private set; }

    /// <summary>True once the transaction changed something (it will produce an intention).</summary>
    public bool HasWrites => _wrote;

    /// <summary>
    /// How <see cref="Add"/>, <see cref="Max"/>, <see cref="Min"/>, <see cref="OPut"/> and
    /// <see cref="TopKInsert"/> run from now on: as operations meld applies (the default), or as
    /// ordinary read-modify-writes (the module off, docs/doppel.md).
    /// </summary>
    public CommutativeMode CommutativeMode { get; set; }

    private bool TracksReads => Isolation is IsolationLevel.Serializable or IsolationLevel.RepeatableRead;

    /// <summary>
    /// Finishes execution: the intention to append, or null for a read-only transaction, which
    /// commits on its snapshot and never reaches the log.
    /// </summary>
    public Intention? Complete()
    {
        EnsureRunning();
        _finished = true;
        if (!_wrote)
        {
            ReleaseNodes(_root);
            _database.Release(Snapshot);
            return null;
        }

        List<KeyRange>? rootRanges = null;
        if (_ranges is not null)
        {
            foreach (var range in _ranges)
            {
                if (!AttachRange(range))
                {
                    (rootRanges ??= []).Add(range);
                }
            }
        }

        var deletes = _deletes is null ? [] : _deletes.ToArray();
        return new Intention(_root, Snapshot, Isolation, deletes, rootRanges is null ? [] : rootRanges.ToArray(), 0)
        {
            ExecutorToken = _token,
            HasOperations = _hasOperations,
            MadeNodes = _made.AsMemory(0, _madeCount),
        };
    }

    /// <summary>Throws the transaction's work away (a rollback) unless it completed.</summary>
    public void Dispose()
    {
        if (_finished)
        {
            return;
        }

        _finished = true;
        ReleaseNodes(_root);
        _root = null;
        _database.Release(Snapshot);
    }

    private void EnsureRunning()
    {
        if (_finished)
        {
            ThrowHelper.ThrowInvalidOperation("the transaction has already completed or been disposed");
        }
    }

    /// <summary>This transaction's own copy of <paramref name="s"/> (copy-on-write).</summary>
    private Node Own(Node s)
    {
        if (s.Owner == _token)
        {
            return s;
        }

        var n = Make();
        n.CopyKeyOf(s);
        n.CopyPayloadOf(s);
        n.Left = s.Left;
        n.Right = s.Right;
        n.Height = s.Height;
        n.Scv = s.Ncv;
        n.Ssv = s.Nsv;
        n.Flags = NodeFlags.SubtreeIsOnlyReadDependent;
        n.Owner = _token;
        n.Source = s;
        return n;
    }

    /// <summary>A node from the pool, remembered for <see cref="Intention.MadeNodes"/>.</summary>
    private Node Make()
    {
        var n = _pool.Rent();
        _made ??= new Node[256];
        if (_madeCount == _made.Length && _made.Length < MaxMadeNodes)
        {
            Array.Resize(ref _made, _made.Length * 2);
        }

        if (_madeCount < _made.Length)
        {
            _made[_madeCount++] = n;
        }

        return n;
    }

    /// <summary>Returns this transaction's own nodes to the pool.</summary>
    private void ReleaseNodes(Node? n)
    {
        if (n is null || n.Owner != _token)
        {
            return;
        }

        var l = n.Left;
        var r = n.Right;
        _pool.Return(n);
        ReleaseNodes(l);
        ReleaseNodes(r);
    }

    /// <summary>
    /// Marks a scanned range on its lowest common ancestor in the working tree (copying the path),
    /// so meld checks the range where the trees meet. False when the tree is empty.
    /// </summary>
    private bool AttachRange(in KeyRange range)
    {
        ref var slot = ref _root;
        Node? last = null;
        while (slot is not null)
        {
            var n = Own(slot);
            slot = n;
            last = n;
            if (range.Contains(n.Key))
            {
                break;
            }

            slot = ref !range.BelowHigh(n.Key) ? ref n.Left : ref n.Right;
        }

        if (last is null)
        {
            return false;
        }

        var ranges = last.DependencyRanges;
        if (ranges is null)
        {
            last.DependencyRanges = [range];
        }
        else
        {
            Array.Resize(ref ranges, ranges.Length + 1);
            ranges[^1] = range;
            last.DependencyRanges = ranges;
        }

        last.Flags |= NodeFlags.DependsOnTree;

        return true;
    }
}
