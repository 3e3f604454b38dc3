namespace Hyder.Client;

public sealed partial class HyderClient
{
    /// <summary>
    /// Runs <paramref name="body"/> in an interactive transaction and commits it (unless the body
    /// committed or aborted it itself); when the transaction aborts, runs it again in a new
    /// transaction after a capped, jittered exponential backoff, up to
    /// <see cref="HyderClientSettings.MaxRetries"/> times. The body must be safe to run again.
    /// Aborts the data causes (<see cref="BoundViolatedException"/>, <see cref="TypeMismatchException"/>:
    /// <see cref="TransactionAbortedException.IsRetryable"/> is false) are thrown at once, not retried.
    /// </summary>
    /// <param name="body">The transaction's work.</param>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="cancellationToken">Cancels the transaction and the backoff.</param>
    /// <returns>A task that completes when a run committed.</returns>
    /// <exception cref="TransactionAbortedException">The last retry aborted too.</exception>
    public Task ReadWriteAsync(Func<HyderTransaction, Task> body, IsolationLevel isolation = IsolationLevel.Serializable, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(body);
        return ReadWriteAsync<bool>(
            async tx =>
            {
                await body(tx).ConfigureAwait(false);
                return true;
            },
            isolation,
            cancellationToken);
    }

    /// <summary>
    /// Runs <paramref name="body"/> in an interactive transaction, commits it and returns the body's
    /// result from the run that committed; retries aborted runs as
    /// <see cref="ReadWriteAsync(Func{HyderTransaction, Task}, IsolationLevel, CancellationToken)"/> does.
    /// </summary>
    /// <typeparam name="T">The body's result.</typeparam>
    /// <param name="body">The transaction's work.</param>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="cancellationToken">Cancels the transaction and the backoff.</param>
    /// <returns>The committed run's result.</returns>
    /// <exception cref="TransactionAbortedException">The last retry aborted too.</exception>
    public async Task<T> ReadWriteAsync<T>(Func<HyderTransaction, Task<T>> body, IsolationLevel isolation = IsolationLevel.Serializable, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(body);
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                var transaction = await BeginAsync(isolation, cancellationToken).ConfigureAwait(false);
                await using (transaction.ConfigureAwait(false))
                {
                    var result = await body(transaction).ConfigureAwait(false);
                    if (transaction.IsActive)
                    {
                        await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                    }

                    return result;
                }
            }
            catch (TransactionAbortedException e) when (e.IsRetryable)
            {
                if (attempt >= Settings.MaxRetries)
                {
                    Log.GivingUp(_logger, e.Cause, e.Detail, Settings.MaxRetries);
                    throw;
                }

                var delay = Backoff(attempt);
                Log.Retrying(_logger, e.Cause, e.Detail, attempt + 1, Settings.MaxRetries, delay.TotalMilliseconds);
                s_retries.Add(1);
                await Task.Delay(delay, cancellationToken).ConfigureAwait(false);
            }
        }
    }

    /// <summary>Equal jitter: half the capped exponential delay, plus a random part of the other half.</summary>
    internal TimeSpan Backoff(int attempt)
    {
        var capped = Math.Min(Settings.MaxRetryDelay.TotalMilliseconds, Settings.RetryDelay.TotalMilliseconds * Math.Pow(2, Math.Min(attempt, 30)));
        return TimeSpan.FromMilliseconds((capped / 2) + (Random.Shared.NextDouble() * capped / 2));
    }
}
