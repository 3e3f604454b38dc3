using System.Runtime.CompilerServices;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// An engine that commits everything at once, so the service's request checks and mappings are
/// what a case exercises (the engine's own behaviour has its own tests).
/// </summary>
internal sealed class FakeEngine : ITransactionEngine
{
    private static readonly KeyValuePair<byte[], byte[]>[] s_rows = [new([1], [2]), new([3], [4, 5])];

    public EngineLimits Limits { get; } = new() { MaxKeyBytes = 64, MaxValueBytes = 256, MaxOperations = 32, MaxScanRows = 100 };

    public ValueTask<TransactionOutcome> ExecuteAsync(IsolationLevel isolation, IReadOnlyList<Operation> operations, CancellationToken cancellationToken = default) =>
        ValueTask.FromResult(new TransactionOutcome(TransactionStatus.Committed, AbortCause.None, null, 7, 6, [.. operations.Select(Result)]));

    public IInteractiveTransaction Begin(IsolationLevel isolation) => new Interactive(isolation);

    public async IAsyncEnumerable<KeyValuePair<byte[], byte[]>> ScanAsync(byte[]? low, byte[]? high, int limit, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        await Task.CompletedTask.ConfigureAwait(false);
        foreach (var row in s_rows.Take(limit == 0 ? s_rows.Length : limit))
        {
            yield return row;
        }
    }

    public ValueTask<ClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default) =>
        ValueTask.FromResult(new ClusterStatus { ServerId = "fuzz", Pipeline = "t=0" });

    public ValueTask<StateHash> GetStateHashAsync(long atLeastOrdinal = 0, CancellationToken cancellationToken = default) =>
        ValueTask.FromResult(new StateHash(atLeastOrdinal, atLeastOrdinal, 42));

    public ValueTask WaitForMeldedAsync(long ordinal, CancellationToken cancellationToken = default) => default;

    public ValueTask<long> CheckpointAsync(CancellationToken cancellationToken = default) => ValueTask.FromResult(5L);

    private static OperationResult Result(Operation operation) => operation.Kind switch
    {
        OperationKind.Get => new OperationResult(true, [9]),
        OperationKind.Scan => new OperationResult(true, Rows: s_rows),
        _ => OperationResult.Done,
    };

    private sealed class Interactive(IsolationLevel isolation) : IInteractiveTransaction
    {
        public long SnapshotSequence => 6;

        public IsolationLevel Isolation => isolation;

        public OperationResult Execute(Operation operation) => Result(operation);

        public ValueTask<TransactionOutcome> CommitAsync(CancellationToken cancellationToken = default) =>
            ValueTask.FromResult(new TransactionOutcome(TransactionStatus.Committed, AbortCause.None, null, 8, 6, []));

        public void Abort()
        {
        }

        public ValueTask DisposeAsync() => default;
    }
}
