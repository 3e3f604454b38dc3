using System.Buffers.Binary;
using System.Net;
using System.Net.Http.Headers;
using Google.Protobuf;

namespace Hyder.Rpc.Tests;

/// <summary>Hand-made HTTP/2 requests, to check the server's wire rules without our client in the way.</summary>
internal static class RawGrpc
{
    public static HttpClient CreateClient() => new(new SocketsHttpHandler()) { Timeout = TimeSpan.FromSeconds(10) };

    public static HttpRequestMessage Request(Uri server, string path, byte[] body, string contentType = "application/grpc")
    {
        var content = new ByteArrayContent(body);
        content.Headers.TryAddWithoutValidation("Content-Type", contentType);
        var request = new HttpRequestMessage(HttpMethod.Post, new Uri(server, path))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            Content = content,
        };
        request.Headers.TE.Add(new TransferCodingWithQualityHeaderValue("trailers"));
        return request;
    }

    public static byte[] Frame(IMessage message, byte flag = 0)
    {
        var body = message.ToByteArray();
        var frame = new byte[5 + body.Length];
        frame[0] = flag;
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(1), (uint)body.Length);
        body.CopyTo(frame, 5);
        return frame;
    }

    /// <summary>grpc-status from the trailers, or from the headers of a Trailers-Only response.</summary>
    public static string? Status(HttpResponseMessage response) =>
        Header(response.TrailingHeaders, "grpc-status") ?? Header(response.Headers, "grpc-status");

    public static string? Message(HttpResponseMessage response) =>
        Header(response.TrailingHeaders, "grpc-message") ?? Header(response.Headers, "grpc-message");

    public static string? Header(HttpHeaders headers, string name) =>
        headers.NonValidated.TryGetValues(name, out var values) ? values.First() : null;
}
