using System.Text;

namespace Hyder.Tree.Tests;

/// <summary>Small helpers for hand-written cases: keys and payloads as short strings.</summary>
internal static class TestData
{
    public static byte[] K(string s) => Encoding.ASCII.GetBytes(s);

    public static string S(byte[] b) => Encoding.ASCII.GetString(b);

    public static Database Load(params string[] keys)
    {
        var db = new Database();
        db.BulkLoad(keys.Order(StringComparer.Ordinal).Select(k => new KeyValuePair<byte[], byte[]>(K(k), K(k + "0"))).ToList());
        return db;
    }

    public static string Contents(DatabaseState s) =>
        string.Join(",", TreeInspector.Contents(s.Root).Select(p => $"{S(p.Key)}={S(p.Value)}"));
}
