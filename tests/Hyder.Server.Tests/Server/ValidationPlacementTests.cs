using System.Collections.Concurrent;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// Validation runs where an intention is built (the executor, before its append) or decoded (a
/// deserializer), never on the final-meld thread (DESIGN §6), and every server still gives the
/// same verdict with the same reason.
/// </summary>
public sealed class ValidationPlacementTests
{
    [Fact]
    public async Task ALocalIntentionThatWouldFailValidationIsRefusedBeforeItIsAppendedWithTheReasonEveryServerGives()
    {
        const int BlockSize = 1024;
        var corrupt = 0;
        EncodedIntention? bad = null;
        var rejections = new ConcurrentDictionary<(int Server, long Ordinal), string>();
        var next = 0;
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings { BlockSize = BlockSize }, o =>
        {
            var server = next++;
            o.IntentionBuilt = i =>
            {
                if (Volatile.Read(ref corrupt) == 1)
                {
                    // A blind write in a serializable transaction: the format carries the flag, and
                    // the decoder leaves such rules to the validator.
                    Keys.Find(i.Root, Key(5))!.Flags |= NodeFlags.BlindWrite;
                    bad = IntentionEncoder.Encode(i, BlockSize);
                }
            };
            o.MeldedHook = (v, m, _) =>
            {
                if (m.Cause == AbortCause.Rejected)
                {
                    rejections[(server, v)] = m.RejectReason!;
                }
            };
        });
        var local = cluster.Servers[0];
        for (var i = 0; i < 8; i++)
        {
            await local.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(i), Value($"v{i}"))]);
        }

        await cluster.QuiesceAsync();
        var tail = await cluster.Log.TailAsync();

        Volatile.Write(ref corrupt, 1);

        // Bounded: an intention that got past the executor would stall the server's pipeline
        // (it refuses unvalidated intentions), and the test must fail, not hang.
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var refused = await Assert.ThrowsAsync<EngineException>(async () =>
            await local.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(3)), Operation.Put(Key(5), Value("x"))], bound.Token));
        Volatile.Write(ref corrupt, 0);

        // Refused before the append: nothing reached the log, and the admission slot is back.
        Assert.Equal(EngineErrorCode.InvalidArgument, refused.Code);
        const string LocalPrefix = "the transaction's intention is refused before it is appended: ";
        Assert.StartsWith(LocalPrefix, refused.Message);
        var reason = refused.Message[LocalPrefix.Length..];
        Assert.Contains("is a blind write outside a read-committed write", reason);
        Assert.Equal(tail, await cluster.Log.TailAsync());
        Assert.Equal(1, local.Metrics.RefusedIntentions);
        Assert.Equal(0, local.InFlight);

        // The same intention written to the log (as a faulty peer would): every server rejects it
        // on its deserializer with the same reason, placed at its ordinal and position.
        var positions = new long[bad!.Parts.Count];
        for (var i = 0; i < positions.Length; i++)
        {
            positions[i] = await cluster.Log.AppendAsync(bad.Parts[i]);
        }

        var at = await cluster.Log.AppendAsync(bad.Finish(positions));
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Equal(2, rejections.Count);
        var ordinal = rejections.Keys.First().Ordinal;
        foreach (var s in new[] { 0, 1 })
        {
            Assert.Equal($"intention #{ordinal} at position {at} rejected: {reason}", rejections[(s, ordinal)]);
            Assert.Equal(1, cluster.Servers[s].Metrics.RejectedBlocks);
        }

        var after = await local.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(9), Value("still serving"))]);
        Assert.Equal(TransactionStatus.Committed, after.Status);
    }

    [Fact]
    public void ThePipelineOfAServerRefusesAnUnvalidatedIntentionSoFinalMeldNeverValidates()
    {
        var db = new Database();
        using var pipeline = new Tree.Pipeline.ThreadedPipeline(db, new Tree.Pipeline.PipelineOptions(0, 0), new Tree.Pipeline.PipelineRuntime { RequireValidated = true });
        using (var tx = db.Begin(IsolationLevel.Serializable))
        {
            tx.Put(Key(1), Value("a"));
            var intention = tx.Complete()!;
            db.Append(intention, 1, 1);
            Assert.False(intention.IsValidated);
            Assert.Throws<InvariantViolationException>(() => pipeline.Submit(intention));
            IntentionValidator.Validate(intention);
            pipeline.Submit(intention);
        }

        pipeline.WaitFor(1);
        Assert.Equal(1, db.Current.Sequence);
    }
}
