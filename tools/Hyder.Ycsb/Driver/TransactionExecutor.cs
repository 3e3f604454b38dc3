using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Driver;

/// <summary>
/// Runs planned transactions on one session: encodes keys, fills values, times every operation and
/// commit, retries aborted attempts up to the limit and records the outcome. One per in-flight
/// slot; its buffers are reused, so it runs one transaction at a time.
/// </summary>
internal sealed class TransactionExecutor
{
    private readonly ITargetSession _session;
    private readonly IReadOnlyList<KeySpace> _spaces;
    private readonly KeyCodec _keys;
    private readonly MeasurementRecorder _recorder;
    private readonly int _maxRetries;
    private readonly CounterBounds _counters;
    private readonly byte[] _key;
    private readonly byte[] _value;
    private readonly byte[] _counter = new byte[8];
    private readonly bool _oneShot;
    private readonly bool _pipeline;
    private readonly List<OneShotOperation> _oneShotOperations = [];
    private readonly List<byte[]> _oneShotBuffers = [];
    private Rng _values;

    public TransactionExecutor(ITargetSession session, IReadOnlyList<KeySpace> spaces, KeyCodec keys, int valueSize, MeasurementRecorder recorder, int maxRetries, Rng values,
        CounterBounds counters, bool oneShot = false, bool pipeline = false)
    {
        _oneShot = oneShot && session.CanRunOneShot;
        _pipeline = pipeline && session.CanPipeline;
        _counters = counters;
        _session = session;
        _spaces = spaces;
        _keys = keys;
        _recorder = recorder;
        _maxRetries = maxRetries;
        _key = new byte[keys.KeySize];
        _value = new byte[valueSize];
        _values = values;
    }

    /// <summary>Runs <paramref name="plan"/> until it commits or the retries are used up; true when it committed.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<bool> RunAsync(TransactionPlan plan, CancellationToken cancellationToken)
    {
        var start = Clock.Now;
        var independent = (_oneShot || _pipeline) && IsOneShot(plan);
        for (var attempt = 0; ; attempt++)
        {
            var outcome = independent
                ? await RunOneShotAsync(plan, pipelined: !_oneShot, cancellationToken).ConfigureAwait(false)
                : await RunInteractiveAsync(plan, cancellationToken).ConfigureAwait(false);

            if (outcome.Committed)
            {
                _recorder.Commit(Clock.MicrosecondsSince(start));
                return true;
            }

            if (outcome.Cause == AbortCause.BoundViolated)
            {
                // A business outcome (out of stock), not a conflict: the same transaction would fail again.
                _recorder.BoundRejected(Clock.MicrosecondsSince(start));
                return false;
            }

            _recorder.Abort(outcome.Cause);
            if (attempt >= _maxRetries)
            {
                _recorder.GaveUp(Clock.MicrosecondsSince(start));
                return false;
            }
        }
    }

    /// <summary>Reads and updates of ordinary records only: no operation depends on another's result.</summary>
    private bool IsOneShot(TransactionPlan plan)
    {
        foreach (var operation in plan.Operations)
        {
            if (operation.Kind is not (OperationKind.Read or OperationKind.Update) || _spaces[operation.Space].Kind != ValueKind.Bytes)
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>
    /// The plan as one request (<c>--one-shot</c>), or as one pipelined interactive transaction
    /// (<paramref name="pipelined"/>: begin, the reads sent together, the writes and the commit
    /// behind them): the whole transaction is timed as the commit, and no operation is timed on its
    /// own (none has a latency of its own).
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<CommitOutcome> RunOneShotAsync(TransactionPlan plan, bool pipelined, CancellationToken cancellationToken)
    {
        _oneShotOperations.Clear();
        for (var i = 0; i < plan.Operations.Count; i++)
        {
            var operation = plan.Operations[i];
            var space = _spaces[operation.Space];
            var key = Buffer(2 * i, _keys.KeySize);
            _keys.Encode(operation.Key, key);
            ReadOnlyMemory<byte>? value = null;
            if (operation.Kind == OperationKind.Update)
            {
                var bytes = Buffer((2 * i) + 1, _value.Length);
                _values.NextBytes(bytes);
                value = bytes;
            }

            _oneShotOperations.Add(new OneShotOperation(space, key, value));
        }

        var start = Clock.Now;
        OneShotOutcome outcome;
        try
        {
            outcome = pipelined
                ? await _session.RunPipelinedAsync(plan.Isolation, _oneShotOperations, cancellationToken).ConfigureAwait(false)
                : await _session.RunOneShotAsync(plan.Isolation, _oneShotOperations, cancellationToken).ConfigureAwait(false);
        }
        catch (TransactionAbortedException e)
        {
            return CommitOutcome.Aborted(e.Cause);
        }

        _recorder.Record(Series.Commit, Clock.MicrosecondsSince(start));
        for (var i = 0; i < outcome.NotFound; i++)
        {
            _recorder.NotFound();
        }

        return outcome.Outcome;
    }

    /// <summary>The executor's own buffer number <paramref name="index"/>, reused from one transaction to the next.</summary>
    private byte[] Buffer(int index, int length)
    {
        while (_oneShotBuffers.Count <= index)
        {
            _oneShotBuffers.Add([]);
        }

        if (_oneShotBuffers[index].Length != length)
        {
            _oneShotBuffers[index] = new byte[length];
        }

        return _oneShotBuffers[index];
    }

    /// <summary>Begin, the operations one call each, then commit.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<CommitOutcome> RunInteractiveAsync(TransactionPlan plan, CancellationToken cancellationToken)
    {
        try
        {
            await _session.BeginAsync(plan.Isolation, plan.ReadOnly, cancellationToken).ConfigureAwait(false);
            foreach (var operation in plan.Operations)
            {
                await ExecuteAsync(operation, cancellationToken).ConfigureAwait(false);
            }

            var commitStart = Clock.Now;
            var outcome = await _session.CommitAsync(cancellationToken).ConfigureAwait(false);
            _recorder.Record(Series.Commit, Clock.MicrosecondsSince(commitStart));
            return outcome;
        }
        catch (TransactionAbortedException e)
        {
            await _session.RollbackAsync(cancellationToken).ConfigureAwait(false);
            return CommitOutcome.Aborted(e.Cause);
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask ExecuteAsync(Operation operation, CancellationToken cancellationToken)
    {
        var space = _spaces[operation.Space];
        _keys.Encode(operation.Key, _key);
        var start = Clock.Now;
        switch (operation.Kind)
        {
            case OperationKind.Read when space.Kind == ValueKind.Counter:
                var counter = await _session.ReadCounterAsync(space, _key, cancellationToken).ConfigureAwait(false);
                if (counter is null)
                {
                    _recorder.NotFound();
                }
                else if (!_counters.Check(counter.Value) || counter.Value < (operation.Min ?? long.MinValue) || counter.Value > (operation.Max ?? long.MaxValue))
                {
                    _recorder.InconsistentRead();
                }

                break;
            case OperationKind.Read:
                if (!await _session.GetAsync(space, _key, cancellationToken).ConfigureAwait(false))
                {
                    _recorder.NotFound();
                }

                break;
            case OperationKind.Update:
                await _session.PutAsync(space, _key, NextValue(space), cancellationToken).ConfigureAwait(false);
                break;
            case OperationKind.Insert:
                await _session.InsertAsync(space, _key, NextValue(space), cancellationToken).ConfigureAwait(false);
                break;
            case OperationKind.Scan:
                await _session.ScanAsync(space, _key, (int)operation.Count, cancellationToken).ConfigureAwait(false);
                break;
            case OperationKind.Delete:
                await _session.DeleteAsync(space, _key, cancellationToken).ConfigureAwait(false);
                break;
            case OperationKind.Add:
                _counters.Issue(operation.Count);
                await _session.AddAsync(space, _key, operation.Count, operation.Min, operation.Max, cancellationToken).ConfigureAwait(false);
                break;
            case OperationKind.ReadModifyWrite:
                var read = Clock.Now;
                if (!await _session.GetAsync(space, _key, cancellationToken).ConfigureAwait(false))
                {
                    _recorder.NotFound();
                }

                var write = Clock.Now;
                _recorder.Record(Series.Read, Clock.Microseconds(read, write));
                await _session.PutAsync(space, _key, NextValue(space), cancellationToken).ConfigureAwait(false);
                _recorder.Record(Series.Update, Clock.MicrosecondsSince(write));
                break;
            default:
                throw new ArgumentOutOfRangeException(nameof(operation), operation.Kind, null);
        }

        _recorder.Record((Series)(int)operation.Kind, Clock.MicrosecondsSince(start));
    }

    /// <summary>A fresh random value; for counters, loads write 0 and updates a random amount below 2^32.</summary>
    private ReadOnlyMemory<byte> NextValue(KeySpace space)
    {
        if (space.Kind == ValueKind.Counter)
        {
            BinaryPrimitives.WriteInt64LittleEndian(_counter, 0);
            return _counter;
        }

        _values.NextBytes(_value);
        return _value;
    }
}
