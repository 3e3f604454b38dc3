using System.CommandLine;
using Hyder.Log.Host;

// hyder-log --role unit --data DIR --port N           a log unit
// hyder-log --role sequencer --port N --projection-store SPEC
// hyder-log --role projection --data DIR --port N     the file-backed projection store, served over TCP
// hyder-log admin bootstrap|replace|add-stripe|new-epoch|show --projection-store SPEC ...
var root = new RootCommand("Hyder log host: runs a log unit, the sequencer and/or the projection store of the shared log.");
ServeCommand.Configure(root);
root.Subcommands.Add(AdminCommands.Create());
return await root.Parse(args).InvokeAsync().ConfigureAwait(false);
