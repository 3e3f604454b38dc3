using System.CommandLine;
using Hyder.Security;

namespace Hyder.Server.Host;

/// <summary>
/// <c>hyder-server keys new --name NAME --role ROLE</c>: makes an API key, prints the token once
/// (for the client) and the line the server is configured with (its hash, never the token).
/// </summary>
internal static class KeysCommand
{
    public static Command Create()
    {
        var name = new Option<string>("--name") { Description = "The key's name in logs and in PERMISSION_DENIED messages (letters, digits, - _ . @).", Required = true };
        var role = new Option<string>("--role") { Description = $"The key's role: {ClientRoles.Names}.", Required = true };
        var make = new Command("new", "Make an API key: prints the token (give it to the client; it is shown only now) and the 'NAME ROLE sha256:HEX' line for --keys-file, --api-key or Auth:Keys.");
        make.Options.Add(name);
        make.Options.Add(role);
        make.SetAction(parse =>
        {
            var keyName = parse.GetValue(name)!;
            if (!ClientRoles.TryParse(parse.GetValue(role), out var keyRole))
            {
                Console.Error.WriteLine($"hyder-server keys new: --role '{parse.GetValue(role)}' is not {ClientRoles.Names}.");
                return ServeCommand.BadConfiguration;
            }

            var token = ApiKeyStore.NewToken();
            var line = ApiKeyStore.Line(keyName, keyRole, token);
            try
            {
                new ApiKeyStore().AddLine(line);
            }
            catch (FormatException e)
            {
                Console.Error.WriteLine($"hyder-server keys new: {e.Message}");
                return ServeCommand.BadConfiguration;
            }

            Console.Out.WriteLine($"token: {token}");
            Console.Out.WriteLine($"key:   {line}");
            Console.Error.WriteLine("The token is shown only now; the server keeps only the key line (its SHA-256).");
            return 0;
        });
        var keys = new Command("keys", "API keys for the client API (docs/security.md).");
        keys.Subcommands.Add(make);
        return keys;
    }
}
