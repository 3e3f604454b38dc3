using Hyder.Tree;
using Hyder.Tree.Commutative;

namespace Hyder.Doppel;

/// <summary>
/// Doppel's split phases beside final meld (002 §5; docs/doppel.md, "Split phases"). Final meld
/// hands it the operations of split keys: it folds them into a per-key running value in O(1) per
/// operation (no path copy, no ephemeral node), exactly, so a bounded Add is checked against the
/// key's true value at its place in the log. When a phase ends (every
/// <see cref="SplitPhaseOptions.PhaseLength"/> ordinals, or at a committed no-op) the database
/// writes the changed keys into the tree, one path copy each, and the next phase splits the keys
/// that received at least <see cref="SplitPhaseOptions.HotThreshold"/> operations in this one (at
/// most <see cref="SplitPhaseOptions.MaxSplitKeys"/>, the most operated on first, ties by key),
/// plus the labelled ones. Everything depends only on the log, so every server splits the same
/// keys at the same ordinals and builds byte-identical states.
/// </summary>
/// <remarks>Used by the final-meld thread only; the counters may be read from any thread.</remarks>
public sealed class SplitPhaseTable : ISplitPhases
{
    private readonly SplitPhaseOptions _options;
    private readonly Dictionary<byte[], Entry> _entries = new(KeyEquality.Instance);
    private readonly Dictionary<byte[], int> _counts = new(KeyEquality.Instance);
    private readonly List<byte[]> _changed = [];
    private readonly List<Entry> _pending = [];
    private long _phaseStart;
    private SplitKeySet? _split;
    private long _phases;
    private long _stagedOperations;
    private long _reconciledKeys;

    /// <summary>
    /// A table whose first phase starts at ordinal <paramref name="phaseStart"/> (1 for a new log;
    /// one past a checkpoint's barrier after a restart) and splits <paramref name="splitKeys"/>
    /// (the labelled keys when null: a new log has counted nothing yet).
    /// </summary>
    public SplitPhaseTable(SplitPhaseOptions options, long phaseStart = 1, IEnumerable<byte[]>? splitKeys = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        if (!options.Enabled)
        {
            throw new ArgumentException("split phases are off (phase length 0): no table is needed", nameof(options));
        }

        ArgumentOutOfRangeException.ThrowIfLessThan(phaseStart, 1);
        _options = options;
        _phaseStart = phaseStart;
        _split = SetOf(splitKeys ?? options.LabelledKeys);
    }

    /// <summary>The options.</summary>
    public SplitPhaseOptions Options => _options;

    /// <summary>The first ordinal of the running phase.</summary>
    public long PhaseStart => _phaseStart;

    /// <inheritdoc/>
    public SplitKeySet? SplitKeys => _split;

    /// <inheritdoc/>
    public IReadOnlyList<byte[]> ChangedKeys => _changed;

    /// <inheritdoc/>
    public bool IsSplit(byte[] key) => _split is { } split && split.Contains(key);

    /// <inheritdoc/>
    public bool IsChanged(byte[] key) => _entries.TryGetValue(key, out var e) && e.Changed;

    /// <summary>The keys the last reconciliation wrote into the tree, ascending.</summary>
    public IReadOnlyList<byte[]> LastReconciledKeys { get; private set; } = [];

    /// <summary>Phases ended so far.</summary>
    public long Phases => Volatile.Read(ref _phases);

    /// <summary>Operation lists of committed intentions taken by the table instead of the tree.</summary>
    public long StagedOperations => Volatile.Read(ref _stagedOperations);

    /// <summary>Keys written into the tree by reconciliations.</summary>
    public long ReconciledKeys => Volatile.Read(ref _reconciledKeys);

    /// <summary>
    /// The running value of a key that committed operations changed in this phase (the value the
    /// tree will hold after reconciliation); false for any other key, whose tree value is exact.
    /// </summary>
    public bool TryGetChanged(byte[] key, out byte[]? value)
    {
        if (_entries.TryGetValue(key, out var e) && e.Changed)
        {
            value = e.Value;
            return true;
        }

        value = null;
        return false;
    }

    /// <inheritdoc/>
    public SplitStatus Stage(byte[] key, ReadOnlySpan<byte> operations, byte[]? current, long ordinal)
    {
        ref var count = ref System.Runtime.InteropServices.CollectionsMarshal.GetValueRefOrAddDefault(_counts, key, out _);
        count++;
        if (_split is not { } split || !split.Contains(key))
        {
            return SplitStatus.NotSplit;
        }

        // Until committed operations change the key in this phase, the tree's value is exact (an
        // ordinary write may have changed it since an aborted intention made the entry).
        _entries.TryGetValue(key, out var e);
        var value = e is null || !e.Changed ? current : e.Value;
        switch (OperationFold.Apply(operations, value, out var result))
        {
            case FoldError.BoundViolated:
                return SplitStatus.BoundViolated;
            case FoldError.TypeMismatch:
                return SplitStatus.TypeMismatch;
        }

        if (result is null)
        {
            // A write that deletes the key (meld let it through: the table has not changed the key
            // in this phase, so the tree is exact): the tree applies it.
            return SplitStatus.NotSplit;
        }

        if (e is null)
        {
            e = new Entry(key, current);
            _entries.Add(key, e);
        }
        else if (!e.Changed)
        {
            e.Value = current;
        }

        e.Staged = result;
        _pending.Add(e);
        return SplitStatus.Staged;
    }

    /// <inheritdoc/>
    public void Commit(long ordinal)
    {
        foreach (var e in _pending)
        {
            e.Value = e.Staged;
            e.Staged = null;
            if (!e.Changed)
            {
                e.Changed = true;
                _changed.Add(e.Key);
            }
        }

        Volatile.Write(ref _stagedOperations, _stagedOperations + _pending.Count);
        _pending.Clear();
    }

    /// <inheritdoc/>
    public void Abort(long ordinal)
    {
        foreach (var e in _pending)
        {
            e.Staged = null;
        }

        _pending.Clear();
    }

    /// <inheritdoc/>
    public bool EndsPhase(long ordinal, bool noOp) => noOp || ordinal >= _phaseStart + _options.PhaseLength - 1;

    /// <inheritdoc/>
    public IReadOnlyList<KeyValuePair<byte[], byte[]>> EndPhase(long ordinal)
    {
        if (_pending.Count > 0)
        {
            throw new InvalidOperationException($"phase ended at #{ordinal} with operations staged by an undecided intention");
        }

        var values = new KeyValuePair<byte[], byte[]>[_changed.Count];
        for (var i = 0; i < values.Length; i++)
        {
            var key = _changed[i];
            values[i] = new(key, _entries[key].Value!);
        }

        Array.Sort(values, static (a, b) => Keys.Compare(a.Key, b.Key));
        LastReconciledKeys = Array.ConvertAll(values, v => v.Key);
        _entries.Clear();
        _changed.Clear();
        _split = SetOf(ChooseNext());
        _counts.Clear();
        _phaseStart = ordinal + 1;
        Volatile.Write(ref _phases, _phases + 1);
        Volatile.Write(ref _reconciledKeys, _reconciledKeys + values.Length);
        return values;
    }

    /// <summary>The next phase's split keys: the most operated-on keys at or over the threshold, then the labelled ones.</summary>
    private List<byte[]> ChooseNext()
    {
        var hot = new List<KeyValuePair<byte[], int>>();
        foreach (var kv in _counts)
        {
            if (kv.Value >= _options.HotThreshold)
            {
                hot.Add(kv);
            }
        }

        hot.Sort(static (a, b) => a.Value != b.Value ? b.Value.CompareTo(a.Value) : Keys.Compare(a.Key, b.Key));
        var next = new List<byte[]>(Math.Min(hot.Count, _options.MaxSplitKeys) + _options.LabelledKeys.Count);
        var chosen = new HashSet<byte[]>(KeyEquality.Instance);
        for (var i = 0; i < hot.Count && i < _options.MaxSplitKeys; i++)
        {
            next.Add(hot[i].Key);
            chosen.Add(hot[i].Key);
        }

        foreach (var k in _options.LabelledKeys)
        {
            if (chosen.Add(k))
            {
                next.Add(k);
            }
        }

        return next;
    }

    private static SplitKeySet? SetOf(IEnumerable<byte[]> keys)
    {
        var set = new SplitKeySet(keys);
        return set.Count == 0 ? null : set;
    }

    /// <summary>One split key's running value in this phase.</summary>
    private sealed class Entry(byte[] key, byte[]? value)
    {
        public byte[] Key { get; } = key;

        /// <summary>The value after the committed operations (the tree's when none).</summary>
        public byte[]? Value { get; set; } = value;

        /// <summary>The value after the undecided intention's operations.</summary>
        public byte[]? Staged { get; set; }

        /// <summary>Committed operations changed the key in this phase: the tree is behind.</summary>
        public bool Changed { get; set; }
    }
}
