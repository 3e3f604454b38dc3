using BenchmarkDotNet.Attributes;
using Hyder.Benchmarks.Meld;
using Hyder.Tree.Serialization;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// The encoder's position table on the main job's shape: about 400 version references naming
/// about 200 distinct log positions within a few million of each other (what an 8R2W intention
/// names once the tree has run for a while), each collected, then sorted into the table, then
/// looked up once per version written. <see cref="HashSetSortBinarySearch"/> is how the encoder
/// did it before <see cref="PositionTable"/> (docs/benchmarks/server.md, "The encoder's position table");
/// <see cref="WriteOrderRadix"/> is how it does it now, the references asked for in the order
/// collected (docs/benchmarks/server.md, "The encoder's references in write order").
/// </summary>
[Config(typeof(MeldBenchmarkConfig))]
public class PositionTableBenchmarks
{
    private readonly PositionTable _table = new();
    private readonly WriteOrderPositions _ordered = new();
    private readonly HashSet<long> _set = [];
    private long[] _sorted = new long[256];
    private long[][] _sets = [];
    private int _next;

    /// <summary>Distinct positions per intention.</summary>
    [Params(200)]
    public int Distinct { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        // Many intentions, taken in turn: one set repeated would let the branch predictor learn
        // the binary search's path through it, which no server sees.
        var rng = new Random(11);
        _sets = new long[256][];
        for (var s = 0; s < _sets.Length; s++)
        {
            var positions = Enumerable.Range(0, Distinct).Select(_ => 1_000_000L + rng.Next(3_000_000)).ToArray();

            // Each position named about twice, in no order.
            var references = new long[positions.Length * 2];
            positions.CopyTo(references, 0);
            for (var i = positions.Length; i < references.Length; i++)
            {
                references[i] = positions[rng.Next(positions.Length)];
            }

            rng.Shuffle(references);
            _sets[s] = references;
        }
    }

    private long[] Next() => _sets[_next++ & (_sets.Length - 1)];

    [Benchmark(Baseline = true)]
    public long HashSetSortBinarySearch()
    {
        var references = Next();
        _set.Clear();
        foreach (var p in references)
        {
            _set.Add(p);
        }

        if (_sorted.Length < _set.Count)
        {
            _sorted = new long[_set.Count * 2];
        }

        _set.CopyTo(_sorted);
        var table = _sorted.AsSpan(0, _set.Count);
        table.Sort();
        long sum = 0;
        foreach (var p in references)
        {
            sum += table.BinarySearch(p);
        }

        return sum;
    }

    [Benchmark]
    public long OpenAddressingRadix()
    {
        var references = Next();
        _table.Clear();
        foreach (var p in references)
        {
            _table.Add(p);
        }

        _table.Seal();
        long sum = 0;
        foreach (var p in references)
        {
            sum += _table.IndexOf(p);
        }

        return sum;
    }

    /// <summary><see cref="WriteOrderPositions"/>: every reference collected, one sort, then each reference's index in turn.</summary>
    [Benchmark]
    public long WriteOrderRadix()
    {
        var references = Next();
        _ordered.Clear();
        foreach (var p in references)
        {
            _ordered.Add(p);
        }

        _ordered.Seal();
        long sum = 0;
        foreach (var p in references)
        {
            sum += _ordered.IndexOf(p);
        }

        return sum;
    }
}
