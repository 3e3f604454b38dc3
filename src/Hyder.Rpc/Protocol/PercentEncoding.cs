using System.Buffers;
using System.Text;

namespace Hyder.Rpc;

/// <summary>
/// <c>grpc-message</c>'s percent-encoding: the UTF-8 bytes of the message, each byte outside
/// printable ASCII (0x20-0x7E) and each <c>%</c> written as <c>%XX</c>. Decoding is lenient: a
/// <c>%</c> not followed by two hex digits stays as it is.
/// </summary>
internal static class PercentEncoding
{
    public static string Encode(string message)
    {
        var clean = true;
        foreach (var c in message)
        {
            if (c is < ' ' or > '~' or '%')
            {
                clean = false;
                break;
            }
        }

        if (clean)
        {
            return message;
        }

        var bytes = Encoding.UTF8.GetBytes(message);
        var sb = new StringBuilder(bytes.Length * 3);
        foreach (var b in bytes)
        {
            if (b is < (byte)' ' or > (byte)'~' or (byte)'%')
            {
                sb.Append('%').Append(HexDigit(b >> 4)).Append(HexDigit(b & 0xF));
            }
            else
            {
                sb.Append((char)b);
            }
        }

        return sb.ToString();
    }

    public static string Decode(string value)
    {
        if (!value.Contains('%', StringComparison.Ordinal))
        {
            return value;
        }

        // Values are ASCII on the wire; a stray non-ASCII character is kept as its UTF-8 bytes.
        var buffer = ArrayPool<byte>.Shared.Rent(value.Length * 3);
        try
        {
            var n = 0;
            for (var i = 0; i < value.Length; i++)
            {
                var c = value[i];
                if (c == '%' && i + 2 < value.Length && HexValue(value[i + 1]) is >= 0 and var hi && HexValue(value[i + 2]) is >= 0 and var lo)
                {
                    buffer[n++] = (byte)((hi << 4) | lo);
                    i += 2;
                }
                else if (c < 0x80)
                {
                    buffer[n++] = (byte)c;
                }
                else
                {
                    n += Encoding.UTF8.GetBytes(value.AsSpan(i, 1), buffer.AsSpan(n));
                }
            }

            return Encoding.UTF8.GetString(buffer, 0, n);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    private static char HexDigit(int value) => (char)(value < 10 ? '0' + value : 'A' + value - 10);

    private static int HexValue(char c) => c switch
    {
        >= '0' and <= '9' => c - '0',
        >= 'A' and <= 'F' => c - 'A' + 10,
        >= 'a' and <= 'f' => c - 'a' + 10,
        _ => -1,
    };
}
