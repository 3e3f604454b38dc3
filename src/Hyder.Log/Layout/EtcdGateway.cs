using System.Text;
using System.Text.Json;

namespace Hyder.Log.Layout;

/// <summary>
/// A small client of etcd's v3 JSON gateway (etcd 3.4: <c>POST /v3/kv/range</c>,
/// <c>POST /v3/kv/txn</c>). Keys and values travel base64-encoded; 64-bit integers come back as
/// JSON strings; fields with default values (false, 0, empty) are left out of answers.
/// </summary>
public sealed class EtcdGateway
{
    private readonly HttpClient _http;
    private readonly Uri _endpoint;

    /// <summary>Talks to the gateway at <paramref name="endpoint"/> (for example http://127.0.0.1:2379).</summary>
    public EtcdGateway(HttpClient http, Uri endpoint)
    {
        _http = http;
        _endpoint = endpoint;
    }

    /// <summary>The value of <paramref name="key"/>, or null if it does not exist.</summary>
    public async Task<byte[]?> GetAsync(string key, CancellationToken cancellationToken)
    {
        var body = Write(w =>
        {
            w.WriteStartObject();
            w.WriteBase64String("key", Encoding.UTF8.GetBytes(key));
            w.WriteEndObject();
        });
        using var document = await PostAsync("v3/kv/range", body, cancellationToken).ConfigureAwait(false);
        if (!document.RootElement.TryGetProperty("kvs", out var kvs) || kvs.GetArrayLength() == 0)
        {
            return null;
        }

        return kvs[0].TryGetProperty("value", out var value) ? value.GetBytesFromBase64() : [];
    }

    /// <summary>
    /// Puts every pair of <paramref name="puts"/> in one transaction if every key of
    /// <paramref name="absent"/> does not exist and every key of <paramref name="present"/> does;
    /// true if the transaction succeeded.
    /// </summary>
    public async Task<bool> PutIfAsync(
        IReadOnlyList<string> absent,
        IReadOnlyList<string> present,
        IReadOnlyList<KeyValuePair<string, byte[]>> puts,
        CancellationToken cancellationToken)
    {
        var body = Write(w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("compare");
            foreach (var key in absent)
            {
                WriteVersionCompare(w, key, "EQUAL");
            }

            foreach (var key in present)
            {
                WriteVersionCompare(w, key, "GREATER");
            }

            w.WriteEndArray();
            w.WriteStartArray("success");
            foreach (var (key, value) in puts)
            {
                w.WriteStartObject();
                w.WriteStartObject("request_put");
                w.WriteBase64String("key", Encoding.UTF8.GetBytes(key));
                w.WriteBase64String("value", value);
                w.WriteEndObject();
                w.WriteEndObject();
            }

            w.WriteEndArray();
            w.WriteEndObject();
        });
        using var document = await PostAsync("v3/kv/txn", body, cancellationToken).ConfigureAwait(false);
        return document.RootElement.TryGetProperty("succeeded", out var succeeded) && succeeded.GetBoolean();
    }

    private static void WriteVersionCompare(Utf8JsonWriter w, string key, string result)
    {
        w.WriteStartObject();
        w.WriteBase64String("key", Encoding.UTF8.GetBytes(key));
        w.WriteString("target", "VERSION");
        w.WriteString("result", result);
        w.WriteString("version", "0");
        w.WriteEndObject();
    }

    private static byte[] Write(Action<Utf8JsonWriter> write)
    {
        using var buffer = new MemoryStream();
        using (var writer = new Utf8JsonWriter(buffer))
        {
            write(writer);
        }

        return buffer.ToArray();
    }

    private async Task<JsonDocument> PostAsync(string path, byte[] body, CancellationToken cancellationToken)
    {
        using var content = new ByteArrayContent(body);
        content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
        using var response = await _http.PostAsync(new Uri(_endpoint, path), content, cancellationToken).ConfigureAwait(false);
        var text = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
        {
            throw new SharedLogException($"etcd answered {(int)response.StatusCode} to {path}: {text}");
        }

        return JsonDocument.Parse(text);
    }
}
