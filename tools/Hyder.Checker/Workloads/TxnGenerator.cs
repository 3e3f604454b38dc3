namespace Hyder.Checker;

/// <summary>Shape of generated transactions.</summary>
public sealed record WorkloadOptions
{
    /// <summary>Keys in use at a time, per kind (list, register).</summary>
    public int ActiveKeys { get; init; } = 5;

    /// <summary>Writes after which a key retires and a fresh key takes its place (keeps lists short).</summary>
    public int MaxWritesPerKey { get; init; } = 16;

    /// <summary>Fewest micro-operations per transaction.</summary>
    public int MinOps { get; init; } = 1;

    /// <summary>Most micro-operations per transaction.</summary>
    public int MaxOps { get; init; } = 4;

    /// <summary>Share of micro-operations that read (0 to 1).</summary>
    public double ReadShare { get; init; } = 0.5;

    /// <summary>Generate list-append micro-operations.</summary>
    public bool Lists { get; init; } = true;

    /// <summary>Generate register micro-operations.</summary>
    public bool Registers { get; init; } = true;
}

/// <summary>
/// Random transactions for list-append and register workloads, with the values the checker
/// needs: every append or write to a key carries a value never used for that key before. Keys
/// rotate: after <see cref="WorkloadOptions.MaxWritesPerKey"/> writes a key is retired for a
/// fresh one, as Elle's generators do, so reads stay short on long runs. Deterministic for a seed.
/// </summary>
public sealed class TxnGenerator
{
    private readonly WorkloadOptions _options;
    private readonly Random _random;
    private readonly long[][] _active = new long[2][];
    private readonly Dictionary<long, int>[] _writes = [[], []];
    private long _nextKey;

    /// <summary>Creates a generator with its own random source.</summary>
    public TxnGenerator(WorkloadOptions options, int seed)
    {
        if (!options.Lists && !options.Registers)
        {
            throw new ArgumentException("enable lists, registers or both", nameof(options));
        }

        _options = options;
        _random = new Random(seed);
        for (var kind = 0; kind < 2; kind++)
        {
            _active[kind] = new long[options.ActiveKeys];
            for (var i = 0; i < options.ActiveKeys; i++)
            {
                _active[kind][i] = _nextKey++;
            }
        }
    }

    /// <summary>The next transaction, as an invocation (reads unknown).</summary>
    public Mop[] Next()
    {
        var count = _random.Next(_options.MinOps, _options.MaxOps + 1);
        var mops = new Mop[count];
        for (var i = 0; i < count; i++)
        {
            var list = _options.Lists && (!_options.Registers || _random.Next(2) == 0);
            var kind = list ? 0 : 1;
            var slot = _random.Next(_options.ActiveKeys);
            var key = _active[kind][slot];
            if (_random.NextDouble() < _options.ReadShare)
            {
                mops[i] = list ? Mop.ReadUnknown(key) : Mop.ReadRegisterUnknown(key);
                continue;
            }

            var n = _writes[kind].GetValueOrDefault(key) + 1;
            _writes[kind][key] = n;
            mops[i] = list ? Mop.Append(key, n) : Mop.Write(key, n);
            if (n >= _options.MaxWritesPerKey)
            {
                _writes[kind].Remove(key);
                _active[kind][slot] = _nextKey++;
            }
        }

        return mops;
    }
}
