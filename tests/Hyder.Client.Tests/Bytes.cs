using System.Text;

namespace Hyder.Client.Tests;

internal static class Bytes
{
    public static byte[] Of(string s) => Encoding.UTF8.GetBytes(s);

    public static string Text(byte[]? b) => b is null ? "<absent>" : Encoding.UTF8.GetString(b);
}
