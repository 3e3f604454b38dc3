using Hyder.Tree;

namespace Hyder.Doppel;

/// <summary>
/// How split phases run (docs/doppel.md, "Split phases"). Every server of a cluster must use the
/// same options, since they change what final meld computes: the log's first record states them.
/// </summary>
public sealed record SplitPhaseOptions
{
    /// <summary>The most ordinals a phase may span.</summary>
    public const int MaxPhaseLength = 1 << 20;

    /// <summary>The most keys a phase may split.</summary>
    public const int MaxSplitKeysLimit = 1024;

    /// <summary>N: a phase ends after this many ordinals (or earlier, at a committed no-op); 0 turns split phases off.</summary>
    public int PhaseLength { get; init; }

    /// <summary>A key with at least this many operations in a phase is split in the next one.</summary>
    public int HotThreshold { get; init; } = 64;

    /// <summary>At most this many keys are split in a phase (the most operated on first; labelled keys come on top).</summary>
    public int MaxSplitKeys { get; init; } = 16;

    /// <summary>Keys the user labelled hot: split in every phase.</summary>
    public IReadOnlyList<byte[]> LabelledKeys { get; init; } = [];

    /// <summary>The longest labelled key, bytes.</summary>
    public const int MaxLabelledKeyBytes = 1024;

    /// <summary>True when split phases run at all.</summary>
    public bool Enabled => PhaseLength > 0;

    /// <summary>Checks the options; throws <see cref="ArgumentException"/> naming the bad one.</summary>
    public void Validate()
    {
        if (PhaseLength is < 0 or > MaxPhaseLength)
        {
            throw new ArgumentOutOfRangeException(nameof(PhaseLength), PhaseLength, $"the phase length is 0 (off) or 1..{MaxPhaseLength} ordinals");
        }

        if (HotThreshold < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(HotThreshold), HotThreshold, "the hot threshold is at least 1 operation per phase");
        }

        if (MaxSplitKeys is < 0 or > MaxSplitKeysLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxSplitKeys), MaxSplitKeys, $"at most 0..{MaxSplitKeysLimit} keys may be split by count");
        }

        if (LabelledKeys.Count > MaxSplitKeysLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(LabelledKeys), LabelledKeys.Count, $"at most {MaxSplitKeysLimit} keys may be labelled hot");
        }

        var seen = new HashSet<byte[]>(KeyEquality.Instance);
        foreach (var k in LabelledKeys)
        {
            if (k is null || k.Length == 0 || k.Length > MaxLabelledKeyBytes)
            {
                throw new ArgumentException($"a labelled hot key must have 1..{MaxLabelledKeyBytes} bytes", nameof(LabelledKeys));
            }

            if (!seen.Add(k))
            {
                throw new ArgumentException($"labelled hot key {Keys.Format(k)} is given twice", nameof(LabelledKeys));
            }
        }
    }
}

/// <summary>Byte-wise equality of keys, for dictionaries keyed by them.</summary>
internal sealed class KeyEquality : IEqualityComparer<byte[]>
{
    public static KeyEquality Instance { get; } = new();

    public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

    public int GetHashCode(byte[] key)
    {
        var h = new HashCode();
        h.AddBytes(key);
        return h.ToHashCode();
    }
}
