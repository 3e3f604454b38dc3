using Hyder.Ycsb.Cli;

// dotnet run -c Release --project tools/Hyder.Ycsb -- load|run --target postgres --pg "..." [options]   (docs/ycsb.md)
ClientProcess.Configure(args);
return await YcsbCommands.InvokeAsync(args, Console.Out, Console.Error).ConfigureAwait(false);
