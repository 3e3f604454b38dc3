using System.Text;
using Hyder.Fuzz.Engine;
using Hyder.Rpc;
using Microsoft.Extensions.Primitives;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// The HTTP/2 header fields of a gRPC call, as Hyder.Rpc's server and client read them: the
/// content type, <c>grpc-timeout</c> (<see cref="GrpcTimeout.TryParse"/>), <c>grpc-status</c>,
/// <c>grpc-message</c> (<see cref="PercentEncoding.Decode"/>) and custom metadata, text and
/// base64 <c>-bin</c> (<see cref="MetadataCodec.AddReceived"/>). The input is header lines
/// (<c>name: value</c>), each byte a Latin-1 character as the HTTP stack hands them over.
/// </summary>
internal sealed class GrpcHeadersTarget : FuzzTarget
{
    public override string Name => "grpc-headers";

    public override string Description => "GrpcProtocol.IsProtoContentType and ParseStatus, GrpcTimeout.TryParse, PercentEncoding.Decode, MetadataCodec.AddReceived";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(RpcException)];

    public override void Execute(byte[] input, Seed seed)
    {
        var metadata = new Metadata();
        foreach (var line in Encoding.Latin1.GetString(input).Split('\n'))
        {
            var colon = line.Length > 1 ? line.IndexOf(':', 1) : -1;
            if (colon < 0)
            {
                continue;
            }

            var name = line[..colon].ToLowerInvariant();
            var value = line[(colon + 1)..].Trim();
            switch (name)
            {
                case GrpcProtocol.TimeoutHeader:
                    _ = GrpcTimeout.TryParse(value, out _);
                    break;
                case "content-type":
                    GrpcProtocol.IsProtoContentType(value);
                    GrpcProtocol.IsGrpcContentType(value);
                    break;
                case GrpcProtocol.StatusHeader:
                    GrpcProtocol.ParseStatus(value);
                    break;
                case GrpcProtocol.MessageHeader:
                    PercentEncoding.Decode(value);
                    break;
                default:
                    MetadataCodec.AddReceived(metadata, name, new StringValues(value));
                    break;
            }
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var metadata = new Metadata { { "x-request-id", "abc-123" }, { "trace-bin", new byte[] { 0, 1, 2, 250, 251, 252, 253 } }, { "empty-bin", Array.Empty<byte>() } };
        var lines = new List<string>
        {
            "content-type: application/grpc+proto; charset=utf-8",
            $"grpc-timeout: {GrpcTimeout.Format(TimeSpan.FromMilliseconds(1500))}",
            $"grpc-timeout: {GrpcTimeout.Format(TimeSpan.FromDays(3000))}",
            $"grpc-timeout: {GrpcTimeout.Format(TimeSpan.FromTicks(3))}",
            "grpc-status: 10",
            $"grpc-message: {PercentEncoding.Encode("aborted: conflict on key 'k2' — ünïcödé 100%\n")}",
        };
        foreach (var entry in metadata)
        {
            lines.Add($"{entry.Key}: {MetadataCodec.Encode(entry)}");
        }

        lines.Add("trace-bin: AAEC,+vv8/Q==");
        yield return new Seed("request and trailer headers", Encoding.Latin1.GetBytes(string.Join('\n', lines)));
        foreach (var line in lines)
        {
            yield return new Seed(line.Split(':')[0], Encoding.Latin1.GetBytes(line));
        }
    }
}
