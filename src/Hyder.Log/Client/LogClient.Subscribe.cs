using System.Runtime.CompilerServices;

namespace Hyder.Log.Client;

public sealed partial class LogClient
{
    /// <inheritdoc />
    public async IAsyncEnumerable<LogRecord> SubscribeAsync(long from, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ThrowIfOutOfRange(from);
        var buffer = BufferPool.Arrays.Rent(BlockSize);
        try
        {
            var address = from;
            var tail = -1L;
            var holeSince = -1L;
            var pause = TimeSpan.FromMilliseconds(1);
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var read = await ReadAsync(address, buffer, cancellationToken).ConfigureAwait(false);
                if (read.Kind != LogEntryKind.Unwritten)
                {
                    holeSince = -1;
                    pause = TimeSpan.FromMilliseconds(1);
                    if (read.Kind == LogEntryKind.Data)
                    {
                        yield return new LogRecord(address, buffer.AsMemory(0, read.Length));
                    }

                    address++;
                    continue;
                }

                if (address >= tail)
                {
                    tail = await TailAsync(cancellationToken).ConfigureAwait(false);
                }

                if (address < tail)
                {
                    // A hole below the tail: a writer holds the token. Give it the configured time,
                    // then fill; if the writer wins the race the fill answers its block instead.
                    var now = Now();
                    if (holeSince < 0)
                    {
                        holeSince = now;
                    }

                    if (now - holeSince >= _options.HoleFillDelay.TotalMilliseconds)
                    {
                        await FillAsync(address, cancellationToken).ConfigureAwait(false);
                        continue;
                    }
                }

                await Task.Delay(pause, _options.TimeProvider, cancellationToken).ConfigureAwait(false);
                pause = TimeSpan.FromTicks(Math.Min(pause.Ticks * 2, _options.MaxTailPollInterval.Ticks));
            }
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }
    }
}
