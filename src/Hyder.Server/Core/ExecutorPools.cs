using Hyder.Tree.Memory;
using Microsoft.Extensions.ObjectPool;

namespace Hyder.Server.Core;

/// <summary>
/// The node pools executors build their transactions from, each joined to final meld's
/// <see cref="NodeExchange"/>: the nodes final meld reclaims come back to the executors in
/// batches, so a steady stream of transactions allocates no nodes (DESIGN §7). A transaction
/// rents one pool for its life (an interactive one's operations may arrive on any thread, one at
/// a time) and gives it back when it commits or aborts.
/// </summary>
internal sealed class ExecutorPools
{
    /// <summary>A pool's capacity: its exchange reserve and one batch.</summary>
    private const int Capacity = NodeExchange.Reserve + NodeExchange.BatchSize;

    private readonly DefaultObjectPool<NodePool> _pools;

    public ExecutorPools(NodeExchange? exchange, int retained) =>
        _pools = new DefaultObjectPool<NodePool>(new Policy(exchange), retained);

    public NodePool Rent() => _pools.Get();

    public void Return(NodePool pool) => _pools.Return(pool);

    private sealed class Policy(NodeExchange? exchange) : IPooledObjectPolicy<NodePool>
    {
        public NodePool Create() => new(Capacity, exchange);

        // A pool comes back holding free nodes, which is the point: it is reused as it is.
        public bool Return(NodePool obj) => true;
    }
}
