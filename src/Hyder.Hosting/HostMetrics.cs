using System.Globalization;
using Microsoft.Extensions.DependencyInjection;
using OpenTelemetry.Metrics;

namespace Hyder.Hosting;

/// <summary>
/// Metrics an operator can scrape: OpenTelemetry's meter provider over the host's meters, exported
/// in Prometheus' text format at <c>http://HOST:PORT/metrics</c> by OpenTelemetry's HttpListener
/// exporter. Off unless the host is given an address.
/// </summary>
public static class HostMetrics
{
    /// <summary>What the hosts' <c>--metrics-listen</c> help says.</summary>
    public const string OptionDescription = "Serve the host's metrics for Prometheus at http://HOST:PORT/metrics (HTTP/1.1, no TLS: keep it on loopback or a private network). Default: off.";

    /// <summary>
    /// Exports <paramref name="meters"/> at <paramref name="listen"/> (<c>HOST:PORT</c>); nothing when
    /// it is null or empty. A value that is not <c>HOST:PORT</c> with a port from 1 to 65535 throws
    /// <see cref="HostLoggingException"/> naming <paramref name="option"/> (exit code 2).
    /// </summary>
    public static IServiceCollection AddHostMetrics(this IServiceCollection services, string? listen, string option, params string[] meters)
    {
        ArgumentNullException.ThrowIfNull(services);
        if (string.IsNullOrWhiteSpace(listen))
        {
            return services;
        }

        var (host, port) = ParseListen(listen, option);
        services.AddOpenTelemetry().WithMetrics(metrics => metrics
            .AddMeter(meters)
            .AddPrometheusHttpListener(o =>
            {
                o.Host = host;
                o.Port = port;
            }));
        return services;
    }

    /// <summary>The host and port of <c>HOST:PORT</c> (an IPv6 host in brackets).</summary>
    internal static (string Host, int Port) ParseListen(string value, string option)
    {
        var colon = value.LastIndexOf(':');
        if (colon <= 0
            || !int.TryParse(value.AsSpan(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out var port)
            || port is < 1 or > 65535
            || value[..colon].Contains('/', StringComparison.Ordinal))
        {
            throw new HostLoggingException($"{option} '{value}' is not HOST:PORT with a port from 1 to 65535 (for example 127.0.0.1:9464).");
        }

        return (value[..colon], port);
    }
}
