using System.Security.Authentication;
using Grpc.Health.V1;
using Grpc.HealthCheck;
using Hyder.Security;
using Hyder.Server.Engine;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Server.Grpc;

/// <summary>
/// The <c>hyder.v1.Hyder</c> service on Grpc.AspNetCore, on a Kestrel of its own: HTTP/2 only (h2c
/// with prior knowledge in cleartext, h2 by ALPN with <see cref="GrpcServerOptions.Tls"/>),
/// <see cref="GrpcServerOptions.Limits"/> as Kestrel's limits plus a per-address connection cap,
/// <see cref="HyderInterceptor"/> on the Hyder service, <c>grpc.health.v1.Health</c> always and
/// server reflection when asked for. No configuration files, environment variables or other
/// middleware are involved.
/// </summary>
/// <remarks>
/// Health reports NOT_SERVING for the server (the empty service name) and for
/// <c>hyder.v1.Hyder</c> until <see cref="SetServing"/> (or <see cref="Serve"/>), and again from
/// the start of <see cref="StopAsync"/>, so a load balancer drains the server before it goes.
/// A host opens the listener before its transaction server has caught up with the log
/// (<see cref="StartAsync(GrpcServerOptions?, CancellationToken)"/>, no engine yet): health and
/// reflection answer, every Hyder method answers UNAVAILABLE, and <see cref="Serve"/> hands the
/// engine over once it has melded up to the log's tail as it was at start.
/// </remarks>
public sealed class HyderGrpcServer : IAsyncDisposable
{
    /// <summary>The service name health reports for the Hyder service.</summary>
    public const string ServiceName = "hyder.v1.Hyder";

    private static readonly TimeSpan s_shortestGrace = TimeSpan.FromSeconds(2);

    private readonly WebApplication _app;
    private readonly HealthServiceImpl _health;
    private readonly EngineSlot _engine;
    private readonly TimeSpan _shutdownTimeout;
    private int _stopped;

    private HyderGrpcServer(WebApplication app, HealthServiceImpl health, EngineSlot engine, Uri address, TimeSpan shutdownTimeout)
    {
        _app = app;
        _health = health;
        _engine = engine;
        Address = address;
        _shutdownTimeout = shutdownTimeout;
    }

    /// <summary>The bound address, such as <c>http://127.0.0.1:50123</c>.</summary>
    public Uri Address { get; }

    /// <summary>The bound port.</summary>
    public int Port => Address.Port;

    /// <summary>Starts a server for an engine; health says NOT_SERVING until <see cref="SetServing"/>.</summary>
    /// <param name="engine">The engine the service runs transactions on.</param>
    /// <param name="options">Settings; defaults (127.0.0.1, a free port, no TLS, no authentication) when null.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The running server.</returns>
    public static Task<HyderGrpcServer> StartAsync(ITransactionEngine engine, GrpcServerOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(engine);
        return StartAsync(new EngineSlot(engine), options, cancellationToken);
    }

    /// <summary>
    /// Starts a server whose engine is not there yet (its transaction server is catching up with
    /// the log): health says NOT_SERVING and reflection answers, every Hyder method answers
    /// UNAVAILABLE until <see cref="Serve"/>.
    /// </summary>
    /// <param name="options">Settings; defaults (127.0.0.1, a free port, no TLS, no authentication) when null.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The running server.</returns>
    public static Task<HyderGrpcServer> StartAsync(GrpcServerOptions? options, CancellationToken cancellationToken = default) =>
        StartAsync(new EngineSlot(null), options, cancellationToken);

    private static async Task<HyderGrpcServer> StartAsync(EngineSlot engine, GrpcServerOptions? options, CancellationToken cancellationToken)
    {
        options ??= new GrpcServerOptions();
        var builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions { ApplicationName = typeof(HyderGrpcServer).Assembly.GetName().Name });
        builder.WebHost.UseKestrelCore();
        builder.WebHost.UseKestrelHttpsConfiguration();
        builder.Services.AddSingleton(options.LoggerFactory ?? NullLoggerFactory.Instance);
        builder.Services.AddSingleton(typeof(ILogger<>), typeof(Logger<>));
        // Resolved by the first Hyder call that passes the interceptor; until the engine is there,
        // each such call ends with UNAVAILABLE (a DI singleton whose factory throws is not kept).
        builder.Services.AddSingleton(services => new HyderService(
            Volatile.Read(ref engine.Engine) ?? throw EngineSlot.CatchingUp(),
            services.GetRequiredService<IHostApplicationLifetime>(),
            services.GetRequiredService<ILogger<HyderService>>())
        {
            MaxTransactionsPerStream = options.Limits.MaxTransactionsPerStream,
        });
        builder.Services.AddSingleton(new HyderInterceptor(options.Authenticator, (options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger<HyderInterceptor>()));
        var health = new HealthServiceImpl();
        health.SetStatus(string.Empty, HealthCheckResponse.Types.ServingStatus.NotServing);
        health.SetStatus(ServiceName, HealthCheckResponse.Types.ServingStatus.NotServing);
        builder.Services.AddSingleton(health);
        builder.Services
            .AddGrpc(grpc =>
            {
                grpc.MaxReceiveMessageSize = options.MaxMessageBytes;
                grpc.MaxSendMessageSize = options.MaxMessageBytes;
                grpc.EnableDetailedErrors = false;
            })
            .AddServiceOptions<HyderService>(hyder => hyder.Interceptors.Add<HyderInterceptor>());
        if (options.Reflection)
        {
            builder.Services.AddGrpcReflection();
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
            });
            options.ConfigureKestrel?.Invoke(kestrel);
        });

        var app = builder.Build();
        app.MapGrpcService<HyderService>();
        app.MapGrpcService<HealthServiceImpl>();
        if (options.Reflection)
        {
            app.MapGrpcReflectionService();
        }

        await app.StartAsync(cancellationToken).ConfigureAwait(false);
        var addresses = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses;
        return new HyderGrpcServer(app, health, engine, new Uri(addresses.First()), options.ShutdownTimeout);
    }

    /// <summary>Health reports SERVING for the server and the Hyder service (not once the server stops).</summary>
    /// <exception cref="InvalidOperationException">The server has no engine yet (see <see cref="Serve"/>).</exception>
    public void SetServing()
    {
        if (_engine.Engine is null)
        {
            throw new InvalidOperationException("The server has no engine yet: hand it over with Serve.");
        }

        if (Volatile.Read(ref _stopped) == 0)
        {
            SetHealth(HealthCheckResponse.Types.ServingStatus.Serving);
        }
    }

    /// <summary>
    /// Hands over the engine of a server started without one, once it has caught up with the log:
    /// the Hyder methods run on it from now on and health reports SERVING.
    /// </summary>
    /// <param name="engine">The engine.</param>
    /// <exception cref="InvalidOperationException">The server has an engine already.</exception>
    public void Serve(ITransactionEngine engine)
    {
        ArgumentNullException.ThrowIfNull(engine);
        if (Interlocked.CompareExchange(ref _engine.Engine, engine, null) is not null)
        {
            throw new InvalidOperationException("The server has an engine already.");
        }

        SetServing();
    }

    /// <summary>
    /// Health reports NOT_SERVING (watchers learn it at once), the server stops listening, lets calls
    /// in flight finish until the shutdown timeout, then aborts the rest (their cancellation tokens fire).
    /// </summary>
    /// <param name="cancellationToken">Aborts the calls in flight at once.</param>
    /// <returns>A task that completes when the server has stopped.</returns>
    public async Task StopAsync(CancellationToken cancellationToken = default)
    {
        if (Interlocked.Exchange(ref _stopped, 1) != 0)
        {
            return;
        }

        SetHealth(HealthCheckResponse.Types.ServingStatus.NotServing);
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

    private void SetHealth(HealthCheckResponse.Types.ServingStatus status)
    {
        _health.SetStatus(string.Empty, status);
        _health.SetStatus(ServiceName, status);
    }

    private static void ApplyLimits(KestrelServerLimits kestrel, GrpcServerLimits limits)
    {
        kestrel.MaxConcurrentConnections = limits.MaxConnections;
        kestrel.MaxConcurrentUpgradedConnections = limits.MaxConnections;
        kestrel.Http2.MaxStreamsPerConnection = limits.MaxStreamsPerConnection;
        kestrel.MaxRequestHeadersTotalSize = limits.MaxHeaderBytes;
        kestrel.Http2.MaxRequestHeaderFieldSize = limits.MaxHeaderBytes;
        kestrel.KeepAliveTimeout = limits.IdleTimeout;
        kestrel.RequestHeadersTimeout = limits.RequestHeadersTimeout;

        // Grpc.AspNetCore lifts the rate for client-streaming and duplex calls, so it bounds only
        // the requests of unary and server-streaming calls.
        // Kestrel wants a grace period over 1 s.
        kestrel.MinRequestBodyDataRate = limits.RequestTimeout is { } grace ? new MinDataRate(240, grace < s_shortestGrace ? s_shortestGrace : grace) : null;
    }

    private static HttpsConnectionAdapterOptions Https(GrpcServerTls tls)
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
}
