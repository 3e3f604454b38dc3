namespace Hyder.Server.Cluster;

/// <summary>What a control record of the log says (the payload of a control block).</summary>
public enum ControlKind : byte
{
    /// <summary>The cluster's settings: the log's first record.</summary>
    Settings = 1,

    /// <summary>
    /// A committed no-op that takes an ordinal: appended when group meld waits for the second of a
    /// pair and nothing else comes, so the first is not held back.
    /// </summary>
    Filler = 2,

    /// <summary>
    /// A committed no-op that, at an ordinal ending a pair, is a checkpoint barrier (a plain
    /// no-op otherwise): every server stops premelding across it, and one server then writes the
    /// state after it as a checkpoint.
    /// </summary>
    CheckpointMarker = 3,
}

/// <summary>Control record payloads: a kind byte, then the kind's bytes.</summary>
public static class ControlRecord
{
    /// <summary>A payload of <paramref name="kind"/> with <paramref name="body"/>.</summary>
    public static byte[] Encode(ControlKind kind, ReadOnlySpan<byte> body = default)
    {
        var b = new byte[1 + body.Length];
        b[0] = (byte)kind;
        body.CopyTo(b.AsSpan(1));
        return b;
    }

    /// <summary>The kind and body of a payload; false for an unknown or empty one.</summary>
    public static bool TryDecode(ReadOnlySpan<byte> payload, out ControlKind kind, out ReadOnlySpan<byte> body)
    {
        kind = default;
        body = default;
        if (payload.Length == 0 || payload[0] is < 1 or > 3)
        {
            return false;
        }

        kind = (ControlKind)payload[0];
        body = payload[1..];
        return true;
    }
}
