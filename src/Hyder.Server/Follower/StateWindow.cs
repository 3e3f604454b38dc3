using Hyder.Tree;

namespace Hyder.Server.Follower;

/// <summary>
/// The committed states a server keeps so that intentions from other servers can be decoded
/// against the snapshot they ran on: every state whose sequence is within W of final meld's
/// progress, each pinned. Final meld adds states; deserializers look them up by sequence.
/// </summary>
/// <remarks>
/// A lookup pins the state for its caller under the lock that eviction also takes, so a state is
/// never reclaimed (or its object reused) between finding and pinning it.
/// </remarks>
internal sealed class StateWindow
{
    private readonly Database _database;
    private readonly int _window;
    private readonly Queue<DatabaseState> _states = new();
    private readonly Dictionary<long, DatabaseState> _bySequence = [];
    private readonly Lock _lock = new();
    private long _newest = -1;
    private long _oldest = long.MaxValue;

    public StateWindow(Database database, int window)
    {
        _database = database;
        _window = window;
    }

    /// <summary>The newest sequence added.</summary>
    public long Newest => Volatile.Read(ref _newest);

    /// <summary>States held.</summary>
    public int Count
    {
        get
        {
            lock (_lock)
            {
                return _states.Count;
            }
        }
    }

    /// <summary>
    /// Final meld's thread, after ordinal <paramref name="ordinal"/>: keeps the current state if
    /// it is new, and lets go of states more than W behind.
    /// </summary>
    public void Advance(long ordinal, DatabaseState current)
    {
        // Most ordinals change nothing here (an abort, or the window not yet full): no lock.
        if (current.Sequence <= _newest && _oldest >= ordinal - _window - 1)
        {
            return;
        }

        lock (_lock)
        {
            if (current.Sequence > _newest)
            {
                var pinned = _database.PinCurrent();
                _states.Enqueue(pinned);
                _bySequence[pinned.Sequence] = pinned;
                Volatile.Write(ref _newest, pinned.Sequence);
            }

            while (_states.Count > 1 && _states.Peek().Sequence < ordinal - _window - 1)
            {
                var old = _states.Dequeue();
                _bySequence.Remove(old.Sequence);
                _database.Release(old);
            }

            _oldest = _states.Peek().Sequence;
        }
    }

    /// <summary>The state of sequence <paramref name="sequence"/>, pinned for the caller, or null if the window does not hold it.</summary>
    public DatabaseState? TryPin(long sequence)
    {
        lock (_lock)
        {
            if (!_bySequence.TryGetValue(sequence, out var s))
            {
                return null;
            }

            s.AddPin();
            return s;
        }
    }

    /// <summary>Releases every state.</summary>
    public void Clear()
    {
        lock (_lock)
        {
            while (_states.TryDequeue(out var s))
            {
                _database.Release(s);
            }

            _bySequence.Clear();
        }
    }
}
