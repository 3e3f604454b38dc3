using System.Collections;
using System.CommandLine;
using Hyder.Log.Transport;

namespace Hyder.Log.Host;

/// <summary>
/// The cluster TLS options, shared by serving and the admin commands: this member's certificate
/// and key and the cluster CA (PEM files), or an explicit choice of plaintext. Each falls back to
/// the environment variable the transaction server's host reads for the same key
/// (<c>HYDER_CLUSTERTLS__CERTIFICATE</c> for <c>ClusterTls:Certificate</c>), so one env file can
/// serve both hosts and systemd units set them with <c>EnvironmentFile=</c>.
/// </summary>
internal static class ClusterTlsOptions
{
    public static readonly Option<string?> Certificate = new("--cluster-tls-cert")
    {
        Description = "This member's certificate (PEM; intermediates may follow) for mutual TLS with the other cluster members. [HYDER_CLUSTERTLS__CERTIFICATE]",
        HelpName = "file",
        Recursive = true,
    };

    public static readonly Option<string?> Key = new("--cluster-tls-key")
    {
        Description = "The private key of --cluster-tls-cert (PEM, unencrypted). [HYDER_CLUSTERTLS__KEY]",
        HelpName = "file",
        Recursive = true,
    };

    public static readonly Option<string?> Ca = new("--cluster-ca")
    {
        Description = "The cluster CA (PEM bundle): the only issuer whose member certificates are accepted. [HYDER_CLUSTERTLS__CA]",
        HelpName = "file",
        Recursive = true,
    };

    public static readonly Option<bool> AllowPlaintext = new("--cluster-allow-plaintext")
    {
        Description = "Talk to the other members without TLS (a trusted network, tests). Without it the three TLS files are required. [HYDER_CLUSTERTLS__ALLOWPLAINTEXT]",
        Recursive = true,
    };

    public static void AddTo(Command command)
    {
        command.Options.Add(Certificate);
        command.Options.Add(Key);
        command.Options.Add(Ca);
        command.Options.Add(AllowPlaintext);
    }

    /// <summary>
    /// Plaintext or mutual TLS from the command line, else the environment; throws
    /// <see cref="ArgumentException"/> saying what to change.
    /// </summary>
    public static TransportSecurity Read(ParseResult parse, Func<string, string?>? environment = null)
    {
        environment ??= Environment;
        var allow = parse.GetResult(AllowPlaintext) is { Implicit: false }
            ? parse.GetValue(AllowPlaintext)
            : environment("HYDER_CLUSTERTLS__ALLOWPLAINTEXT") is { Length: > 0 } text
                ? bool.TryParse(text.Trim(), out var value) ? value : throw new ArgumentException($"HYDER_CLUSTERTLS__ALLOWPLAINTEXT '{text}' is not true or false.")
                : false;
        return TransportSecurity.FromSettings(
            parse.GetValue(Certificate) ?? environment("HYDER_CLUSTERTLS__CERTIFICATE"),
            parse.GetValue(Key) ?? environment("HYDER_CLUSTERTLS__KEY"),
            parse.GetValue(Ca) ?? environment("HYDER_CLUSTERTLS__CA"),
            allow);
    }

    /// <summary>An environment variable by name, case-insensitively (as configuration binding reads them), empty as unset.</summary>
    private static string? Environment(string name)
    {
        foreach (DictionaryEntry entry in System.Environment.GetEnvironmentVariables())
        {
            if (string.Equals((string)entry.Key, name, StringComparison.OrdinalIgnoreCase) && entry.Value is string { Length: > 0 } value)
            {
                return value.Trim();
            }
        }

        return null;
    }
}
