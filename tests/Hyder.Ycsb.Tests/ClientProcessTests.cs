using Hyder.Ycsb.Cli;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// The YCSB process turns its thread pool's spin off when it only drives a running cluster
/// (<c>--connect</c>), and leaves it alone when the engine runs in the process.
/// </summary>
public sealed class ClientProcessTests
{
    [Theory]
    [InlineData(new[] { "run", "--connect", "http://127.0.0.1:7400" }, true)]
    [InlineData(new[] { "run", "--connect=http://127.0.0.1:7400" }, true)]
    [InlineData(new[] { "run", "--connect:Endpoint=http://127.0.0.1:7400" }, true)]
    [InlineData(new[] { "run", "--target", "embedded" }, false)]
    [InlineData(new[] { "run", "--connection", "x" }, false)]
    [InlineData(new string[0], false)]
    public void OnlyAConnectRunIsAClientProcess(string[] args, bool connect) =>
        Assert.Equal(connect, ClientProcess.DrivesARunningCluster(args));

    [Fact]
    public void AConnectRunTurnsTheThreadPoolsSpinOff()
    {
        Assert.False(ClientProcess.Configure(["run", "--target", "embedded"]));
        Assert.True(ClientProcess.Configure(["run", "--connect", "http://127.0.0.1:7400"]));
        Assert.Equal(0, AppContext.GetData(ClientProcess.SpinLimitSetting));
    }
}
