using Hyder.Client;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Logging;
using V1 = Hyder.Api.V1;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers a <see cref="HyderClient"/> in a service collection through Grpc.Net.ClientFactory.</summary>
public static class HyderClientServiceCollectionExtensions
{
    /// <summary>
    /// Registers the generated <c>Hyder.HyderClient</c> stub with Grpc.Net.ClientFactory (its channel's
    /// primary handler carries the settings' TLS trust and client certificate, its message size caps
    /// the settings') and a singleton <see cref="HyderClient"/> over it.
    /// </summary>
    /// <param name="services">The services.</param>
    /// <param name="settings">Where the server is and how to call it.</param>
    /// <returns>The stub's HTTP client builder, to add handlers or change the handler's settings.</returns>
    public static IHttpClientBuilder AddHyderClient(this IServiceCollection services, HyderClientSettings settings)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(settings);
        var builder = services
            .AddGrpcClient<V1.Hyder.HyderClient>(options =>
            {
                options.Address = settings.Endpoint;
                options.ChannelOptionsActions.Add(channel =>
                {
                    channel.MaxReceiveMessageSize = settings.MaxMessageBytes;
                    channel.MaxSendMessageSize = settings.MaxMessageBytes;
                });
            })
            .ConfigurePrimaryHttpMessageHandler(() => HyderClient.CreateHandler(settings));
        services.TryAddSingleton(provider => new HyderClient(
            settings,
            provider.GetRequiredService<V1.Hyder.HyderClient>(),
            provider.GetService<ILoggerFactory>()?.CreateLogger<HyderClient>()));
        return builder;
    }

    /// <summary>Registers a client from a connection string (<see cref="HyderClientSettings.Parse"/>).</summary>
    /// <param name="services">The services.</param>
    /// <param name="connectionString">Such as <c>Endpoint=https://db:7400;TrustedCa=ca.crt;Token=...</c>.</param>
    /// <returns>The stub's HTTP client builder.</returns>
    public static IHttpClientBuilder AddHyderClient(this IServiceCollection services, string connectionString) =>
        services.AddHyderClient(HyderClientSettings.Parse(connectionString));
}
