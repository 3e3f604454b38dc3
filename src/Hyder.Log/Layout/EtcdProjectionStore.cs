using System.Globalization;
using dotnet_etcd;
using Etcdserverpb;
using Google.Protobuf;
using Grpc.Core;

namespace Hyder.Log.Layout;

/// <summary>
/// Projections in etcd, for a real cluster: etcd's Raft decides, so exactly one projection wins an
/// epoch however many administrators race. Keys under a prefix: <c>epoch/NNNNNNNNNNNNNNNNNNNN</c>
/// holds a projection's JSON, <c>latest</c> the highest epoch. Installing epoch e is one
/// transaction: put both keys if <c>epoch/e</c> does not exist and <c>epoch/(e−1)</c> does.
/// etcd is reached through its gRPC API with dotnet-etcd.
/// </summary>
public sealed class EtcdProjectionStore : IProjectionStore, IDisposable
{
    private readonly EtcdClient _etcd;
    private readonly string _prefix;

    /// <summary>
    /// Uses the etcd cluster at <paramref name="endpoints"/> (for example
    /// <c>http://127.0.0.1:2379</c>, several separated by commas; <c>http://</c> without TLS)
    /// under <paramref name="prefix"/>.
    /// </summary>
    public EtcdProjectionStore(string endpoints, string prefix = "/hyder/log/")
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(endpoints);
        var plaintext = endpoints.Split(',').All(e => e.Trim().StartsWith("http://", StringComparison.OrdinalIgnoreCase));
        _etcd = new EtcdClient(
            endpoints.TrimEnd('/'),
            configureChannelOptions: plaintext ? options => options.Credentials = ChannelCredentials.Insecure : null);
        _prefix = prefix.EndsWith('/') ? prefix : prefix + "/";
    }

    /// <inheritdoc />
    public async Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default)
    {
        var latest = await GetAsync(_prefix + "latest", cancellationToken).ConfigureAwait(false);
        if (latest is null)
        {
            return null;
        }

        var epoch = long.Parse(latest.Span, CultureInfo.InvariantCulture);
        var json = await GetAsync(EpochKey(epoch), cancellationToken).ConfigureAwait(false)
            ?? throw new LogCorruptionException($"etcd names epoch {epoch} as latest but holds no projection for it.");
        return Projection.FromJson(json.ToStringUtf8());
    }

    /// <inheritdoc />
    public async Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        projection.Validate();
        var request = new TxnRequest();
        request.Compare.Add(Version(EpochKey(projection.Epoch), Compare.Types.CompareResult.Equal));
        if (projection.Epoch > 1)
        {
            request.Compare.Add(Version(EpochKey(projection.Epoch - 1), Compare.Types.CompareResult.Greater));
        }

        request.Success.Add(Put(EpochKey(projection.Epoch), projection.ToJson()));
        request.Success.Add(Put(_prefix + "latest", projection.Epoch.ToString(CultureInfo.InvariantCulture)));
        var response = await Call(() => _etcd.TransactionAsync(request, cancellationToken: cancellationToken)).ConfigureAwait(false);
        return response.Succeeded;
    }

    /// <inheritdoc />
    public void Dispose() => _etcd.Dispose();

    /// <summary>A key's version compared with 0: equal means the key does not exist, greater that it does.</summary>
    private static Compare Version(string key, Compare.Types.CompareResult result) => new()
    {
        Key = ByteString.CopyFromUtf8(key),
        Target = Compare.Types.CompareTarget.Version,
        Result = result,
        Version = 0,
    };

    private static RequestOp Put(string key, string value) => new()
    {
        RequestPut = new PutRequest { Key = ByteString.CopyFromUtf8(key), Value = ByteString.CopyFromUtf8(value) },
    };

    /// <summary>etcd's failures as the log's own exception, with the status etcd gave.</summary>
    private static async Task<T> Call<T>(Func<Task<T>> call)
    {
        try
        {
            return await call().ConfigureAwait(false);
        }
        catch (RpcException e) when (e.StatusCode != StatusCode.Cancelled)
        {
            throw new SharedLogException($"etcd: {e.Status.StatusCode}: {e.Status.Detail}", e);
        }
    }

    private async Task<ByteString?> GetAsync(string key, CancellationToken cancellationToken)
    {
        var response = await Call(() => _etcd.GetAsync(key, cancellationToken: cancellationToken)).ConfigureAwait(false);
        return response.Kvs.Count == 0 ? null : response.Kvs[0].Value;
    }

    private string EpochKey(long epoch) => string.Create(CultureInfo.InvariantCulture, $"{_prefix}epoch/{epoch:D20}");
}
