using Hyder.Server.Host;

// hyder-server --embedded [--data DIR]                  a single-machine cluster in one process
// hyder-server --log tcp:HOST:PORT --server-id s2 ...   one server of a cluster on a remote log
// Configuration: appsettings.json (or --config FILE), then HYDER_* environment variables, then the command line.
return await ServeCommand.InvokeAsync(args).ConfigureAwait(false);
