namespace Hyder.Benchmarks;

/// <summary>What every report command of this project reads from its command line, and where it writes.</summary>
internal static class ReportArguments
{
    /// <summary>The value after <paramref name="name"/> in <paramref name="args"/>, or null.</summary>
    public static string? Option(string[] args, string name)
    {
        var i = Array.IndexOf(args, name);
        return i >= 0 && i + 1 < args.Length ? args[i + 1] : null;
    }

    /// <summary>
    /// The first argument that is neither one of <paramref name="flags"/> nor one of
    /// <paramref name="options"/> with a value after it, described for an error message; null when
    /// every argument is known.
    /// </summary>
    public static string? Unknown(string[] args, string[] flags, string[] options)
    {
        for (var i = 0; i < args.Length; i++)
        {
            if (flags.Contains(args[i]))
            {
                continue;
            }

            if (options.Contains(args[i]))
            {
                if (i + 1 == args.Length)
                {
                    return $"{args[i]} needs a value";
                }

                i++;
                continue;
            }

            return $"unknown option '{args[i]}'";
        }

        return null;
    }

    /// <summary>The repository's root (the first directory up from the working directory that holds Hyder.sln), or the working directory.</summary>
    public static string RepositoryRoot()
    {
        for (var dir = new DirectoryInfo(Environment.CurrentDirectory); dir is not null; dir = dir.Parent)
        {
            if (File.Exists(Path.Combine(dir.FullName, "Hyder.sln")))
            {
                return dir.FullName;
            }
        }

        return Environment.CurrentDirectory;
    }
}
