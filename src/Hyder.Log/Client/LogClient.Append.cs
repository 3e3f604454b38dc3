using System.Runtime.CompilerServices;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Log.Client;

public sealed partial class LogClient
{
    /// <inheritdoc />
    /// <remarks>
    /// The common case (a token, then every unit of the chain answering Ok) runs as a pooled
    /// <see cref="AppendOperation"/> and allocates nothing; anything else continues in
    /// <see cref="AppendSlowAsync"/> from where it stood.
    /// </remarks>
    public ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
    {
        if (block.Length == 0 || block.Length > BlockSize)
        {
            throw new SharedLogException(LogStatus.WrongBlockSize, -1, $"A block holds 1 to {BlockSize} bytes, not {block.Length}.");
        }

        return AppendOperation.Start(this, block, cancellationToken);
    }

    /// <summary>Where the common path left an append it could not finish (<see cref="AppendOperation"/>).</summary>
    /// <param name="View">The view the token came from.</param>
    /// <param name="Address">The token's address (none for <see cref="ChainOutcome.Void"/> without a token).</param>
    /// <param name="Outcome">The chain write's outcome, as the loop in <see cref="AppendSlowAsync"/> would have found it on its first try.</param>
    private readonly record struct AppendResume(ClientView View, long Address, ChainOutcome Outcome);

    /// <summary>
    /// An append, from a new token or (<paramref name="resume"/>) from a first chain write the
    /// common path could not finish, with its retry rules: back off while there is no token; after
    /// a write the head may hold, keep the address through reconfigurations.
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<long> AppendSlowAsync(ReadOnlyMemory<byte> block, long deadline, AppendResume? resume, CancellationToken cancellationToken)
    {
        while (true)
        {
            var view = _view;
            long address;
            var retry = false;
            if (resume is { } from)
            {
                resume = null;
                view = from.View;
                address = from.Address;
                if (from.Outcome == ChainOutcome.Taken)
                {
                    continue;
                }

                await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                if (from.Outcome == ChainOutcome.Void)
                {
                    continue;
                }

                // Retry: the head may hold our block.
                retry = true;
            }
            else
            {
                try
                {
                    var token = _options.BatchTokens
                        ? await _tokens.NextAsync(view, cancellationToken).ConfigureAwait(false)
                        : await view.Sequencer.NextAsync(view.Epoch, 1, cancellationToken).ConfigureAwait(false);
                    if (token.Status != LogStatus.Ok)
                    {
                        ThrowUnlessRetryable(token.Status, -1);
                        await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                        continue;
                    }

                    address = token.Address;
                }
                catch (UnitUnreachableException)
                {
                    await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                    continue;
                }
            }

            // Once the head may hold our block (it accepted the write or did not answer), the token
            // stays ours through reconfigurations: a sealed head counts the address, so the new
            // sequencer starts above it. Retry the same address until the chain has the block or
            // someone else's block or fill took the address.
            var tokenEpoch = view.Epoch;
            if (retry)
            {
                view = _view;
            }

            while (true)
            {
                if (retry && view.Epoch != tokenEpoch && await VoidAfterReconfigurationAsync(view, address, cancellationToken).ConfigureAwait(false))
                {
                    break;
                }

                // The chain write is inlined (not a helper method): one state machine per append.
                var outcome = ChainOutcome.Done;
                var chain = view.ChainFor(address);
                for (var i = 0; i < chain.Length && outcome == ChainOutcome.Done; i++)
                {
                    UnitReply reply;
                    try
                    {
                        reply = await chain[i].WriteAsync(view.Epoch, address, block, cancellationToken).ConfigureAwait(false);
                    }
                    catch (UnitUnreachableException)
                    {
                        outcome = ChainOutcome.Retry;
                        break;
                    }

                    outcome = Judge(reply.Status, i, retry, address);
                    if (outcome == ChainOutcome.HeadHolds)
                    {
                        outcome = await HoldsAsync(chain[0], view.Epoch, address, block, cancellationToken).ConfigureAwait(false) ? ChainOutcome.Done : ChainOutcome.Taken;
                    }
                }

                if (outcome == ChainOutcome.Done)
                {
                    return address;
                }

                if (outcome == ChainOutcome.Taken)
                {
                    break;
                }

                if (outcome == ChainOutcome.Void)
                {
                    // Move to the new projection first, or the old sequencer may answer again.
                    await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                    break;
                }

                retry = true;
                await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                view = _view;
            }
        }
    }

    /// <summary>
    /// What unit <paramref name="unit"/> of the chain (0: the head) answering <paramref name="status"/>
    /// to the write of <paramref name="address"/> means, on the first try or a retry of that
    /// address: the one set of rules both append paths follow. Throws for an answer no retry mends.
    /// </summary>
    private static ChainOutcome Judge(LogStatus status, int unit, bool retry, long address) => status switch
    {
        LogStatus.Ok => ChainOutcome.Done,

        // The head decides who owns an address. After a failure our own earlier write may be the
        // one there (the caller compares it); anything else means a filler or writer won.
        LogStatus.Written when unit == 0 => retry ? ChainOutcome.HeadHolds : ChainOutcome.Taken,

        // Further down, a reader or filler completed the chain with the head's block: ours.
        LogStatus.Written => ChainOutcome.Done,
        LogStatus.Trimmed => ChainOutcome.Taken,

        // The head turned our first write away: no unit holds the block, the seal did not count
        // the address, and the new epoch's sequencer may hand it out again. The token is void
        // (invariant 7); retrying it would take the address from its new owner whenever the two
        // blocks are equal.
        LogStatus.StaleEpoch when unit == 0 && !retry => ChainOutcome.Void,
        LogStatus.StaleEpoch => ChainOutcome.Retry,
        _ => throw new SharedLogException(status, address, $"Writing address {address} failed: {status}."),
    };

    private async ValueTask<bool> HoldsAsync(ILogUnit unit, long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken)
    {
        var buffer = BufferPool.Arrays.Rent(BlockSize);
        try
        {
            var reply = await unit.ReadAsync(epoch, address, buffer, cancellationToken).ConfigureAwait(false);
            return reply.Status == LogStatus.Ok && buffer.AsSpan(0, (int)reply.Value).SequenceEqual(block.Span);
        }
        catch (UnitUnreachableException)
        {
            return false;
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }
    }

    /// <summary>
    /// Whether a token kept through a reconfiguration is void: the seal did not count its address,
    /// so the new sequencer hands it out again, and completing our write there would acknowledge a
    /// block above the new tail, invisible to readers until the log grows past it (found by the
    /// simulation, seeds 1711 and 1988). Two ways that happens: our write never reached the head
    /// (an unanswered write may not have been sent at all: a refused connection), or the head
    /// was unreachable during the seal and accepted our write of the old epoch after it. In the
    /// second case our block stays on the head, unacknowledged: a reader may complete the chain
    /// with it later, so the block can appear twice in the log (as any retried append can after
    /// a timeout).
    /// </summary>
    private async ValueTask<bool> VoidAfterReconfigurationAsync(ClientView view, long address, CancellationToken cancellationToken)
    {
        if (await HeadIsEmptyAsync(view.ChainFor(address)[0], view.Epoch, address, cancellationToken).ConfigureAwait(false))
        {
            return true;
        }

        try
        {
            var tail = await view.Sequencer.NextAsync(view.Epoch, 0, cancellationToken).ConfigureAwait(false);
            return tail.Status == LogStatus.Ok && tail.Address <= address;
        }
        catch (UnitUnreachableException)
        {
            return false;
        }
    }

    /// <summary>
    /// Whether the head certainly holds nothing at <paramref name="address"/> and never will from
    /// a write of an older epoch: the head is sealed at the client's epoch first (a no-op if the
    /// reconfiguration sealed it; it may have been skipped as unreachable), so a write of ours
    /// still in flight is turned away, then read.
    /// </summary>
    private async ValueTask<bool> HeadIsEmptyAsync(ILogUnit head, long epoch, long address, CancellationToken cancellationToken)
    {
        var buffer = BufferPool.Arrays.Rent(BlockSize);
        try
        {
            if ((await head.SealAsync(epoch, cancellationToken).ConfigureAwait(false)).Status != LogStatus.Ok)
            {
                return false;
            }

            var reply = await head.ReadAsync(epoch, address, buffer, cancellationToken).ConfigureAwait(false);
            return reply.Status == LogStatus.Unwritten;
        }
        catch (UnitUnreachableException)
        {
            return false;
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }
    }

    private enum ChainOutcome
    {
        Done,
        Taken,
        Retry,

        /// <summary>The token's epoch is over and no unit took our write: get a new token.</summary>
        Void,

        /// <summary>On a retry, the head holds a block at our address: ours if it is our block (<see cref="HoldsAsync"/>), else taken.</summary>
        HeadHolds,
    }
}
