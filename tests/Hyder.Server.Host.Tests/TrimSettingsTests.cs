using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>hyder-server's trim policy options (docs/server.md, "Trimming the log").</summary>
public sealed class TrimSettingsTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData("--trim-keep-checkpoints", "-1", "--trim-keep-checkpoints (Trim:KeepCheckpoints): -1 is outside 0..1048576.")]
    [InlineData("--trim-margin", "-5", "--trim-margin (Trim:Margin): -5 is below the least allowed, 0.")]
    public async Task TrimOptionsOutOfRangeExitWithTwoNamingTheOption(string option, string value, string message)
    {
        var (code, text) = await ServerProcess.RunAsync(null, "--embedded", option, value);
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains(message, text, StringComparison.Ordinal);
    }
}
