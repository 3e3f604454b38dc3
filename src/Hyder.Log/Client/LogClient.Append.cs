using System.Runtime.CompilerServices;
using Hyder.Log.Transport;
using Hyder.Log.Units;

namespace Hyder.Log.Client;

public sealed partial class LogClient
{
    /// <inheritdoc />
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
    {
        if (block.Length == 0 || block.Length > BlockSize)
        {
            throw new SharedLogException(LogStatus.WrongBlockSize, -1, $"A block holds 1 to {BlockSize} bytes, not {block.Length}.");
        }

        var deadline = Deadline();
        while (true)
        {
            var view = _view;
            long address;
            try
            {
                var token = await view.Sequencer.NextAsync(view.Epoch, 1, cancellationToken).ConfigureAwait(false);
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

            // The token stays ours through reconfigurations: retry the same address until the
            // chain has the block or someone else's block or fill took the address.
            var retry = false;
            while (true)
            {
                var outcome = await WriteChainAsync(view, address, block, retry, cancellationToken).ConfigureAwait(false);
                if (outcome == ChainOutcome.Done)
                {
                    return address;
                }

                if (outcome == ChainOutcome.Taken)
                {
                    break;
                }

                retry = true;
                await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
                view = _view;
            }
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<ChainOutcome> WriteChainAsync(
        ClientView view, long address, ReadOnlyMemory<byte> block, bool retry, CancellationToken cancellationToken)
    {
        var chain = view.ChainFor(address);
        for (var i = 0; i < chain.Length; i++)
        {
            UnitReply reply;
            try
            {
                reply = await chain[i].WriteAsync(view.Epoch, address, block, cancellationToken).ConfigureAwait(false);
            }
            catch (UnitUnreachableException)
            {
                return ChainOutcome.Retry;
            }

            switch (reply.Status)
            {
                case LogStatus.Ok:
                    continue;
                case LogStatus.Written when i == 0:
                    // The head decides who owns an address. After a failure our own earlier write
                    // may be the one there; anything else means a filler or another writer won.
                    if (!retry || !await HoldsAsync(chain[0], view.Epoch, address, block, cancellationToken).ConfigureAwait(false))
                    {
                        return ChainOutcome.Taken;
                    }

                    continue;
                case LogStatus.Written:
                    // A reader or filler completed the chain with the head's block, which is ours.
                    continue;
                case LogStatus.Trimmed:
                    return ChainOutcome.Taken;
                case LogStatus.StaleEpoch:
                    return ChainOutcome.Retry;
                default:
                    throw new SharedLogException(reply.Status, address, $"Writing address {address} failed: {reply.Status}.");
            }
        }

        return ChainOutcome.Done;
    }

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

    private enum ChainOutcome
    {
        Done,
        Taken,
        Retry,
    }
}
