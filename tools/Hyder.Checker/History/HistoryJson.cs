using System.Text;
using System.Text.Json;

namespace Hyder.Checker;

/// <summary>
/// Stores histories as JSON, one event per line so regression files diff well:
/// <code>
/// {"format":"hyder-history","version":1,"ops":[
/// {"process":0,"type":"invoke","time":0,"txn":[["append",1,5],["r",2,null]]},
/// {"process":0,"type":"ok","time":3,"txn":[["append",1,5],["r",2,[3,4]]]}
/// ]}
/// </code>
/// Micro-operations: <c>["append",k,v]</c>, <c>["r",k,[v…]]</c> (list read), <c>["w",k,v]</c>,
/// <c>["rr",k,v]</c> (register read). A read's null is "not known" in an invocation, a failure
/// or an info event; in an ok event a register read's null is "never written".
/// </summary>
public static class HistoryJson
{
    private const string Format = "hyder-history";
    private const int Version = 1;

    /// <summary>The history as JSON text.</summary>
    public static string Write(History history)
    {
        var sb = new StringBuilder();
        sb.Append("{\"format\":\"").Append(Format).Append("\",\"version\":").Append(Version).Append(",\"ops\":[\n");
        var buffer = new MemoryStream();
        for (var i = 0; i < history.Ops.Count; i++)
        {
            buffer.SetLength(0);
            using (var w = new Utf8JsonWriter(buffer))
            {
                WriteOp(w, history.Ops[i]);
            }

            sb.Append(Encoding.UTF8.GetString(buffer.GetBuffer(), 0, (int)buffer.Length));
            sb.Append(i + 1 < history.Ops.Count ? ",\n" : "\n");
        }

        return sb.Append("]}\n").ToString();
    }

    /// <summary>Writes the history to a file.</summary>
    public static void Save(History history, string path) => File.WriteAllText(path, Write(history));

    /// <summary>Reads a history from a file.</summary>
    public static History Load(string path) => Read(File.ReadAllText(path));

    /// <summary>Parses JSON text written by <see cref="Write"/> (or by hand).</summary>
    /// <exception cref="InvalidHistoryException">The text is not a history.</exception>
    public static History Read(string json)
    {
        try
        {
            using var doc = JsonDocument.Parse(json);
            var root = doc.RootElement;
            if (root.TryGetProperty("format", out var f) && f.GetString() != Format)
            {
                throw new InvalidHistoryException($"format \"{f.GetString()}\" is not {Format}");
            }

            if (root.TryGetProperty("version", out var v) && v.GetInt32() != Version)
            {
                throw new InvalidHistoryException($"version {v.GetInt32()} is not supported (expected {Version})");
            }

            var ops = new List<Op>();
            foreach (var e in root.GetProperty("ops").EnumerateArray())
            {
                ops.Add(ReadOp(e, ops.Count));
            }

            return new History(ops);
        }
        catch (Exception e) when (e is JsonException or KeyNotFoundException or InvalidOperationException or FormatException)
        {
            throw new InvalidHistoryException($"not a history: {e.Message}", e);
        }
    }

    private static void WriteOp(Utf8JsonWriter w, Op op)
    {
        w.WriteStartObject();
        w.WriteNumber("process", op.Process);
        w.WriteString("type", op.Type.ToString().ToLowerInvariant());
        if (op.Time is { } time)
        {
            w.WriteNumber("time", time);
        }

        w.WriteStartArray("txn");
        foreach (var m in op.Txn)
        {
            w.WriteStartArray();
            w.WriteStringValue(m.Kind switch
            {
                MopKind.Append => "append",
                MopKind.ReadList => "r",
                MopKind.Write => "w",
                _ => "rr",
            });
            w.WriteNumberValue(m.Key);
            if (m.Kind == MopKind.ReadList && m.Known)
            {
                w.WriteStartArray();
                foreach (var x in m.List!)
                {
                    w.WriteNumberValue(x);
                }

                w.WriteEndArray();
            }
            else if (m.Value is { } value && m.Known)
            {
                w.WriteNumberValue(value);
            }
            else
            {
                w.WriteNullValue();
            }

            w.WriteEndArray();
        }

        w.WriteEndArray();
        w.WriteEndObject();
    }

    private static Op ReadOp(JsonElement e, int index)
    {
        var type = e.GetProperty("type").GetString() switch
        {
            "invoke" => OpType.Invoke,
            "ok" => OpType.Ok,
            "fail" => OpType.Fail,
            "info" => OpType.Info,
            var t => throw new InvalidHistoryException($"event {index}: unknown type \"{t}\""),
        };
        long? time = e.TryGetProperty("time", out var t2) && t2.ValueKind == JsonValueKind.Number ? t2.GetInt64() : null;
        var mops = new List<Mop>();
        foreach (var m in e.GetProperty("txn").EnumerateArray())
        {
            if (m.GetArrayLength() != 3)
            {
                throw new InvalidHistoryException($"event {index}: a micro-operation is [f, key, value]: {m.GetRawText()}");
            }

            var key = m[1].GetInt64();
            var value = m[2];
            var isNull = value.ValueKind == JsonValueKind.Null;
            mops.Add(m[0].GetString() switch
            {
                "append" => Mop.Append(key, value.GetInt64()),
                "w" => Mop.Write(key, value.GetInt64()),
                "r" when isNull => Mop.ReadUnknown(key),
                "r" => Mop.Read(key, value.EnumerateArray().Select(x => x.GetInt64()).ToArray()),
                "rr" when type != OpType.Ok => Mop.ReadRegisterUnknown(key),
                "rr" => Mop.ReadRegister(key, isNull ? null : value.GetInt64()),
                var f => throw new InvalidHistoryException($"event {index}: unknown micro-operation \"{f}\""),
            });
        }

        return new Op(e.GetProperty("process").GetInt32(), type, mops, time);
    }
}
