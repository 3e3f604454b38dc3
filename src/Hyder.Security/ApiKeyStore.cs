using System.Globalization;
using System.Security.Cryptography;
using System.Text;

namespace Hyder.Security;

/// <summary>
/// API keys (bearer tokens) as the server keeps them: a name, a role and the SHA-256 of the token,
/// never the token itself. A presented token is hashed and compared with every stored hash in
/// constant time (<see cref="CryptographicOperations.FixedTimeEquals"/>), without stopping at a match,
/// so the time taken says nothing about which bytes or which key matched.
/// </summary>
/// <remarks>
/// Tokens are 256 random bits (<see cref="NewToken"/>), so an unsalted fast hash is enough: a stolen
/// key file gives no token back, and guessing one is 2^256 work. The text form of a key, one per
/// line of a keys file or one per configuration entry, is <c>NAME ROLE sha256:HEX</c>.
/// </remarks>
public sealed class ApiKeyStore
{
    /// <summary>The prefix of every token <see cref="NewToken"/> makes, so leaked ones are easy to find.</summary>
    public const string TokenPrefix = "hyder_";

    private const string HashPrefix = "sha256:";

    private readonly List<Entry> _entries = [];

    /// <summary>How many keys are stored.</summary>
    public int Count => _entries.Count;

    /// <summary>A new random token: <c>hyder_</c> and 32 random bytes in base64url.</summary>
    /// <returns>The token.</returns>
    public static string NewToken()
    {
        Span<byte> random = stackalloc byte[32];
        RandomNumberGenerator.Fill(random);
        return TokenPrefix + Convert.ToBase64String(random).TrimEnd('=').Replace('+', '-').Replace('/', '_');
    }

    /// <summary>The stored form of a token's hash: <c>sha256:</c> and 64 lowercase hex digits.</summary>
    /// <param name="token">The token.</param>
    /// <returns>The hash text.</returns>
    public static string HashText(string token)
    {
        ArgumentNullException.ThrowIfNull(token);
        return HashPrefix + Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(token)));
    }

    /// <summary>The configuration line of a key: <c>NAME ROLE sha256:HEX</c>.</summary>
    /// <param name="name">The key's name.</param>
    /// <param name="role">Its role.</param>
    /// <param name="token">The token.</param>
    /// <returns>The line.</returns>
    public static string Line(string name, ClientRole role, string token) =>
        $"{name} {ClientRoles.Name(role)} {HashText(token)}";

    /// <summary>Adds a key by name, role and hash text (<c>sha256:HEX</c>).</summary>
    /// <param name="name">A name for logs; letters, digits, '-', '_', '.', '@'.</param>
    /// <param name="role">Its role (not <see cref="ClientRole.None"/>).</param>
    /// <param name="hash">The token's hash as <see cref="HashText"/> writes it.</param>
    /// <exception cref="FormatException">A part is malformed, or the name is already used.</exception>
    public void Add(string name, ClientRole role, string hash)
    {
        ArgumentNullException.ThrowIfNull(name);
        ArgumentNullException.ThrowIfNull(hash);
        if (name.Length is 0 or > 64 || !name.All(c => char.IsAsciiLetterOrDigit(c) || c is '-' or '_' or '.' or '@'))
        {
            throw new FormatException($"key name '{name}' must be 1 to 64 letters, digits, '-', '_', '.' or '@'.");
        }

        if (role == ClientRole.None)
        {
            throw new FormatException($"key '{name}' needs a role: {ClientRoles.Names}.");
        }

        if (!hash.StartsWith(HashPrefix, StringComparison.OrdinalIgnoreCase) || hash.Length != HashPrefix.Length + 64
            || !hash.AsSpan(HashPrefix.Length).ToString().All(char.IsAsciiHexDigit))
        {
            // The message never repeats the value: it may be a token pasted by mistake.
            throw new FormatException($"key '{name}': the hash must be sha256: and 64 hex digits (hyder-server keys new prints it), not the token itself.");
        }

        if (_entries.Any(e => e.Name == name))
        {
            throw new FormatException($"key name '{name}' appears twice.");
        }

        _entries.Add(new Entry(name, role, Convert.FromHexString(hash.AsSpan(HashPrefix.Length))));
    }

    /// <summary>Adds a key from its line, <c>NAME ROLE sha256:HEX</c>.</summary>
    /// <param name="line">The line.</param>
    /// <exception cref="FormatException">The line is malformed.</exception>
    public void AddLine(string line)
    {
        ArgumentNullException.ThrowIfNull(line);
        var parts = line.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries);
        if (parts.Length != 3)
        {
            throw new FormatException("a key is NAME ROLE sha256:HEX (three words).");
        }

        if (!ClientRoles.TryParse(parts[1], out var role))
        {
            throw new FormatException($"key '{parts[0]}': '{parts[1]}' is not a role ({ClientRoles.Names}).");
        }

        Add(parts[0], role, parts[2]);
    }

    /// <summary>Adds every key of a keys file: one <c>NAME ROLE sha256:HEX</c> per line; blank lines and lines starting with # are skipped.</summary>
    /// <param name="path">The file.</param>
    /// <exception cref="FormatException">A line is malformed; the message gives its number.</exception>
    public void AddFile(string path)
    {
        var number = 0;
        foreach (var raw in File.ReadLines(path))
        {
            number++;
            var line = raw.Trim();
            if (line.Length == 0 || line[0] == '#')
            {
                continue;
            }

            try
            {
                AddLine(line);
            }
            catch (FormatException e)
            {
                throw new FormatException(string.Create(CultureInfo.InvariantCulture, $"{path} line {number}: {e.Message}"), e);
            }
        }
    }

    /// <summary>The key a token belongs to, or null. Compares with every key in constant time.</summary>
    /// <param name="token">The presented token.</param>
    /// <returns>The caller, or null when no key matches.</returns>
    public CallerIdentity? Find(ReadOnlySpan<char> token)
    {
        var length = Encoding.UTF8.GetMaxByteCount(token.Length);
        var bytes = length <= 512 ? stackalloc byte[length] : new byte[length];
        var written = Encoding.UTF8.GetBytes(token, bytes);
        Span<byte> hash = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(bytes[..written], hash);
        CryptographicOperations.ZeroMemory(bytes);
        Entry? found = null;
        foreach (var entry in _entries)
        {
            // No early exit: every key is compared whatever matched before.
            if (CryptographicOperations.FixedTimeEquals(hash, entry.Hash))
            {
                found = entry;
            }
        }

        return found is null ? null : new CallerIdentity(found.Name, found.Role, CallerIdentity.ApiKeyScheme);
    }

    private sealed record Entry(string Name, ClientRole Role, byte[] Hash);
}
