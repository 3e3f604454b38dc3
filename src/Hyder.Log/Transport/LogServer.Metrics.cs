using System.Diagnostics.Metrics;

namespace Hyder.Log.Transport;

/// <summary>The server's figures as instruments of the <c>Hyder.Log</c> meter, for dotnet-counters and exporters.</summary>
public sealed partial class LogServer
{
    /// <summary>The meter's name.</summary>
    public const string MeterName = "Hyder.Log";

    /// <summary>Requests served, by the frame's op byte.</summary>
    private readonly long[] _requests = new long[256];
    private Meter? _meter;

    /// <summary>Requests of <paramref name="op"/> served so far.</summary>
    internal long RequestsOf(FrameOp op) => Interlocked.Read(ref _requests[(byte)op]);

    internal void CountRequest(FrameOp op) => Interlocked.Increment(ref _requests[(byte)op]);

    private void CreateMeter()
    {
        _meter = new Meter(MeterName);
        var endpoint = new KeyValuePair<string, object?>("endpoint", LocalEndPoint.ToString());
        _meter.CreateObservableCounter("hyder.log.requests", ObserveRequests, description: "requests served, by operation");
        _meter.CreateObservableCounter("hyder.log.refused_connections", () => new Measurement<long>(RefusedConnections, endpoint), description: "connections refused at the TLS handshake");
        _meter.CreateObservableUpDownCounter("hyder.log.open_connections", () => new Measurement<int>(OpenConnections, endpoint), description: "connections open now");

        IEnumerable<Measurement<long>> ObserveRequests()
        {
            foreach (var op in Enum.GetValues<FrameOp>())
            {
                var n = RequestsOf(op);
                if (n > 0)
                {
                    yield return new Measurement<long>(n, endpoint, new KeyValuePair<string, object?>("op", op.ToString()));
                }
            }
        }
    }
}
