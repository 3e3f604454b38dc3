using System.Buffers.Binary;
using Hyder.Server.Cluster;
using Hyder.Tree;
using Hyder.Tree.Pipeline;

namespace Hyder.Benchmarks.Server;

/// <summary>The workload every configuration runs (Hyder II §6.1): what changes is only the pipeline and isolation.</summary>
/// <param name="Keys">Keys loaded (4-byte big-endian integers 0..Keys − 1).</param>
/// <param name="PayloadBytes">Bytes per payload.</param>
/// <param name="Reads">Reads per transaction.</param>
/// <param name="Writes">Writes per transaction (keys distinct from each other and from the reads).</param>
/// <param name="Clients">Concurrent clients (async tasks, one transaction each at a time).</param>
/// <param name="LoadBatch">Puts per loading transaction.</param>
/// <param name="Warmup">Run before measuring.</param>
/// <param name="Duration">Measured.</param>
internal sealed record ServerWorkload(int Keys, int PayloadBytes, int Reads, int Writes, int Clients, int LoadBatch, TimeSpan Warmup, TimeSpan Duration)
{
    private byte[][]? _keys;

    /// <summary>Every key, made once: clients allocate nothing per transaction, so allocations are the server's.</summary>
    public byte[][] KeyTable => _keys ??= MakeKeys(Keys);

    private static byte[][] MakeKeys(int count)
    {
        var keys = new byte[count][];
        for (var i = 0; i < count; i++)
        {
            keys[i] = new byte[4];
            BinaryPrimitives.WriteInt32BigEndian(keys[i], i);
        }

        return keys;
    }
}

/// <summary>One configuration of the server benchmark.</summary>
/// <param name="Name">Its name in the report.</param>
/// <param name="Cluster">The pipeline (t, d, group meld).</param>
/// <param name="Isolation">The transactions' isolation level.</param>
/// <param name="Threading">The stage threads' spinning and pinning; null for the server's default (resolved per machine).</param>
internal sealed record ServerConfig(string Name, ClusterSettings Cluster, IsolationLevel Isolation, PipelineThreading? Threading = null);
