using System.CommandLine;
using Grpc.Core;
using Hyder.Client;

namespace Hyder.Server.Host;

/// <summary>
/// <c>hyder-server trim --connect CONNECTION [--keep K] [--token-file FILE]</c>: asks a running
/// server to trim the shared log now by the trim rule (docs/server.md, "Trimming the log"). The
/// caller needs the admin role. Exit codes: 0 trimmed, 1 the server refused or could not be
/// reached (the status and its reason are printed), 2 bad arguments.
/// </summary>
internal static class TrimCommand
{
    /// <summary>Exit code when the call failed.</summary>
    public const int CallFailed = 1;

    public static Command Create()
    {
        var connect = new Option<string>("--connect")
        {
            Description = "The server, as a client connection string: 'Endpoint=https://HOST:PORT;TrustedCa=ca.pem;Token=...' (keys: docs/api.md; Token, or the client certificate, must carry the admin role).",
            HelpName = "connection",
            Required = true,
        };
        var keep = new Option<int>("--keep")
        {
            Description = "Keep the latest k self-contained checkpoints: the log goes below the lowest position they need, less the server's trim margin (default 1).",
            HelpName = "k",
            DefaultValueFactory = _ => 1,
        };
        var tokenFile = new Option<string?>("--token-file")
        {
            Description = "Read the API key's token from this file (first line) instead of the connection string, so it stays out of the process list.",
            HelpName = "file",
        };
        var trim = new Command("trim", "Ask a running server to trim the shared log now by the trim rule (admin role; docs/server.md, \"Trimming the log\"). Prints the position the log is trimmed below.");
        trim.Options.Add(connect);
        trim.Options.Add(keep);
        trim.Options.Add(tokenFile);
        trim.SetAction((parse, cancellationToken) => RunAsync(parse.GetValue(connect)!, parse.GetValue(keep), parse.GetValue(tokenFile), Console.Out, Console.Error, cancellationToken));
        return trim;
    }

    /// <summary>Runs the command; returns its exit code.</summary>
    public static async Task<int> RunAsync(string connection, int keep, string? tokenFile, TextWriter output, TextWriter error, CancellationToken cancellationToken)
    {
        HyderClientSettings settings;
        try
        {
            if (keep < 1)
            {
                throw new ArgumentException($"--keep must be at least 1, not {keep}");
            }

            settings = HyderClientSettings.Parse(connection);
            if (tokenFile is not null)
            {
                var token = File.ReadLines(tokenFile).FirstOrDefault()?.Trim();
                if (string.IsNullOrEmpty(token))
                {
                    throw new ArgumentException($"--token-file: {tokenFile} holds no token");
                }

                settings = settings with { Token = token };
            }
        }
        catch (Exception e) when (e is ArgumentException or IOException or UnauthorizedAccessException)
        {
            await error.WriteLineAsync($"hyder-server trim: {e.Message}").ConfigureAwait(false);
            return ServeCommand.BadConfiguration;
        }

        await using var client = new HyderClient(settings);
        try
        {
            var mark = await client.TrimAsync(keep, cancellationToken).ConfigureAwait(false);
            await output.WriteLineAsync($"trimmed the log below @{mark} (keeping the latest {keep} checkpoint(s))").ConfigureAwait(false);
            return 0;
        }
        catch (HyderException e)
        {
            await error.WriteLineAsync($"hyder-server trim: {StatusName(e.StatusCode)}: {e.Message}").ConfigureAwait(false);
            return CallFailed;
        }
    }

    /// <summary>The gRPC status as its canonical name (PERMISSION_DENIED).</summary>
    private static string StatusName(StatusCode code) => code switch
    {
        StatusCode.InvalidArgument => "INVALID_ARGUMENT",
        StatusCode.FailedPrecondition => "FAILED_PRECONDITION",
        StatusCode.PermissionDenied => "PERMISSION_DENIED",
        StatusCode.Unauthenticated => "UNAUTHENTICATED",
        StatusCode.Unavailable => "UNAVAILABLE",
        StatusCode.DeadlineExceeded => "DEADLINE_EXCEEDED",
        _ => code.ToString().ToUpperInvariant(),
    };
}
