using Microsoft.Extensions.Primitives;

namespace Hyder.Rpc;

/// <summary>
/// Metadata to and from HTTP/2 header fields. Binary values (<c>-bin</c> keys) travel as base64:
/// sent unpadded, accepted padded or not, and a field holding several comma-separated values
/// yields one entry for each.
/// </summary>
internal static class MetadataCodec
{
    /// <summary>The wire form of an entry's value.</summary>
    public static string Encode(Metadata.Entry entry) =>
        entry.ValueBytes is { } bytes ? Convert.ToBase64String(bytes).TrimEnd('=') : entry.Value!;

    /// <summary>Adds a received header field to <paramref name="metadata"/> unless it is the protocol's own.</summary>
    public static void AddReceived(Metadata metadata, string name, StringValues values)
    {
        if (GrpcProtocol.IsReservedHeader(name))
        {
            return;
        }

        var key = name.ToLowerInvariant();
        var binary = Metadata.IsBinaryKey(key);
        foreach (var value in values)
        {
            if (value is null)
            {
                continue;
            }

            if (!binary)
            {
                metadata.AddUnchecked(key, value, null);
                continue;
            }

            foreach (var part in value.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
            {
                metadata.AddUnchecked(key, null, DecodeBase64(part));
            }
        }
    }

    private static byte[] DecodeBase64(string text)
    {
        var padding = (4 - (text.Length % 4)) % 4;
        var padded = padding == 0 ? text : text + new string('=', padding);
        try
        {
            return Convert.FromBase64String(padded);
        }
        catch (FormatException e)
        {
            throw new RpcException(new Status(StatusCode.Internal, "A '-bin' metadata value is not valid base64."), null, e);
        }
    }
}
