namespace Hyder.Testing;

/// <summary>
/// A test needs a program or a service from a Debian package this machine lacks. The test fails
/// (it never passes without running) with one line that names the package and how to get it;
/// there is no stack trace, since it would say nothing a reader needs.
/// </summary>
internal sealed class MissingPackageException(string message) : Exception(message)
{
    /// <summary>The command that installs and starts everything the tests need (the README's test command).</summary>
    public const string SetupCommand = "tools/test.sh";

    public override string? StackTrace => null;

    /// <summary>"<paramref name="problem"/>: install Debian's <paramref name="packages"/> …".</summary>
    public static MissingPackageException For(string problem, string packages) =>
        new($"{problem}: `sudo apt-get install -y {packages}` (Debian), or run `{SetupCommand}`, which installs and starts everything the tests need.");

    /// <summary>Throws unless <paramref name="program"/> is an executable file in a directory of PATH (or is an existing absolute path).</summary>
    public static void ThrowIfNotFound(string program, string packages)
    {
        if (!IsInstalled(program))
        {
            throw For($"`{program}` (Debian package {packages}) is missing", packages);
        }
    }

    /// <summary>Whether <paramref name="program"/> is an absolute path that exists or a file in a directory of PATH.</summary>
    public static bool IsInstalled(string program) =>
        Path.IsPathRooted(program)
            ? File.Exists(program)
            : (Environment.GetEnvironmentVariable("PATH") ?? "").Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
                .Any(d => File.Exists(Path.Combine(d, program)));
}
