using System.Text;
using Hyder.Checker;
using Hyder.Client;

namespace Hyder.Soak.Workload;

/// <summary>What <see cref="Verifier"/> found after a run.</summary>
/// <param name="Ordinal">The ordinal every server reached.</param>
/// <param name="Hashes">Each server's state hash at <paramref name="Ordinal"/>.</param>
/// <param name="Acknowledged">Appends whose transactions committed.</param>
/// <param name="Lost">Acknowledged appends missing from some server's final read (server, key, value).</param>
/// <param name="Check">The checker's verdict on the history with the final reads (serializable).</param>
public sealed record Verification(long Ordinal, IReadOnlyList<HyderStateHash> Hashes, int Acknowledged, IReadOnlyList<string> Lost, CheckResult Check)
{
    /// <summary>Every server at the same ordinal with the same hash.</summary>
    public bool Converged => Hashes.Count > 0 && Hashes.All(h => h.Ordinal == Ordinal && h.Hash == Hashes[0].Hash);

    /// <summary>Converged, nothing lost, the history serializable.</summary>
    public bool Passed => Converged && Lost.Count == 0 && Check.Valid;

    public override string ToString()
    {
        var text = new StringBuilder();
        text.AppendLine($"servers at ordinal {Ordinal}: {string.Join(", ", Hashes.Select((h, i) => $"server-{i + 1} ordinal {h.Ordinal} hash {h.Hash:x16}"))} ({(Converged ? "converged" : "DIVERGED")})");
        text.AppendLine($"acknowledged appends: {Acknowledged}, lost: {Lost.Count}{(Lost.Count == 0 ? "" : " — " + string.Join("; ", Lost.Take(20)))}");
        text.Append(Check.ToString());
        return text.ToString();
    }
}

/// <summary>
/// The end of a run: waits until every server melded the same ordinal and compares their state
/// hashes, reads every list on every server, checks that every acknowledged append is there, and
/// runs the checker (serializable) on the history plus those reads.
/// </summary>
public static class Verifier
{
    /// <summary>Keys per final read.</summary>
    public const int ReadBatch = 1000;

    /// <summary>Verifies; the workload must have stopped. <paramref name="firstProcess"/> numbers the final readers in the history.</summary>
    public static Task<Verification> VerifyAsync(IReadOnlyList<HyderClient> clients, HistoryRecorder recorder, int firstProcess, TimeSpan timeout, CancellationToken cancellationToken = default) =>
        VerifyAsync(clients, recorder, firstProcess, timeout, DeletedLists.None, cancellationToken);

    /// <summary>
    /// Verifies a run whose workload deleted lists (a bounded data set; the workload must have
    /// stopped): the deleted lists in <paramref name="deleted"/> are not read at the end; their
    /// acknowledged appends are looked for in the read of their delete transaction, and those of
    /// unverified deletes are not looked for. <paramref name="firstProcess"/> numbers the final readers in the history.
    /// </summary>
    public static async Task<Verification> VerifyAsync(IReadOnlyList<HyderClient> clients, HistoryRecorder recorder, int firstProcess, TimeSpan timeout, DeletedLists deleted, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(deleted);
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        deadline.CancelAfter(timeout);
        var (ordinal, hashes) = await ConvergeAsync(clients, deadline.Token).ConfigureAwait(false);

        var keys = recorder.Build().Ops.SelectMany(o => o.Txn).Where(m => m.IsList && !deleted.Contains(m.Key)).Select(m => m.Key).Distinct().Order().ToArray();
        var finalReads = new List<Dictionary<long, long[]>>();
        for (var s = 0; s < clients.Count; s++)
        {
            // In reads of at most ReadBatch keys (a server's operation limit is 1,024 by default),
            // each its own read-only transaction; the log is quiet, so they all read one state.
            var reads = new Dictionary<long, long[]>();
            foreach (var batch in keys.Chunk(ReadBatch))
            {
                recorder.Invoke(firstProcess + s, [.. batch.Select(Mop.ReadUnknown)]);
                var values = await clients[s].ReadAsync(batch.Select(ListCodec.Key), deadline.Token).ConfigureAwait(false);
                for (var i = 0; i < batch.Length; i++)
                {
                    reads[batch[i]] = ListCodec.Decode(values[i]);
                }

                recorder.Ok(firstProcess + s, [.. batch.Select(k => Mop.Read(k, reads[k]))]);
            }

            finalReads.Add(reads);
        }

        var acknowledged = recorder.Acknowledged;
        var lost = new List<string>();
        for (var s = 0; s < finalReads.Count; s++)
        {
            var present = finalReads[s].SelectMany(kv => kv.Value.Select(v => (kv.Key, v))).ToHashSet();
            lost.AddRange(acknowledged.Where(a => !deleted.Contains(a.Key) && !present.Contains(a)).Select(a => $"server-{s + 1} list {a.Key} lacks {a.Value}"));
        }

        lost.AddRange(acknowledged.Where(a => deleted.Reads.TryGetValue(a.Key, out var list) && !list.Contains(a.Value)).Select(a => $"deleted list {a.Key} lacked {a.Value} when it was deleted"));

        var check = HistoryChecker.Check(recorder.Build(), new CheckOptions { Model = ConsistencyModel.Serializable });
        return new Verification(ordinal, hashes, acknowledged.Count, lost, check);
    }

    /// <summary>
    /// Every server at the highest ordinal any of them reports, with its hash there. The log is
    /// quiet once the workload stopped, so the servers meet at one ordinal; a server that reports
    /// a higher one than the target restarts the round.
    /// </summary>
    public static async Task<(long Ordinal, IReadOnlyList<HyderStateHash> Hashes)> ConvergeAsync(IReadOnlyList<HyderClient> clients, CancellationToken cancellationToken)
    {
        while (true)
        {
            long target = 0;
            foreach (var client in clients)
            {
                target = Math.Max(target, (await client.GetStatusAsync(cancellationToken).ConfigureAwait(false)).LastMelded);
            }

            var hashes = new HyderStateHash[clients.Count];
            for (var i = 0; i < clients.Count; i++)
            {
                hashes[i] = await clients[i].GetStateHashAsync(target, cancellationToken).ConfigureAwait(false);
            }

            if (hashes.All(h => h.Ordinal == target))
            {
                return (target, hashes);
            }

            await Task.Delay(200, cancellationToken).ConfigureAwait(false);
        }
    }
}
