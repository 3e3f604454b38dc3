using Hyder.Testing;
using System.Buffers.Binary;
using Hyder.Fuzz.Engine;
using Hyder.Fuzz.Targets;
using Hyder.Tree.Serialization;
using Xunit;

namespace Hyder.Fuzz.Tests;

/// <summary>
/// The intention target applies the reader's reference rule (docs/server.md, "References that do
/// not point back"): a final block that names its own group-meld pair's first ordinal as its
/// snapshot, itself or a later ordinal, or a part at or after its own position, is rejected with
/// the server's reason before anything is decoded. Server-side: Hyder.Server.Tests HostileReferenceTests.
/// </summary>
public sealed class HostileReferenceInputTests
{
    public static TheoryData<string, long?, long?, string> Cases() => new()
    {
        { "own pair", IntentionTarget.ReadOrdinal - 1, null, "the first of its own group-meld pair" },
        { "itself", IntentionTarget.ReadOrdinal, null, "which is not before it" },
        { "later", IntentionTarget.ReadOrdinal + 7, null, "which is not before it" },
        { "part at its own position", null, IntentionTarget.ReadPosition, "names part @2000000" },
        { "part after it", null, IntentionTarget.ReadPosition + 1, "names part @2000001" },
    };

    [Theory]
    [MemberData(nameof(Cases))]
    public void AMisplacedReferenceIsRejectedWithTheServersReason(string what, long? snapshot, long? part, string reason)
    {
        using var target = TargetRegistry.Create("intention")!;
        var seed = target.Corpus.First(s => s.Name.EndsWith(", final", StringComparison.Ordinal));
        var forged = Rewrite(seed.Bytes, snapshot, part);
        var result = new FuzzRunner(new FuzzOptions()).RunInput(target, seed, forged);
        Assert.True(result.Finding is null, result.Finding?.Format());
        Assert.True(result.Outcome == CaseOutcome.Rejected, what);
        Assert.Contains(reason, result.Exception?.Message, StringComparison.Ordinal);

        // The seed itself is accepted: the rule is what rejects the forged one.
        Assert.Equal(CaseOutcome.Success, new FuzzRunner(new FuzzOptions()).RunInput(target, seed, seed.Bytes.ToArray()).Outcome);
    }

    /// <summary>The final block with its snapshot sequence or its part positions (all set to <paramref name="part"/>'s one) replaced, resealed.</summary>
    private static byte[] Rewrite(ReadOnlySpan<byte> final, long? snapshot, long? part)
    {
        var body = final[BlockFormat.HeaderSize..];
        var at = 8;
        var count = (int)Varints.Read(body, ref at);
        var parts = new List<long>();
        for (var i = 0; i < count; i++)
        {
            parts.Add((long)Varints.Read(body, ref at));
        }

        var oldSnapshot = (long)Varints.Read(body, ref at);
        if (part is { } p)
        {
            parts = [p];
        }

        var block = new List<byte>(final[..(BlockFormat.HeaderSize + 8)].ToArray());
        Varints.Write(block, (ulong)parts.Count);
        parts.ForEach(x => Varints.Write(block, (ulong)x));
        Varints.Write(block, (ulong)(snapshot ?? oldSnapshot));
        block.AddRange(body[at..].ToArray());
        var bytes = block.ToArray();
        BinaryPrimitives.WriteUInt32LittleEndian(bytes.AsSpan(6), (uint)bytes.Length);
        TreeCorpus.Reseal(bytes);
        return bytes;
    }
}
