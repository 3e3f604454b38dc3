using System.Runtime.CompilerServices;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Client;

public sealed partial class LogClient
{
    /// <inheritdoc />
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default)
    {
        ThrowIfOutOfRange(address);
        var deadline = Deadline();
        while (true)
        {
            var view = _view;
            var chain = view.ChainFor(address);
            try
            {
                var reply = await chain[^1].ReadAsync(view.Epoch, address, destination, cancellationToken).ConfigureAwait(false);
                switch (reply.Status)
                {
                    case LogStatus.Ok:
                        return new LogRead(LogEntryKind.Data, (int)reply.Value);
                    case LogStatus.Filled:
                        return new LogRead(LogEntryKind.Filled, 0);
                    case LogStatus.Unwritten:
                        var completed = await CompleteChainAsync(view, chain, address, destination, cancellationToken).ConfigureAwait(false);
                        if (completed is { } read)
                        {
                            return read;
                        }

                        break;
                    case LogStatus.Corrupt:
                        LogCorruptReplica(address, view.Epoch);
                        var repaired = await ReadFromOtherReplicasAsync(view, chain, address, destination, cancellationToken).ConfigureAwait(false);
                        if (repaired is { } good)
                        {
                            return good;
                        }

                        throw new LogCorruptionException(address, $"Every replica of address {address} failed its checksum.");
                    default:
                        ThrowUnlessRetryable(reply.Status, address);
                        break;
                }
            }
            catch (UnitUnreachableException)
            {
                // The tail is down: wait for it (or for the projection that replaces it). A block
                // or fill that only replicas before the tail hold is decided but not durable: if
                // such a replica then dies for good, the replacement is copied from the tail and
                // the address reads unwritten, so a reader answered from it would disagree with
                // every later one (docs/log.md; the simulation's seed 147 with --replace-units).
            }

            await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The tail has nothing: if the head has a block or a fill, a writer or filler stopped half way,
    /// so copy it down the chain and answer it; null means retry under a newer projection.
    /// </summary>
    private async ValueTask<LogRead?> CompleteChainAsync(
        ClientView view, ILogUnit[] chain, long address, Memory<byte> destination, CancellationToken cancellationToken)
    {
        if (chain.Length == 1)
        {
            return new LogRead(LogEntryKind.Unwritten, 0);
        }

        var head = await chain[0].ReadAsync(view.Epoch, address, destination, cancellationToken).ConfigureAwait(false);
        switch (head.Status)
        {
            case LogStatus.Unwritten:
                return new LogRead(LogEntryKind.Unwritten, 0);
            case LogStatus.Ok:
                var length = (int)head.Value;
                return await CopyDownAsync(view, chain, 1, address, destination[..length], cancellationToken).ConfigureAwait(false)
                    ? new LogRead(LogEntryKind.Data, length)
                    : null;
            case LogStatus.Filled:
                return await CopyDownAsync(view, chain, 1, address, null, cancellationToken).ConfigureAwait(false)
                    ? new LogRead(LogEntryKind.Filled, 0)
                    : null;
            default:
                ThrowUnlessRetryable(head.Status, address);
                return null;
        }
    }

    /// <summary>Writes a block (or a fill, when <paramref name="block"/> is null) to replicas from <paramref name="from"/> on.</summary>
    private static async ValueTask<bool> CopyDownAsync(
        ClientView view, ILogUnit[] chain, int from, long address, ReadOnlyMemory<byte>? block, CancellationToken cancellationToken)
    {
        for (var i = from; i < chain.Length; i++)
        {
            var reply = block is { } data
                ? await chain[i].WriteAsync(view.Epoch, address, data, cancellationToken).ConfigureAwait(false)
                : await chain[i].FillAsync(view.Epoch, address, cancellationToken).ConfigureAwait(false);
            if (reply.Status is not (LogStatus.Ok or LogStatus.Written))
            {
                ThrowUnlessRetryable(reply.Status, address);
                return false;
            }
        }

        return true;
    }

    private async ValueTask<LogRead?> ReadFromOtherReplicasAsync(
        ClientView view, ILogUnit[] chain, long address, Memory<byte> destination, CancellationToken cancellationToken)
    {
        for (var i = chain.Length - 2; i >= 0; i--)
        {
            UnitReply reply;
            try
            {
                reply = await chain[i].ReadAsync(view.Epoch, address, destination, cancellationToken).ConfigureAwait(false);
            }
            catch (UnitUnreachableException)
            {
                continue;
            }

            if (reply.Status == LogStatus.Ok)
            {
                return new LogRead(LogEntryKind.Data, (int)reply.Value);
            }

            if (reply.Status == LogStatus.Filled)
            {
                return new LogRead(LogEntryKind.Filled, 0);
            }
        }

        return null;
    }

    /// <inheritdoc />
    public async ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default)
    {
        ThrowIfOutOfRange(address);
        var deadline = Deadline();
        while (true)
        {
            var view = _view;
            var chain = view.ChainFor(address);
            try
            {
                var head = await chain[0].FillAsync(view.Epoch, address, cancellationToken).ConfigureAwait(false);
                if (head.Status == LogStatus.Written)
                {
                    // A writer got there first: its block stays, and the chain is completed with it.
                    var buffer = BufferPool.Arrays.Rent(BlockSize);
                    try
                    {
                        var read = await ReadAsync(address, buffer, cancellationToken).ConfigureAwait(false);
                        return read.Kind;
                    }
                    finally
                    {
                        BufferPool.Arrays.Return(buffer);
                    }
                }

                if (head.Status == LogStatus.Ok && await CopyDownAsync(view, chain, 1, address, null, cancellationToken).ConfigureAwait(false))
                {
                    return LogEntryKind.Filled;
                }

                if (head.Status != LogStatus.Ok)
                {
                    ThrowUnlessRetryable(head.Status, address);
                }
            }
            catch (UnitUnreachableException)
            {
            }

            await BackOffAsync(view, deadline, cancellationToken).ConfigureAwait(false);
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The tail replica of address {Address} (epoch {Epoch}) answered Corrupt; reading the other replicas")]
    private partial void LogCorruptReplica(long address, long epoch);
}
