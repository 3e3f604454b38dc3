using System.Buffers.Binary;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Targets;

internal sealed partial class MemoryReferenceTarget
{
    private sealed partial class Session
    {
        /// <summary>Commit number a read saw; -1 for a key that did not exist.</summary>
        private readonly Dictionary<(string Space, byte[] Key), long> _reads = new(KeyComparer.Instance);

        /// <summary>Buffered writes: a value, null for a delete, or a counter delta.</summary>
        private readonly Dictionary<(string Space, byte[] Key), Write> _writes = new(KeyComparer.Instance);

        private readonly List<(string Space, byte[] Start, int Limit, List<(byte[] Key, long Commit)> Seen)> _scans = [];
        private IsolationLevel _isolation;
        private long _begin;
        private bool _open;

        public ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken)
        {
            Reset();
            _isolation = isolation;
            _open = true;
            lock (target._lock)
            {
                _begin = target._commits;
            }

            return ValueTask.CompletedTask;
        }

        public ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var k = key.ToArray();
            if (_writes.TryGetValue((space.Name, k), out var write))
            {
                return ValueTask.FromResult(write.Value is not null || write.IsDelta);
            }

            return ValueTask.FromResult(ReadCommitted(space, k, out _));
        }

        public ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var k = key.ToArray();
            if (_writes.TryGetValue((space.Name, k), out var write))
            {
                if (write.IsDelta)
                {
                    ReadCommitted(space, k, out var committed);
                    return ValueTask.FromResult<long?>((committed is null ? 0 : BinaryPrimitives.ReadInt64LittleEndian(committed)) + write.Delta);
                }

                return ValueTask.FromResult<long?>(write.Value is null ? null : BinaryPrimitives.ReadInt64LittleEndian(write.Value));
            }

            return ValueTask.FromResult<long?>(ReadCommitted(space, k, out var value) ? BinaryPrimitives.ReadInt64LittleEndian(value) : null);
        }

        public ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken)
        {
            _writes[(space.Name, key.ToArray())] = new Write(value.ToArray(), 0);
            return ValueTask.CompletedTask;
        }

        public ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken)
        {
            var k = key.ToArray();
            var exists = _writes.TryGetValue((space.Name, k), out var write) ? write.Value is not null || write.IsDelta : ReadCommitted(space, k, out _);
            if (!exists)
            {
                _writes[(space.Name, k)] = new Write(value.ToArray(), 0);
            }

            return ValueTask.FromResult(!exists);
        }

        public ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var k = key.ToArray();
            var existed = _writes.TryGetValue((space.Name, k), out var write) ? write.Value is not null || write.IsDelta : ReadCommitted(space, k, out _);
            _writes[(space.Name, k)] = new Write(null, 0);
            return ValueTask.FromResult(existed);
        }

        public ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken)
        {
            var start = startKey.ToArray();
            var seen = new List<(byte[] Key, long Commit)>(limit);
            lock (target._lock)
            {
                foreach (var (key, entry) in target.Table(space))
                {
                    if (ByteKeyComparer.Instance.Compare(key, start) < 0)
                    {
                        continue;
                    }

                    if (seen.Count == limit)
                    {
                        break;
                    }

                    seen.Add((key, entry.Commit));
                }
            }

            foreach (var (key, commit) in seen)
            {
                _reads.TryAdd((space.Name, key), commit);
            }

            _scans.Add((space.Name, start, limit, seen));
            return ValueTask.FromResult(seen.Count);
        }

        public ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken)
        {
            var k = key.ToArray();
            if (_writes.TryGetValue((space.Name, k), out var write))
            {
                _writes[(space.Name, k)] = write.Value is null && !write.IsDelta
                    ? new Write(Counter(delta), 0)
                    : write.IsDelta ? write with { Delta = write.Delta + delta } : new Write(Counter(BinaryPrimitives.ReadInt64LittleEndian(write.Value) + delta), 0);
            }
            else
            {
                ReadCommitted(space, k, out _);
                _writes[(space.Name, k)] = new Write(null, delta, IsDelta: true);
            }

            return ValueTask.CompletedTask;
        }

        public ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken)
        {
            if (!_open)
            {
                throw new InvalidOperationException("No transaction is open.");
            }

            CommitOutcome outcome;
            lock (target._lock)
            {
                outcome = Validate();
                if (outcome.Committed)
                {
                    Apply(++target._commits);
                }
            }

            Reset();
            return ValueTask.FromResult(outcome);
        }

        public ValueTask RollbackAsync(CancellationToken cancellationToken)
        {
            Reset();
            return ValueTask.CompletedTask;
        }

        private bool ReadCommitted(KeySpace space, byte[] key, out byte[]? value)
        {
            long commit;
            lock (target._lock)
            {
                var found = target.Table(space).TryGetValue(key, out var entry);
                value = entry?.Value;
                commit = found ? entry!.Commit : -1;
            }

            _reads.TryAdd((space.Name, key), commit);
            return value is not null;
        }

        /// <summary>Runs under the target's lock.</summary>
        private CommitOutcome Validate()
        {
            if (_isolation is IsolationLevel.Serializable or IsolationLevel.RepeatableRead)
            {
                foreach (var ((space, key), commit) in _reads)
                {
                    if (CurrentCommit(space, key) != commit)
                    {
                        return CommitOutcome.Aborted(AbortCause.Serialization);
                    }
                }
            }

            if (_isolation == IsolationLevel.Serializable)
            {
                foreach (var (space, start, limit, seen) in _scans)
                {
                    var i = 0;
                    foreach (var (key, entry) in target._tables[space])
                    {
                        if (ByteKeyComparer.Instance.Compare(key, start) < 0)
                        {
                            continue;
                        }

                        if (i == limit)
                        {
                            break;
                        }

                        if (i >= seen.Count || !ByteKeyComparer.Instance.Equals(seen[i].Key, key) || seen[i].Commit != entry.Commit)
                        {
                            return CommitOutcome.Aborted(AbortCause.Serialization);
                        }

                        i++;
                    }

                    if (i != seen.Count)
                    {
                        return CommitOutcome.Aborted(AbortCause.Serialization);
                    }
                }
            }

            if (_isolation == IsolationLevel.Snapshot)
            {
                foreach (var (space, key) in _writes.Keys)
                {
                    if (CurrentCommit(space, key) > _begin)
                    {
                        return CommitOutcome.Aborted(AbortCause.WriteConflict);
                    }
                }
            }

            return CommitOutcome.Success;
        }

        private long CurrentCommit(string space, byte[] key) =>
            target._tables[space].TryGetValue(key, out var entry) ? entry.Commit : -1;

        /// <summary>Runs under the target's lock.</summary>
        private void Apply(long commit)
        {
            foreach (var ((space, key), write) in _writes)
            {
                var table = target._tables[space];
                if (write.IsDelta)
                {
                    var current = table.TryGetValue(key, out var entry) ? BinaryPrimitives.ReadInt64LittleEndian(entry.Value) : 0;
                    table[key] = new Entry(Counter(current + write.Delta), commit);
                }
                else if (write.Value is null)
                {
                    table.Remove(key);
                }
                else
                {
                    table[key] = new Entry(write.Value, commit);
                }
            }
        }

        private void Reset()
        {
            _reads.Clear();
            _writes.Clear();
            _scans.Clear();
            _open = false;
        }

        private static byte[] Counter(long value)
        {
            var bytes = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
            return bytes;
        }

        /// <summary>A buffered write: a value, a delete (null, not a delta) or a counter delta.</summary>
        private readonly record struct Write(byte[]? Value, long Delta, bool IsDelta = false);
    }

    private sealed class KeyComparer : IEqualityComparer<(string Space, byte[] Key)>
    {
        public static readonly KeyComparer Instance = new();

        public bool Equals((string Space, byte[] Key) x, (string Space, byte[] Key) y) =>
            x.Space == y.Space && ByteKeyComparer.Instance.Equals(x.Key, y.Key);

        public int GetHashCode((string Space, byte[] Key) obj) => HashCode.Combine(obj.Space, ByteKeyComparer.Instance.GetHashCode(obj.Key));
    }
}
