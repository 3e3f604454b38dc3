using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using System.Security.Authentication;
using Hyder.Rpc.Security;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;

namespace Hyder.Rpc;

/// <summary>
/// A gRPC server on its own Kestrel, HTTP/2 only: h2c with prior knowledge on a plaintext
/// endpoint, h2 by ALPN with <see cref="RpcServerOptions.Tls"/>. <see cref="RpcServerOptions.Limits"/>
/// become Kestrel's limits and a per-address connection cap of our own (<see cref="ConnectionCap"/>).
/// No configuration files, environment variables or other middleware are involved.
/// </summary>
public sealed class RpcServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly TimeSpan _shutdownTimeout;
    private int _stopped;

    private RpcServer(WebApplication app, Uri address, TimeSpan shutdownTimeout)
    {
        _app = app;
        Address = address;
        _shutdownTimeout = shutdownTimeout;
    }

    /// <summary>The bound address, such as <c>http://127.0.0.1:50123</c>.</summary>
    public Uri Address { get; }

    /// <summary>The bound port.</summary>
    public int Port => Address.Port;

    /// <summary>Starts a server for the registered methods.</summary>
    /// <param name="services">The methods.</param>
    /// <param name="options">Settings; defaults (127.0.0.1, a free port) when null.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The running server.</returns>
    public static async Task<RpcServer> StartAsync(RpcServiceRegistry services, RpcServerOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(services);
        options ??= new RpcServerOptions();
        var builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions { ApplicationName = typeof(RpcServer).Assembly.GetName().Name });
        builder.WebHost.UseKestrelCore();
        builder.WebHost.UseKestrelHttpsConfiguration();
        if (options.LoggerFactory is { } loggerFactory)
        {
            builder.Services.AddSingleton(loggerFactory);
        }

        var limits = options.Limits;
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            ApplyLimits(kestrel.Limits, limits);
            kestrel.Listen(options.EndPoint, listen =>
            {
                listen.Protocols = HttpProtocols.Http2;
                if (limits.MaxConnectionsPerAddress is { } perAddress)
                {
                    // Before TLS: a refused connection costs no handshake.
                    var cap = new ConnectionCap(perAddress);
                    listen.Use(cap.Wrap);
                }

                if (options.Tls is { } tls)
                {
                    listen.UseHttps(Https(tls));
                }

                options.ConfigureEndpoint?.Invoke(listen);
            });
            options.ConfigureKestrel?.Invoke(kestrel);
        });

        var app = builder.Build();
        var dispatcher = new RpcDispatcher(services, options);
        app.Run(dispatcher.HandleAsync);
        await app.StartAsync(cancellationToken).ConfigureAwait(false);

        var addresses = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses;
        var address = new Uri(addresses.First());
        return new RpcServer(app, address, options.ShutdownTimeout);
    }

    private static void ApplyLimits(KestrelServerLimits kestrel, RpcServerLimits limits)
    {
        kestrel.MaxConcurrentConnections = limits.MaxConnections;
        kestrel.MaxConcurrentUpgradedConnections = limits.MaxConnections;
        kestrel.Http2.MaxStreamsPerConnection = limits.MaxStreamsPerConnection;
        kestrel.MaxRequestHeadersTotalSize = limits.MaxHeaderBytes;
        kestrel.Http2.MaxRequestHeaderFieldSize = limits.MaxHeaderBytes;
        kestrel.KeepAliveTimeout = limits.IdleTimeout;
        kestrel.RequestHeadersTimeout = limits.RequestHeadersTimeout;

        // Streams may be long and idle between messages, so Kestrel's body data rate is off
        // (RpcDispatcher) and RpcServerLimits.RequestTimeout bounds a slow message instead.
        kestrel.MinRequestBodyDataRate = null;
    }

    private static HttpsConnectionAdapterOptions Https(RpcServerTls tls)
    {
        var https = new HttpsConnectionAdapterOptions
        {
            ServerCertificate = tls.Certificate,
            ServerCertificateChain = tls.Intermediates,
            SslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13,
            ClientCertificateMode = ClientCertificateMode.NoCertificate,
        };
        if (tls.ClientCertificateAuthorities is { } authorities)
        {
            https.ClientCertificateMode = tls.ClientCertificateMode == ClientCertificateMode.RequireCertificate
                ? ClientCertificateMode.RequireCertificate
                : ClientCertificateMode.AllowCertificate;

            // Only the configured CAs, whatever the system trusts.
            https.ClientCertificateValidation = (certificate, chain, _) =>
                RpcTls.IsTrusted(certificate, chain, authorities, RpcTls.ClientAuthOid);
        }

        return https;
    }

    /// <summary>
    /// Stops listening, lets calls in flight finish until the shutdown timeout, then aborts the rest
    /// (their handlers see their cancellation token fire).
    /// </summary>
    /// <param name="cancellationToken">Aborts the calls in flight at once.</param>
    /// <returns>A task that completes when the server has stopped.</returns>
    public async Task StopAsync(CancellationToken cancellationToken = default)
    {
        if (Interlocked.Exchange(ref _stopped, 1) != 0)
        {
            return;
        }

        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(_shutdownTimeout);
        await _app.StopAsync(timeout.Token).ConfigureAwait(false);
    }

    /// <summary>Stops the server (see <see cref="StopAsync"/>) and releases it.</summary>
    /// <returns>A task that completes when the server is gone.</returns>
    public async ValueTask DisposeAsync()
    {
        await StopAsync().ConfigureAwait(false);
        await _app.DisposeAsync().ConfigureAwait(false);
    }
}
