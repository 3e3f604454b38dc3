return await Hyder.Soak.SoakCommand.RunAsync(args).ConfigureAwait(false);
