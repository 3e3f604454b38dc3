using System.Buffers;
using Hyder.Log.Layout;
using Hyder.Log.Units;

namespace Hyder.Log.Admin;

public sealed partial class LogAdmin
{
    private const int CopyWindow = 32;

    /// <summary>
    /// Copies, for every chain that holds <paramref name="failed"/>, each address of that chain up
    /// to <paramref name="tail"/> from the last surviving replica to <paramref name="replacement"/>:
    /// blocks, fills and trims. Runs after the seal, so no client changes those replicas meanwhile.
    /// </summary>
    private async Task CopyChainsAsync(Projection current, long epoch, string failed, string replacement, long tail, CancellationToken cancellationToken)
    {
        await SealUnitsAsync([replacement], epoch, cancellationToken).ConfigureAwait(false);
        var target = _connector.Unit(replacement);
        for (var r = 0; r < current.Ranges.Count; r++)
        {
            var range = current.Ranges[r];
            var end = r + 1 < current.Ranges.Count ? Math.Min(current.Ranges[r + 1].Start - 1, tail) : tail;
            var k = range.Chains.Count;
            for (var c = 0; c < k; c++)
            {
                var chain = range.Chains[c];
                if (!chain.Contains(failed))
                {
                    continue;
                }

                var survivors = chain.Where(u => u != failed).Select(_connector.Unit).ToArray();
                if (survivors.Length == 0)
                {
                    throw new SharedLogException(LogStatus.Failed, -1, $"Chain [{string.Join(", ", chain)}] has no replica left to copy from.");
                }

                var copied = 0;
                var batch = new List<long>(CopyWindow);
                for (var address = range.Start + c; address <= end; address += k)
                {
                    batch.Add(address);
                    if (batch.Count == CopyWindow || address + k > end)
                    {
                        var counts = await Task.WhenAll(batch.Select(a => CopyOneAsync(survivors, target, epoch, a, current.BlockSize, cancellationToken))).ConfigureAwait(false);
                        copied += counts.Sum();
                        batch.Clear();
                    }
                }

                var source = chain.Last(u => u != failed);
                LogCopied(copied, chain, replacement, source);
            }
        }
    }

    private static async Task<int> CopyOneAsync(ILogUnit[] survivors, ILogUnit target, long epoch, long address, int blockSize, CancellationToken cancellationToken)
    {
        var buffer = BufferPool.Arrays.Rent(blockSize);
        try
        {
            // The last survivor is nearest the tail; earlier ones may also hold a half-written
            // (never acknowledged) block, which is fine to copy or to leave.
            for (var i = survivors.Length - 1; i >= 0; i--)
            {
                var read = await survivors[i].ReadAsync(epoch, address, buffer, cancellationToken).ConfigureAwait(false);
                UnitReply written;
                switch (read.Status)
                {
                    case LogStatus.Ok:
                        written = await target.WriteAsync(epoch, address, buffer.AsMemory(0, (int)read.Value), cancellationToken).ConfigureAwait(false);
                        break;
                    case LogStatus.Filled:
                        written = await target.FillAsync(epoch, address, cancellationToken).ConfigureAwait(false);
                        break;
                    case LogStatus.Trimmed:
                        written = await target.TrimAsync(epoch, address, cancellationToken).ConfigureAwait(false);
                        break;
                    case LogStatus.Unwritten:
                        return 0;
                    case LogStatus.Corrupt:
                        continue;
                    default:
                        throw new SharedLogException(read.Status, address, $"Reading address {address} for the copy answered {read.Status}.");
                }

                if (written.Status is not (LogStatus.Ok or LogStatus.Written))
                {
                    throw new SharedLogException(written.Status, address, $"Copying address {address} to the replacement answered {written.Status}.");
                }

                return 1;
            }

            throw new LogCorruptionException(address, $"Every surviving replica of address {address} is corrupt; the copy stops.");
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }
    }
}
