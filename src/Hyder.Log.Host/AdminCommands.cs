using System.CommandLine;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Transport;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Host;

/// <summary>
/// <c>admin</c>: reconfiguration from the command line. Each command reads the latest projection
/// from the store, changes it through <see cref="LogAdmin"/> and prints the projection installed.
/// </summary>
internal static class AdminCommands
{
    private static readonly Option<string[]> s_chain = new("--chain")
    {
        Description = "A replica chain, head first: ADDRESS:PORT,ADDRESS:PORT (repeat for more chains).",
        AllowMultipleArgumentsPerToken = false,
    };

    private static readonly Option<string?> s_sequencer = new("--sequencer") { Description = "The sequencer's endpoint ADDRESS:PORT." };

    private static readonly Option<int> s_blockSize = new("--block-size") { Description = "Largest block in bytes.", DefaultValueFactory = _ => 8192 };

    private static readonly Option<string> s_failed = new("--failed") { Description = "The unit to replace.", Required = true };

    private static readonly Option<string> s_replacement = new("--replacement") { Description = "The empty unit taking its place.", Required = true };

    public static Command Create()
    {
        var admin = new Command("admin", "Reconfigure the log: bootstrap, replace a unit, add a stripe, start a new epoch, show the projection.");
        admin.Options.Add(ServeCommand.ProjectionStore);

        var bootstrap = new Command("bootstrap", "Install the first projection and start the sequencer.") { s_sequencer, s_chain, s_blockSize };
        bootstrap.SetAction((parse, ct) => RunAsync(parse, (a, _) => a.BootstrapAsync(
            new Projection
            {
                Epoch = 1,
                BlockSize = parse.GetValue(s_blockSize),
                Sequencer = parse.GetValue(s_sequencer) ?? throw new ArgumentException("--sequencer is required."),
                Ranges = [new LayoutRange { Start = 0, Chains = Chains(parse) }],
            },
            ct), ct));

        var replace = new Command("replace", "Seal, copy the failed unit's chains to the replacement, install the next projection.") { s_failed, s_replacement };
        replace.SetAction((parse, ct) => RunAsync(parse, (a, _) => a.ReplaceUnitAsync(parse.GetValue(s_failed)!, parse.GetValue(s_replacement)!, ct), ct));

        var addStripe = new Command("add-stripe", "Stripe addresses above the tail over one more chain.") { s_chain };
        addStripe.SetAction((parse, ct) => RunAsync(parse, (a, _) => a.AddStripeAsync(Chains(parse).Single(), ct), ct));

        var newEpoch = new Command("new-epoch", "Seal and restart the sequencer above the tail (optionally a different sequencer).") { s_sequencer };
        newEpoch.SetAction((parse, ct) => RunAsync(parse, (a, _) => a.NewEpochAsync(parse.GetValue(s_sequencer), ct), ct));

        var show = new Command("show", "Print the latest projection.");
        show.SetAction((parse, ct) => RunAsync(parse, async (_, store) =>
            await store.GetLatestAsync(ct).ConfigureAwait(false) ?? throw new SharedLogException("No projection installed."), ct));

        admin.Subcommands.Add(bootstrap);
        admin.Subcommands.Add(replace);
        admin.Subcommands.Add(addStripe);
        admin.Subcommands.Add(newEpoch);
        admin.Subcommands.Add(show);
        return admin;
    }

    private static IReadOnlyList<IReadOnlyList<string>> Chains(ParseResult parse)
    {
        var chains = (parse.GetValue(s_chain) ?? [])
            .Select(c => (IReadOnlyList<string>)c.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
            .ToArray();
        return chains.Length > 0 ? chains : throw new ArgumentException("At least one --chain is required.");
    }

    private static async Task<int> RunAsync(ParseResult parse, Func<LogAdmin, IProjectionStore, Task<Projection>> action, CancellationToken cancellationToken)
    {
        var spec = parse.GetValue(ServeCommand.ProjectionStore);
        if (spec is null)
        {
            await Console.Error.WriteLineAsync("--projection-store is required.").ConfigureAwait(false);
            return 2;
        }

        TransportSecurity security;
        try
        {
            security = ClusterTlsOptions.Read(parse);
        }
        catch (ArgumentException e)
        {
            await Console.Error.WriteLineAsync(e.Message).ConfigureAwait(false);
            return 2;
        }

        using var owned = security;
        using var loggers = LoggerFactory.Create(b => b.AddSimpleConsole(o => o.SingleLine = true));
        var store = ProjectionStoreSpec.Open(spec, security: security);
        await using var connector = new TcpConnector(parse.GetValue(s_blockSize), security: security);
        try
        {
            var projection = await action(new LogAdmin(store, connector, loggers.CreateLogger<LogAdmin>()), store).ConfigureAwait(false);
            Console.WriteLine(projection.ToJson());
            return 0;
        }
        catch (Exception e) when (e is SharedLogException or ArgumentException)
        {
            await Console.Error.WriteLineAsync($"admin: {e.Message}").ConfigureAwait(false);
            return 1;
        }
        finally
        {
            if (store is IAsyncDisposable disposable)
            {
                await disposable.DisposeAsync().ConfigureAwait(false);
            }
        }
    }
}
