using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>
/// Hundreds of calls one after another on one channel, ended every way a call can end. Kestrel
/// tracks a stream whose request ends before the client's END_STREAM for 5 s, and refuses every new
/// stream (ENHANCE_YOUR_CALM) on a connection that tracks more than
/// max(2 × <c>MaxStreamsPerConnection</c>, 100). The servers here allow 10 streams per connection,
/// so kinds of ending that leave their streams behind fail these tests once 100 such calls fall
/// within 5 s (with half the calls ending so, 25 ms a call, where loopback calls take a few).
/// </summary>
public sealed class ConnectionReuseTests
{
    private const int Calls = 500;

    [Fact]
    public async Task DuplexCallsInARowAllSucceedHoweverEachEnds()
    {
        await using var t = await StartAsync();
        await EchoScenarios.DuplexCallsInARowAsync(t.Channel, Calls);
    }

    [Fact]
    public async Task ClientStreamingCallsInARowAllSucceedHoweverEachEnds()
    {
        await using var t = await StartAsync();
        await EchoScenarios.ClientStreamingCallsInARowAsync(t.Channel, Calls);
    }

    [Fact]
    public async Task ServerStreamingAndUnaryCallsInARowAllSucceedHoweverEachEnds()
    {
        await using var t = await StartAsync();
        await EchoScenarios.ServerStreamingAndUnaryCallsInARowAsync(t.Channel, Calls);
    }

    private static Task<TestServer> StartAsync() =>
        TestServer.StartAsync(options => options.ConfigureKestrel = kestrel => kestrel.Limits.Http2.MaxStreamsPerConnection = 10);
}
