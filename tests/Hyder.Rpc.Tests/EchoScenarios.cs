using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>Exchanges the round-trip and interop tests run alike against our server and against grpcio's.</summary>
internal static class EchoScenarios
{
    /// <summary>
    /// A duplex call where each request's reply arrives before the next request is sent, then a
    /// clean end: no more replies and status OK.
    /// </summary>
    public static async Task ChatInterleavedAsync(RpcChannel channel, int messages, CallOptions options)
    {
        using var call = channel.DuplexStreamingCall(EchoMethods.Chat, options);
        for (var i = 0; i < messages; i++)
        {
            await call.RequestStream.WriteAsync(new EchoRequest { Text = $"m{i}" });
            Assert.True(await call.ResponseStream.MoveNext());
            Assert.Equal($"m{i}", call.ResponseStream.Current.Text);
            Assert.Equal(i, call.ResponseStream.Current.Index);
        }

        await call.RequestStream.CompleteAsync();
        Assert.False(await call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }
}
