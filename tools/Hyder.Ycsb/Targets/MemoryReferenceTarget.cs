using System.Buffers.Binary;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Targets;

/// <summary>
/// A reference target for testing the driver and the workloads, not a product and not a baseline:
/// sorted dictionaries behind one lock, with simple backward-validating optimistic concurrency.
/// Reads see the latest committed value and are remembered with the commit number that wrote them;
/// writes are buffered and applied at commit. Validation per level: serializable checks every read
/// record and every scanned range (phantoms); repeatable read checks read records; snapshot checks
/// that no written key was committed by another transaction since this one began
/// (first-committer-wins); read committed checks nothing. Add reads its counter as a
/// read-modify-write would, so a hot counter conflicts as it does under plain OCC.
/// </summary>
internal sealed partial class MemoryReferenceTarget : ITarget
{
    private readonly Lock _lock = new();
    private readonly Dictionary<string, SortedDictionary<byte[], Entry>> _tables = [];
    private long _commits;

    public string Description => "memory (in-process reference target for tests: sorted dictionaries, one lock, optimistic validation)";

    public Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken)
    {
        lock (_lock)
        {
            foreach (var space in keySpaces)
            {
                if (reset || !_tables.ContainsKey(space.Name))
                {
                    _tables[space.Name] = new SortedDictionary<byte[], Entry>(ByteKeyComparer.Instance);
                }
            }
        }

        return Task.CompletedTask;
    }

    public Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken) => Task.FromResult<ITargetSession>(new Session(this));

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;

    /// <summary>Records in a key space (for tests).</summary>
    public int Count(string space)
    {
        lock (_lock)
        {
            return _tables[space].Count;
        }
    }

    /// <summary>A committed counter's value, or null (for tests).</summary>
    public long? Counter(string space, byte[] key)
    {
        lock (_lock)
        {
            return _tables[space].TryGetValue(key, out var entry) ? BinaryPrimitives.ReadInt64LittleEndian(entry.Value) : null;
        }
    }

    private SortedDictionary<byte[], Entry> Table(KeySpace space) =>
        _tables.TryGetValue(space.Name, out var table) ? table : throw new InvalidOperationException($"Key space {space.Name} was not prepared.");

    /// <summary>A committed record and the number of the commit that wrote it.</summary>
    private sealed record Entry(byte[] Value, long Commit);

    private sealed partial class Session(MemoryReferenceTarget target) : ITargetSession
    {
        public ValueTask DisposeAsync() => ValueTask.CompletedTask;
    }
}
