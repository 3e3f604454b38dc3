namespace Hyder.Soak;

/// <summary>The soak command.</summary>
internal static class SoakCommand
{
    public static Task<int> RunAsync(string[] args) => Task.FromResult(args.Length);
}
