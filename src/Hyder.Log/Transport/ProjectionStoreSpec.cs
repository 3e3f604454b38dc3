using Hyder.Log.Layout;

namespace Hyder.Log.Transport;

/// <summary>
/// Opens a projection store from a one-line specification, as operators write it:
/// <c>file:DIR</c> (one machine), <c>etcd:http://127.0.0.1:2379</c> (a cluster), or
/// <c>tcp:127.0.0.1:7100</c> (a log host running <c>--role projection</c>).
/// </summary>
/// <remarks>
/// It lives beside <see cref="RemoteProjectionStore"/> rather than in <c>Hyder.Log.Layout</c>
/// because it creates one: Transport depends on Layout (the projections it carries), and Layout
/// depends on no transport (tests/Hyder.Log.Tests/LayoutNamespaceTests.cs checks it).
/// </remarks>
public static class ProjectionStoreSpec
{
    /// <summary>
    /// Opens the store named by <paramref name="spec"/>; dispose the result if it is disposable.
    /// A <c>tcp:</c> store is reached with <paramref name="security"/> (null: plaintext).
    /// </summary>
    public static IProjectionStore Open(string spec, TransportSecurity? security = null)
    {
        var colon = spec.IndexOf(':', StringComparison.Ordinal);
        if (colon <= 0)
        {
            throw new ArgumentException($"'{spec}' is not a projection store (file:DIR, etcd:URL or tcp:ADDRESS:PORT).", nameof(spec));
        }

        var kind = spec[..colon];
        var rest = spec[(colon + 1)..];
        return kind switch
        {
            "file" => new FileProjectionStore(rest),
            "etcd" => new EtcdProjectionStore(rest),
            "tcp" => new RemoteProjectionStore(rest, security),
            _ => throw new ArgumentException($"Unknown projection store kind '{kind}' (file, etcd or tcp).", nameof(spec)),
        };
    }
}
