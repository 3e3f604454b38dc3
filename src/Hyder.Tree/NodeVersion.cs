using System.Diagnostics;

namespace Hyder.Tree;

/// <summary>
/// The identity of one node version, identical on every server and never reused (DESIGN §2).
/// </summary>
/// <remarks>
/// Encoded in 64 bits:
/// <list type="bullet">
/// <item>bit 63 = 0: a persistent node written by a transaction: the intention's log position
/// (40 bits) and the node's post-order index in the intention (23 bits). Assigned when the intention
/// is sealed at its log position; never stored in the log.</item>
/// <item>bit 63 = 1: an ephemeral node made by meld: the stage thread id (8 bits, fixed by
/// configuration) and that thread's own sequence number (55 bits) — the two-part id of Hyder II §3.4.</item>
/// <item>0 is <see cref="None"/>: no version (an inserted node's source, an invalidated SSV).</item>
/// </list>
/// Only equality matters to meld; versions are never compared for order.
/// </remarks>
[DebuggerDisplay("{ToString(),nq}")]
public readonly struct NodeVersion : IEquatable<NodeVersion>
{
    /// <summary>Bits for the post-order index of a node inside its intention.</summary>
    public const int IndexBits = 23;

    /// <summary>Bits for an intention's log position.</summary>
    public const int PositionBits = 40;

    /// <summary>Bits for an ephemeral node's per-thread sequence number.</summary>
    public const int SequenceBits = 55;

    /// <summary>Largest node index an intention may hold.</summary>
    public const int MaxIndex = (1 << IndexBits) - 1;

    /// <summary>Largest log position a persistent version can encode.</summary>
    public const long MaxPosition = (1L << PositionBits) - 1;

    private const ulong EphemeralBit = 1UL << 63;

    private readonly ulong _value;

    private NodeVersion(ulong value) => _value = value;

    /// <summary>No version.</summary>
    public static NodeVersion None => default;

    /// <summary>The raw 64-bit encoding (for hashing and dumps).</summary>
    public ulong Raw => _value;

    /// <summary>True unless this is <see cref="None"/>.</summary>
    public bool IsSome => _value != 0;

    /// <summary>True for a node made by meld.</summary>
    public bool IsEphemeral => (_value & EphemeralBit) != 0;

    /// <summary>True for a node written by a transaction (stored in the log).</summary>
    public bool IsPersistent => _value != 0 && (_value & EphemeralBit) == 0;

    /// <summary>Log position of a persistent version.</summary>
    public long Position => IsPersistent ? (long)(_value >> IndexBits) : -1;

    /// <summary>Index inside its intention of a persistent version.</summary>
    public int Index => IsPersistent ? (int)(_value & MaxIndex) : -1;

    /// <summary>Stage thread id of an ephemeral version.</summary>
    public int ThreadId => IsEphemeral ? (int)((_value >> SequenceBits) & 0xFF) : -1;

    /// <summary>Per-thread sequence number of an ephemeral version.</summary>
    public long Sequence => IsEphemeral ? (long)(_value & ((1UL << SequenceBits) - 1)) : -1;

    /// <summary>The version of node <paramref name="index"/> of the intention at <paramref name="position"/>.</summary>
    public static NodeVersion Persistent(long position, int index)
    {
        if ((ulong)position > MaxPosition || position == 0)
        {
            ThrowHelper.ThrowArgumentOutOfRange(nameof(position), $"log position {position} is outside 1..{MaxPosition}");
        }

        if ((uint)index > MaxIndex)
        {
            ThrowHelper.ThrowArgumentOutOfRange(nameof(index), $"node index {index} is outside 0..{MaxIndex}");
        }

        return new NodeVersion(((ulong)position << IndexBits) | (uint)index);
    }

    /// <summary>The two-part id of an ephemeral node.</summary>
    public static NodeVersion Ephemeral(byte threadId, long sequence)
    {
        Invariant.Assert(sequence >= 0 && sequence < (1L << SequenceBits), $"ephemeral sequence {sequence} of thread {threadId} outside its {SequenceBits} bits");
        return new NodeVersion(EphemeralBit | ((ulong)threadId << SequenceBits) | (ulong)sequence);
    }

    /// <inheritdoc/>
    public bool Equals(NodeVersion other) => _value == other._value;

    /// <inheritdoc/>
    public override bool Equals(object? obj) => obj is NodeVersion v && v._value == _value;

    /// <inheritdoc/>
    public override int GetHashCode() => _value.GetHashCode();

    /// <summary>Equality of versions.</summary>
    public static bool operator ==(NodeVersion a, NodeVersion b) => a._value == b._value;

    /// <summary>Inequality of versions.</summary>
    public static bool operator !=(NodeVersion a, NodeVersion b) => a._value != b._value;

    /// <inheritdoc/>
    public override string ToString() =>
        !IsSome ? "none" : IsEphemeral ? $"e{ThreadId}.{Sequence}" : $"p{Position}.{Index}";
}
