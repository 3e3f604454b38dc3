using System.Diagnostics;
using Hyder.Tree;
using Hyder.Tree.Serialization;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// What encoding one of the workload's intentions into log blocks costs on one thread: the part of
/// an executor's work that is serialization (the server's threads cannot tell it apart otherwise).
/// </summary>
internal static class SerializationCost
{
    /// <summary>Microseconds per encode and blocks per intention, for serializable and snapshot isolation.</summary>
    public static (double SerializableMicros, double SnapshotMicros, double SerializableBytes, double SnapshotBytes) Measure(ServerWorkload w)
    {
        const int Keys = 100_000;
        var keys = new ServerWorkload(Keys, w.PayloadBytes, w.Reads, w.Writes, 1, 1, default, default).KeyTable;
        var payload = new byte[w.PayloadBytes];
        var db = new Database();
        db.BulkLoad([.. keys.Select(k => new KeyValuePair<byte[], byte[]>(k, payload))]);
        return (Time(IsolationLevel.Serializable, out var sb), Time(IsolationLevel.SnapshotIsolation, out var si), sb, si);

        double Time(IsolationLevel isolation, out double bytes)
        {
            var rng = new Random(3);
            var intentions = new List<Intention>();
            for (var n = 0; n < 2_000; n++)
            {
                using var tx = db.Begin(isolation);
                for (var i = 0; i < w.Reads; i++)
                {
                    tx.TryGet(keys[rng.Next(Keys)], out _);
                }

                for (var i = 0; i < w.Writes; i++)
                {
                    tx.Put(keys[rng.Next(Keys)], payload);
                }

                intentions.Add(tx.Complete()!);
            }

            long total = 0;
            foreach (var i in intentions)
            {
                total += IntentionEncoder.Encode(i).StreamLength;
            }

            bytes = total / (double)intentions.Count;
            var clock = Stopwatch.StartNew();
            const int Rounds = 5;
            for (var r = 0; r < Rounds; r++)
            {
                foreach (var i in intentions)
                {
                    IntentionEncoder.Encode(i);
                }
            }

            return clock.Elapsed.TotalMicroseconds / (Rounds * intentions.Count);
        }
    }
}
