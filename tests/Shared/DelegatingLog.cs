using Hyder.Log;

namespace Hyder.Testing;

/// <summary>
/// A shared log that passes every call to <paramref name="inner"/>: a test overrides only the calls
/// it counts, holds or fails. Disposing it leaves the inner log alone (it belongs to whoever opened it).
/// </summary>
public abstract class DelegatingLog(ISharedLog inner) : ISharedLog
{
    /// <summary>The log the calls go to.</summary>
    protected ISharedLog Inner => inner;

    public int BlockSize => inner.BlockSize;

    public virtual ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default) => inner.AppendAsync(block, cancellationToken);

    public virtual ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default) => inner.ReadAsync(address, destination, cancellationToken);

    public virtual ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default) => inner.FillAsync(address, cancellationToken);

    public virtual ValueTask TrimAsync(long address, CancellationToken cancellationToken = default) => inner.TrimAsync(address, cancellationToken);

    public virtual ValueTask PrefixTrimAsync(long before, CancellationToken cancellationToken = default) => inner.PrefixTrimAsync(before, cancellationToken);

    public virtual ValueTask<long> TailAsync(CancellationToken cancellationToken = default) => inner.TailAsync(cancellationToken);

    public virtual IAsyncEnumerable<LogRecord> SubscribeAsync(long from, CancellationToken cancellationToken = default) => inner.SubscribeAsync(from, cancellationToken);

    public ValueTask DisposeAsync()
    {
        GC.SuppressFinalize(this);
        return ValueTask.CompletedTask;
    }
}
