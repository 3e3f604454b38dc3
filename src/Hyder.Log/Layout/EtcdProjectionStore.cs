using System.Globalization;
using System.Text;

namespace Hyder.Log.Layout;

/// <summary>
/// Projections in etcd, for a real cluster: etcd's Raft decides, so exactly one projection wins an
/// epoch however many administrators race. Keys under a prefix: <c>epoch/NNNNNNNNNNNNNNNNNNNN</c>
/// holds a projection's JSON, <c>latest</c> the highest epoch. Installing epoch e is one
/// transaction: put both keys if <c>epoch/e</c> does not exist and <c>epoch/(e−1)</c> does.
/// </summary>
public sealed class EtcdProjectionStore : IProjectionStore
{
    private readonly EtcdGateway _etcd;
    private readonly string _prefix;

    /// <summary>Uses etcd through <paramref name="gateway"/> under <paramref name="prefix"/>.</summary>
    public EtcdProjectionStore(EtcdGateway gateway, string prefix = "/hyder/log/")
    {
        _etcd = gateway;
        _prefix = prefix.EndsWith('/') ? prefix : prefix + "/";
    }

    /// <inheritdoc />
    public async Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default)
    {
        var latest = await _etcd.GetAsync(_prefix + "latest", cancellationToken).ConfigureAwait(false);
        if (latest is null)
        {
            return null;
        }

        var epoch = long.Parse(Encoding.UTF8.GetString(latest), CultureInfo.InvariantCulture);
        var json = await _etcd.GetAsync(EpochKey(epoch), cancellationToken).ConfigureAwait(false)
            ?? throw new LogCorruptionException($"etcd names epoch {epoch} as latest but holds no projection for it.");
        return Projection.FromJson(Encoding.UTF8.GetString(json));
    }

    /// <inheritdoc />
    public Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        projection.Validate();
        string[] present = projection.Epoch > 1 ? [EpochKey(projection.Epoch - 1)] : [];
        var puts = new[]
        {
            new KeyValuePair<string, byte[]>(EpochKey(projection.Epoch), Encoding.UTF8.GetBytes(projection.ToJson())),
            new KeyValuePair<string, byte[]>(_prefix + "latest", Encoding.UTF8.GetBytes(projection.Epoch.ToString(CultureInfo.InvariantCulture))),
        };
        return _etcd.PutIfAsync([EpochKey(projection.Epoch)], present, puts, cancellationToken);
    }

    private string EpochKey(long epoch) => string.Create(CultureInfo.InvariantCulture, $"{_prefix}epoch/{epoch:D20}");
}
