using BenchmarkDotNet.Attributes;
using Hyder.Benchmarks.Meld;
using Hyder.Tree;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// The executor's per-transaction work on the main job's shape (8 reads and 2 writes,
/// serializable, 100,000 keys of 1 KiB) on one thread, stage by stage as the server runs them on
/// one transaction: execute, then validate, then encode. Each benchmark adds a stage to the one
/// before, so the differences are the stages' costs with the caches as the server has them (the
/// transaction's nodes were just made). The target for encoding is 10 µs and for
/// allocation nothing per transaction (docs/benchmarks/server.md, "Executor stages").
/// </summary>
[Config(typeof(MeldBenchmarkConfig))]
public class ExecutorPathBenchmarks
{
    private const int Keys = 100_000;
    private readonly Random _rng = new(5);
    private readonly NodePool _pool = new(1 << 12);
    private byte[][] _keys = null!;
    private byte[] _payload = null!;
    private Database _db = null!;

    /// <summary>Reads per transaction.</summary>
    [Params(8)]
    public int Reads { get; set; }

    /// <summary>Writes per transaction.</summary>
    [Params(2)]
    public int Writes { get; set; }

    /// <summary>Transactions of <see cref="Writes"/> writes committed after the bulk load, before anything is measured.</summary>
    public int Churn { get; set; } = 50_000;

    [GlobalSetup]
    public void Setup()
    {
        var w = new ServerWorkload(Keys, 1024, Reads, Writes, 1, 1, default, default);
        _keys = w.KeyTable;
        _payload = new byte[1024];
        _db = new Database();
        _db.BulkLoad([.. _keys.Select(k => new KeyValuePair<byte[], byte[]>(k, _payload))]);

        // A tree fresh from one bulk load has every node at one log position, so an intention's
        // versions need a one-entry position table. The main job's tree has run for a while: its
        // nodes' versions name hundreds of positions per intention, as these commits make them.
        for (var i = 0; i < Churn; i++)
        {
            using var tx = _db.Begin(IsolationLevel.SnapshotIsolation, _pool);
            for (var j = 0; j < Writes; j++)
            {
                tx.Put(_keys[_rng.Next(Keys)], _payload);
            }

            _db.Commit(tx);
        }
    }

    /// <summary>Begin, 8 reads, 2 writes, complete (and its nodes back to the pool): the transaction's own work.</summary>
    [Benchmark(Baseline = true)]
    public int Execute() => Stages(validate: false, encode: false);

    /// <summary>Then the validation an executor runs on its own intention before it appends it.</summary>
    [Benchmark]
    public int ExecuteValidate() => Stages(validate: true, encode: false);

    /// <summary>Then encoding it into log blocks, the final block in a pooled buffer, as the server does.</summary>
    [Benchmark]
    public int ExecuteValidateEncode() => Stages(validate: true, encode: true);

    private int Stages(bool validate, bool encode)
    {
        var tx = _db.Begin(IsolationLevel.Serializable, _pool);
        Intention intention;
        try
        {
            for (var i = 0; i < Reads; i++)
            {
                tx.TryGet(_keys[_rng.Next(Keys)], out _);
            }

            for (var i = 0; i < Writes; i++)
            {
                tx.Put(_keys[_rng.Next(Keys)], _payload);
            }

            intention = tx.Complete()!;
        }
        finally
        {
            tx.Dispose();
        }

        var length = 0;
        if (validate)
        {
            IntentionValidator.ValidateBeforeAppend(intention);
        }

        if (encode)
        {
            var encoded = IntentionEncoder.Encode(intention);
            length = encoded.FinishPooled([], out var rented).Length;
            encoded.Release();
            System.Buffers.ArrayPool<byte>.Shared.Return(rented);

            // The encoder kept its node order for the seal, which gives it back; nothing seals here.
            intention.DropSealOrder();
        }

        intention.ReleasePins();
        Recycle(intention.Root, OwnerRange.Of(intention));
        return length;
    }

    /// <summary>Gives the transaction's own nodes back to the pool, as final meld does after it melds an intention.</summary>
    private void Recycle(Node? n, OwnerRange inside)
    {
        if (n is null || !inside.Contains(n))
        {
            return;
        }

        Recycle(n.Left, inside);
        Recycle(n.Right, inside);
        _pool.Return(n);
    }
}
