using System.Collections;

namespace Hyder.Rpc;

/// <summary>
/// Custom metadata of a call: request headers, response headers or trailers. Keys are lowercase
/// ASCII (<c>0-9 a-z - _ .</c>); a key ending in <c>-bin</c> carries bytes (base64 on the wire),
/// any other key carries printable ASCII. Keys starting with <c>grpc-</c> are reserved.
/// A key may appear more than once; order is kept.
/// </summary>
public sealed class Metadata : IReadOnlyList<Metadata.Entry>
{
    /// <summary>The suffix of keys whose values are bytes.</summary>
    public const string BinarySuffix = "-bin";

    private readonly List<Entry> _entries = [];

    /// <inheritdoc />
    public int Count => _entries.Count;

    /// <inheritdoc />
    public Entry this[int index] => _entries[index];

    /// <summary>Adds a text entry.</summary>
    /// <param name="key">The key; must not end in <c>-bin</c>.</param>
    /// <param name="value">Printable ASCII (0x20-0x7E).</param>
    public void Add(string key, string value)
    {
        ArgumentNullException.ThrowIfNull(value);
        key = ValidateKey(key);
        if (IsBinaryKey(key))
        {
            throw new ArgumentException($"Key '{key}' ends in '-bin': its value must be bytes.", nameof(key));
        }

        foreach (var c in value)
        {
            if (c is < ' ' or > '~')
            {
                throw new ArgumentException("A text metadata value must be printable ASCII (0x20-0x7E); use a '-bin' key for anything else.", nameof(value));
            }
        }

        _entries.Add(new Entry(key, value, null));
    }

    /// <summary>Adds a binary entry.</summary>
    /// <param name="key">The key; must end in <c>-bin</c>.</param>
    /// <param name="value">The bytes (kept, not copied).</param>
    public void Add(string key, byte[] value)
    {
        ArgumentNullException.ThrowIfNull(value);
        key = ValidateKey(key);
        if (!IsBinaryKey(key))
        {
            throw new ArgumentException($"Key '{key}' does not end in '-bin': its value must be text.", nameof(key));
        }

        _entries.Add(new Entry(key, null, value));
    }

    /// <summary>The first entry with the key, or null.</summary>
    /// <param name="key">The key (compared case-insensitively).</param>
    /// <returns>The entry or null.</returns>
    public Entry? Get(string key)
    {
        foreach (var e in _entries)
        {
            if (string.Equals(e.Key, key, StringComparison.OrdinalIgnoreCase))
            {
                return e;
            }
        }

        return null;
    }

    /// <summary>The text value of the first entry with the key, or null.</summary>
    /// <param name="key">The key.</param>
    /// <returns>The value or null.</returns>
    public string? GetValue(string key) => Get(key)?.Value;

    /// <summary>The bytes of the first binary entry with the key, or null.</summary>
    /// <param name="key">The key, ending in <c>-bin</c>.</param>
    /// <returns>The bytes or null.</returns>
    public byte[]? GetValueBytes(string key) => Get(key)?.ValueBytes;

    /// <summary>Every entry with the key, in order.</summary>
    /// <param name="key">The key.</param>
    /// <returns>The entries.</returns>
    public IEnumerable<Entry> GetAll(string key) =>
        _entries.Where(e => string.Equals(e.Key, key, StringComparison.OrdinalIgnoreCase));

    /// <inheritdoc />
    public IEnumerator<Entry> GetEnumerator() => _entries.GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    /// <summary>Whether a key carries bytes.</summary>
    /// <param name="key">The key.</param>
    /// <returns>True when it ends in <c>-bin</c>.</returns>
    public static bool IsBinaryKey(string key) => key.EndsWith(BinarySuffix, StringComparison.OrdinalIgnoreCase);

    internal void AddUnchecked(string key, string? value, byte[]? valueBytes) => _entries.Add(new Entry(key, value, valueBytes));

    private static string ValidateKey(string key)
    {
        ArgumentException.ThrowIfNullOrEmpty(key);
        key = key.ToLowerInvariant();
        foreach (var c in key)
        {
            if (c is not ((>= 'a' and <= 'z') or (>= '0' and <= '9') or '-' or '_' or '.'))
            {
                throw new ArgumentException($"Metadata key '{key}' has a character outside 0-9 a-z - _ .", nameof(key));
            }
        }

        if (key.StartsWith("grpc-", StringComparison.Ordinal))
        {
            throw new ArgumentException($"Metadata key '{key}' is reserved: keys starting with 'grpc-' belong to the protocol.", nameof(key));
        }

        return key;
    }

    /// <summary>One metadata entry: a text value or, for <c>-bin</c> keys, bytes.</summary>
    public sealed class Entry
    {
        internal Entry(string key, string? value, byte[]? valueBytes)
        {
            Key = key;
            Value = value;
            ValueBytes = valueBytes;
        }

        /// <summary>The lowercase key.</summary>
        public string Key { get; }

        /// <summary>The text value; null for a binary entry.</summary>
        public string? Value { get; }

        /// <summary>The bytes; null for a text entry.</summary>
        public byte[]? ValueBytes { get; }

        /// <summary>Whether the entry carries bytes.</summary>
        public bool IsBinary => ValueBytes is not null;

        /// <inheritdoc />
        public override string ToString() => IsBinary ? $"{Key}: {Convert.ToBase64String(ValueBytes!)}" : $"{Key}: {Value}";
    }
}
