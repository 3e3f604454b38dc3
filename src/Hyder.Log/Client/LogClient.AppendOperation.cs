using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Log.Client;

public sealed partial class LogClient
{
    /// <summary>
    /// The common append as a pooled <see cref="IValueTaskSource{TResult}"/>: a token, then the
    /// chain written head first, every unit answering Ok. An async method's state machine box was
    /// one allocation per append (about 280 B, a quarter of a commit's garbage): the pooling
    /// builder keeps one box per thread and one per core, and group commit completes dozens of
    /// appends at once on one thread, so nearly every box was new. Anything else (no token, an
    /// unreachable unit, a unit that refuses the write) goes on in <see cref="AppendSlowAsync"/>
    /// from the same point, under the same rules.
    /// </summary>
    /// <remarks>
    /// Continuations run where the awaited operation completes, as the async method's did. Once an
    /// operation completes, its awaiter may take it back to the pool at once (and another append
    /// may rent it), so nothing here touches it after <see cref="Succeed"/> or <see cref="Fail"/>.
    /// </remarks>
    private sealed class AppendOperation : IValueTaskSource<long>
    {
        private const int MaxPooled = 1024;
        private static readonly ConcurrentQueue<AppendOperation> s_pool = new();
        private static int s_pooled;

        private readonly Action _tokenArrived;
        private readonly Action _writeAnswered;
        private readonly Action _slowDone;
        private ManualResetValueTaskSourceCore<long> _core;
        private LogClient _client = null!;
        private ReadOnlyMemory<byte> _block;
        private CancellationToken _cancellationToken;
        private ClientView _view = null!;
        private long _deadline;
        private long _address;
        private ILogUnit[] _chain = [];
        private int _unit;
        private ConfiguredValueTaskAwaitable<TokenReply>.ConfiguredValueTaskAwaiter _token;
        private ConfiguredValueTaskAwaitable<UnitReply>.ConfiguredValueTaskAwaiter _write;
        private ConfiguredValueTaskAwaitable<long>.ConfiguredValueTaskAwaiter _slow;

        private AppendOperation()
        {
            _tokenArrived = OnToken;
            _writeAnswered = OnWrite;
            _slowDone = OnSlow;
        }

        /// <summary>Appends <paramref name="block"/> (checked by the caller) through <paramref name="client"/>.</summary>
        public static ValueTask<long> Start(LogClient client, ReadOnlyMemory<byte> block, CancellationToken cancellationToken)
        {
            if (s_pool.TryDequeue(out var op))
            {
                Interlocked.Decrement(ref s_pooled);
            }
            else
            {
                op = new AppendOperation();
            }

            op._client = client;
            op._block = block;
            op._cancellationToken = cancellationToken;
            op._deadline = client.Deadline();
            op._view = client._view;
            var version = op._core.Version;
            op.RequestToken();
            return new ValueTask<long>(op, version);
        }

        private void RequestToken()
        {
            try
            {
                _token = AwaiterOf(_client._options.BatchTokens
                    ? _client._tokens.NextAsync(_view, _cancellationToken)
                    : _view.Sequencer.NextAsync(_view.Epoch, 1, _cancellationToken));
            }
            catch (UnitUnreachableException)
            {
                Slow(ChainOutcome.Void);
                return;
            }
            catch (Exception e)
            {
                Fail(e);
                return;
            }

            if (_token.IsCompleted)
            {
                OnToken();
            }
            else
            {
                _token.UnsafeOnCompleted(_tokenArrived);
            }
        }

        private void OnToken()
        {
            TokenReply token;
            try
            {
                token = _token.GetResult();
                _token = default;
                if (token.Status != LogStatus.Ok)
                {
                    ThrowUnlessRetryable(token.Status, -1);
                }
            }
            catch (UnitUnreachableException)
            {
                _token = default;
                Slow(ChainOutcome.Void);
                return;
            }
            catch (Exception e)
            {
                _token = default;
                Fail(e);
                return;
            }

            if (token.Status != LogStatus.Ok)
            {
                // No address: back off and ask again.
                Slow(ChainOutcome.Void);
                return;
            }

            _address = token.Address;
            _chain = _view.ChainFor(_address);
            _unit = 0;
            WriteNext();
        }

        /// <summary>Writes the chain's units in order from <see cref="_unit"/>, inline while they answer at once.</summary>
        private void WriteNext()
        {
            while (_unit < _chain.Length)
            {
                try
                {
                    _write = AwaiterOf(_chain[_unit].WriteAsync(_view.Epoch, _address, _block, _cancellationToken));
                }
                catch (UnitUnreachableException)
                {
                    Slow(ChainOutcome.Retry);
                    return;
                }
                catch (Exception e)
                {
                    Fail(e);
                    return;
                }

                if (!_write.IsCompleted)
                {
                    _write.UnsafeOnCompleted(_writeAnswered);
                    return;
                }

                if (!Written())
                {
                    return;
                }
            }

            Succeed(_address);
        }

        private void OnWrite()
        {
            if (Written())
            {
                WriteNext();
            }
        }

        /// <summary>
        /// True when unit <see cref="_unit"/> took the block (the next may be written); otherwise
        /// the append has been handed on or failed, by the rules of a first try (<see cref="Judge"/>).
        /// </summary>
        private bool Written()
        {
            ChainOutcome outcome;
            try
            {
                outcome = Judge(_write.GetResult().Status, _unit, retry: false, _address);
            }
            catch (UnitUnreachableException)
            {
                _write = default;
                Slow(ChainOutcome.Retry);
                return false;
            }
            catch (Exception e)
            {
                _write = default;
                Fail(e);
                return false;
            }

            _write = default;
            if (outcome == ChainOutcome.Done)
            {
                _unit++;
                return true;
            }

            Slow(outcome);
            return false;
        }

        /// <summary>Goes on in <see cref="AppendSlowAsync"/> from the chain write's (or the token's) outcome.</summary>
        private void Slow(ChainOutcome outcome)
        {
            try
            {
                _slow = AwaiterOf(_client.AppendSlowAsync(_block, _deadline, new AppendResume(_view, _address, outcome), _cancellationToken));
            }
            catch (Exception e)
            {
                Fail(e);
                return;
            }

            if (_slow.IsCompleted)
            {
                OnSlow();
            }
            else
            {
                _slow.UnsafeOnCompleted(_slowDone);
            }
        }

        private void OnSlow()
        {
            long address;
            try
            {
                address = _slow.GetResult();
            }
            catch (Exception e)
            {
                _slow = default;
                Fail(e);
                return;
            }

            _slow = default;
            Succeed(address);
        }

        /// <summary>The awaiter of <paramref name="operation"/>, consumed once: by its <c>GetResult</c> in the step that continues.</summary>
        private static ConfiguredValueTaskAwaitable<T>.ConfiguredValueTaskAwaiter AwaiterOf<T>(ValueTask<T> operation) =>
            operation.ConfigureAwait(false).GetAwaiter();

        private void Succeed(long address) => _core.SetResult(address);

        private void Fail(Exception e) => _core.SetException(e);

        long IValueTaskSource<long>.GetResult(short token)
        {
            try
            {
                return _core.GetResult(token);
            }
            finally
            {
                Recycle();
            }
        }

        ValueTaskSourceStatus IValueTaskSource<long>.GetStatus(short token) => _core.GetStatus(token);

        void IValueTaskSource<long>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);

        /// <summary>Forgets the append and goes back to the pool (its result has been taken).</summary>
        private void Recycle()
        {
            _client = null!;
            _block = default;
            _cancellationToken = default;
            _view = null!;
            _chain = [];
            _core.Reset();
            if (Interlocked.Increment(ref s_pooled) <= MaxPooled)
            {
                s_pool.Enqueue(this);
            }
            else
            {
                Interlocked.Decrement(ref s_pooled);
            }
        }
    }
}
