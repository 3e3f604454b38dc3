using System.Buffers.Binary;
using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// Generates a <see cref="MeldLog"/>: a real database runs the workload's transactions, each on the
/// state <see cref="MeldWorkload.Degree"/> intentions back, and melds them; an identical second
/// execution of each transaction is kept, sealed at the same log position, for timing.
/// </summary>
public static class MeldLogBuilder
{
    private enum OpKind : byte
    {
        Read,
        Update,
        Insert,
    }

    private readonly record struct Op(OpKind Kind, byte[] Key, byte[] Payload);

    /// <summary>Intentions melded before the timed ones, beyond the concurrency degree, so every timed one has a full conflict zone.</summary>
    private const int ExtraWarmup = 64;

    /// <summary>Builds the log for <paramref name="workload"/>; deterministic for a given workload.</summary>
    public static MeldLog Build(MeldWorkload workload)
    {
        var w = workload;
        if (w.ReadPercent is < 0 or >= 100 || w.Size < 1 || w.Count < 1 || w.Degree < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(workload), w, "needs 0 <= read % < 100 (read-only transactions never reach the log), size, count and degree >= 1");
        }

        var rng = new Random(w.Seed);
        var db = new Database();
        db.BulkLoad(InitialTable(w.Keys));

        var warmup = w.Degree + ExtraWarmup;
        var total = warmup + w.Count;
        var history = new DatabaseState[total];
        var intentions = new Intention[w.Count];
        var states = new DatabaseState[w.Count];
        var expected = new MeldOutcome[w.Count];
        var ops = new Op[w.Size];
        var inserted = new HashSet<long>();
        long reads = 0;
        var dropped = 0;

        for (var k = 0; k < total; k++)
        {
            // The last committed state intention k is melded into; it stays pinned for the benchmark.
            history[k] = db.PinCurrent();
            var snapshot = history[Math.Max(0, k - w.Degree)];

            int r;
            while ((r = Draw(w, rng, ops, inserted)) == w.Size)
            {
                dropped++;
            }

            var first = Execute(db, snapshot, ops);
            var copy = k >= warmup ? Execute(db, snapshot, ops) : null;
            db.Append(first);
            var ordinal = first.Ordinal;
            var outcome = db.Meld(first);
            if (copy is null)
            {
                continue;
            }

            copy.Seal(ordinal, ordinal);
            var t = k - warmup;
            intentions[t] = copy;
            states[t] = history[k];
            expected[t] = outcome;
            reads += r;
        }

        return new MeldLog(w, db, intentions, states, expected, reads, (long)w.Count * w.Size, dropped);
    }

    /// <summary>The initial table: keys (i + 1) × stride as 8-byte big-endian integers, 8-byte payloads.</summary>
    public static KeyValuePair<byte[], byte[]>[] InitialTable(int keys)
    {
        var pairs = new KeyValuePair<byte[], byte[]>[keys];
        for (var i = 0; i < keys; i++)
        {
            pairs[i] = new(Key((i + 1) * MeldWorkload.Stride), Key(i));
        }

        return pairs;
    }

    /// <summary>Draws one transaction's operations; returns its number of reads.</summary>
    private static int Draw(MeldWorkload w, Random rng, Op[] ops, HashSet<long> inserted)
    {
        var reads = 0;
        for (var j = 0; j < ops.Length; j++)
        {
            var read = w.ExactHalf ? j < ops.Length / 2 : rng.Next(100) < w.ReadPercent;
            OpKind kind = read ? OpKind.Read : w.Mix == MeldMix.ReadUpdate ? OpKind.Update : OpKind.Insert;
            ops[j] = new Op(kind, kind == OpKind.Insert ? NewGapKey(w, rng, inserted) : ExistingKey(w, rng), Payload(rng));
            reads += read ? 1 : 0;
        }

        if (w.ExactHalf)
        {
            rng.Shuffle(ops);
        }

        return reads;
    }

    private static byte[] ExistingKey(MeldWorkload w, Random rng) => Key((rng.NextInt64(w.Keys) + 1) * MeldWorkload.Stride);

    /// <summary>A key never used before, uniformly in the gaps between (and around) the initial keys.</summary>
    private static byte[] NewGapKey(MeldWorkload w, Random rng, HashSet<long> inserted)
    {
        while (true)
        {
            var k = rng.NextInt64(w.Keys + 1) * MeldWorkload.Stride + rng.NextInt64(1, MeldWorkload.Stride);
            if (inserted.Add(k))
            {
                return Key(k);
            }
        }
    }

    private static byte[] Payload(Random rng)
    {
        var p = new byte[8];
        rng.NextBytes(p);
        return p;
    }

    private static byte[] Key(long value)
    {
        var k = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(k, value);
        return k;
    }

    private static Intention Execute(Database db, DatabaseState snapshot, Op[] ops)
    {
        using var tx = db.BeginAt(snapshot, IsolationLevel.Serializable);
        foreach (var op in ops)
        {
            switch (op.Kind)
            {
                case OpKind.Read:
                    if (!tx.TryGet(op.Key, out _))
                    {
                        throw new InvalidOperationException($"read of {Keys.Format(op.Key)}: every read key is in the initial table");
                    }

                    break;
                case OpKind.Update:
                    tx.Put(op.Key, op.Payload);
                    break;
                default:
                    if (!tx.Insert(op.Key, op.Payload))
                    {
                        throw new InvalidOperationException($"insert of {Keys.Format(op.Key)}: inserted keys are fresh");
                    }

                    break;
            }
        }

        return tx.Complete() ?? throw new InvalidOperationException("a logged transaction must write");
    }
}
