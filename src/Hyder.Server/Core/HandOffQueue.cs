using Hyder.Tree.Pipeline;

namespace Hyder.Server.Core;

/// <summary>
/// A bounded single-producer, single-consumer queue between two of the server's threads (the
/// reader and the submitter, the reader and a deserializer): a ring and two
/// <see cref="StageSignal"/>s, so both sides spin a few rounds and then block (DESIGN §6) — unlike
/// <c>BlockingCollection</c>, whose semaphore spins and yields the core in a loop first.
/// </summary>
internal sealed class HandOffQueue<T>
    where T : class
{
    private readonly T?[] _items;
    private readonly StageSignal _notEmpty = new();
    private readonly StageSignal _notFull = new();
    private long _head;
    private long _tail;
    private volatile bool _completed;

    public HandOffQueue(int capacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 1);
        _items = new T?[capacity];
    }

    /// <summary>The producer: adds <paramref name="item"/>, waiting while the queue is full.</summary>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled while the queue was full.</exception>
    public void Add(T item, CancellationToken cancellationToken)
    {
        var tail = _tail;
        var wait = default(StageWait);
        while (true)
        {
            var seen = _notFull.Version;
            if (tail - Volatile.Read(ref _head) < _items.Length)
            {
                break;
            }

            cancellationToken.ThrowIfCancellationRequested();
            wait.Once(_notFull, seen);
        }

        _items[tail % _items.Length] = item;
        Volatile.Write(ref _tail, tail + 1);
        _notEmpty.Signal();
    }

    /// <summary>The consumer: the next item, waiting while the queue is empty; false once it is empty and complete.</summary>
    public bool TryTake(out T item)
    {
        var head = _head;
        var wait = default(StageWait);
        while (true)
        {
            var seen = _notEmpty.Version;
            var completed = _completed;
            if (head < Volatile.Read(ref _tail))
            {
                var slot = head % _items.Length;
                item = _items[slot]!;
                _items[slot] = null;
                Volatile.Write(ref _head, head + 1);
                _notFull.Signal();
                return true;
            }

            if (completed)
            {
                item = null!;
                return false;
            }

            wait.Once(_notEmpty, seen);
        }
    }

    /// <summary>The producer adds no more: the consumer drains what is there, then <see cref="TryTake"/> returns false.</summary>
    public void CompleteAdding()
    {
        _completed = true;
        _notEmpty.Signal();
    }
}
