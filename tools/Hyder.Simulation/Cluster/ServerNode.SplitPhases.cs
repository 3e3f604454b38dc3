using System.Buffers.Binary;
using Hyder.Doppel;
using Hyder.Server.Engine;
using Hyder.Tree;

namespace Hyder.Simulation.Cluster;

/// <summary>Split phases on one server: its side table in the state hash, its counters, and the counter steps of a transaction.</summary>
internal sealed partial class ServerNode
{
    private Database? _database;

    /// <summary>This incarnation's split-phase table (null when split phases are off, or before the database opened).</summary>
    public SplitPhaseTable? SplitTable => _database?.SplitPhases as SplitPhaseTable;

    /// <summary>
    /// The state hash with the side table folded in: inside a phase the tree lags the table for
    /// split keys, so the keys the table changed and their running values (in key order) are
    /// hashed after the tree's hash. Unchanged when the table changed nothing (or is off).
    /// </summary>
    private ulong WithSplitTable(ulong treeHash)
    {
        if (SplitTable is not { } table || table.ChangedKeys.Count == 0)
        {
            return treeHash;
        }

        var hash = treeHash;
        foreach (var key in table.ChangedKeys.OrderBy(k => k, Keys.Comparer))
        {
            table.TryGetChanged(key, out var value);
            hash = Fold(Fold(hash, key), value ?? []);
        }

        return hash;
    }

    private static ulong Fold(ulong hash, ReadOnlySpan<byte> bytes)
    {
        const ulong prime = 1099511628211;
        hash = (hash ^ (ulong)bytes.Length) * prime;
        foreach (var b in bytes)
        {
            hash = (hash ^ b) * prime;
        }

        return hash;
    }

    /// <summary>Counter <paramref name="counter"/>'s value at this server's last melded ordinal: the table's running value, else the tree's (0 when absent).</summary>
    public long CounterValue(int counter)
    {
        var key = CounterLedger.Key(counter);
        byte[]? value;
        if (SplitTable is not { } table || !table.TryGetChanged(key, out value))
        {
            value = Keys.Find(_server?.Database.Current.Root, key)?.Payload;
        }

        return value is null ? 0 : BinaryPrimitives.ReadInt64LittleEndian(value);
    }

    private static async Task RunCounterAsync(IInteractiveTransaction tx, CounterOp op)
    {
        var key = CounterLedger.Key(op.Counter);
        if (op.Read)
        {
            await tx.ExecuteAsync(Operation.Get(key));
        }
        else
        {
            await tx.ExecuteAsync(Operation.Add(key, op.Delta, min: op.Delta < 0 ? 0 : null));
        }
    }
}
