namespace Hyder.Log.Layout;

/// <summary>
/// The durable home of projections. It accepts exactly one projection per epoch, and only the
/// epoch after the latest (compare-and-swap on the epoch), so racing reconfigurations agree.
/// </summary>
public interface IProjectionStore
{
    /// <summary>The projection with the highest epoch, or null before the first.</summary>
    Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Installs <paramref name="projection"/> if its epoch is 1 and the store is empty, or if the
    /// latest projection's epoch is exactly one less; false if another projection won that epoch.
    /// </summary>
    Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default);
}

/// <summary>A projection store in memory, for tests and the in-memory embedded log.</summary>
public sealed class MemoryProjectionStore : IProjectionStore
{
    private readonly object _lock = new();
    private readonly List<string> _epochs = [];

    /// <inheritdoc />
    public Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default)
    {
        lock (_lock)
        {
            return Task.FromResult(_epochs.Count == 0 ? null : Projection.FromJson(_epochs[^1]));
        }
    }

    /// <inheritdoc />
    public Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        projection.Validate();
        lock (_lock)
        {
            if (projection.Epoch != _epochs.Count + 1)
            {
                return Task.FromResult(false);
            }

            _epochs.Add(projection.ToJson());
            return Task.FromResult(true);
        }
    }
}
