using Hyder.Log.Layout;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// The production <see cref="MemoryProjectionStore"/>, remembering the latest projection it
/// installed, so the invariants can ask which chain holds an address after stripes were added
/// and units replaced without parsing the store's JSON on every step.
/// </summary>
internal sealed class TrackingProjectionStore : IProjectionStore
{
    private readonly MemoryProjectionStore _inner = new();

    /// <summary>The latest projection installed (null before the bootstrap).</summary>
    public Projection? Latest { get; private set; }

    /// <inheritdoc />
    public Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default) => _inner.GetLatestAsync(cancellationToken);

    /// <inheritdoc />
    public async Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        var installed = await _inner.TryInstallAsync(projection, cancellationToken);
        if (installed)
        {
            Latest = projection;
        }

        return installed;
    }
}
