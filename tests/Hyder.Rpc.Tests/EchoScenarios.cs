using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>Exchanges the round-trip and interop tests run alike against our server and against grpcio's.</summary>
internal static class EchoScenarios
{
    private static readonly Method<EchoRequest, EchoReply> s_missingDuplex = new(MethodType.DuplexStreaming, EchoMethods.Service, "Nope", EchoRequest.Parser, EchoReply.Parser);

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

    /// <summary>
    /// Duplex calls one after another on one channel, ending in turn every way one can: the client
    /// half-closes first; the server ends first, with OK or an error, or before any request for an
    /// unknown method, while the client's request stream is still open; the client disposes the
    /// call after a reply, or right after its request. None may leave the connection worse for the
    /// next call.
    /// </summary>
    public static Task DuplexCallsInARowAsync(RpcChannel channel, int calls) => InARowAsync(calls, 6, async (i, ending) =>
    {
        using var call = channel.DuplexStreamingCall(ending == 4 ? s_missingDuplex : EchoMethods.Chat, Options());
        var text = $"d{i}";
        switch (ending)
        {
            case 0:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text });
                await ExpectReplyAsync(call.ResponseStream, text);
                await call.RequestStream.CompleteAsync();
                await ExpectEndAsync(call.ResponseStream, call);
                break;
            case 1:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text, Last = true });
                await ExpectReplyAsync(call.ResponseStream, text);
                await ExpectEndAsync(call.ResponseStream, call);
                break;
            case 2:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text, FailCode = (int)StatusCode.Aborted });
                Assert.Equal(StatusCode.Aborted, (await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext())).StatusCode);
                break;
            case 3:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text });
                await ExpectReplyAsync(call.ResponseStream, text);
                break;
            case 4:
                Assert.Equal(StatusCode.Unimplemented, (await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext())).StatusCode);
                break;
            default:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text });
                break;
        }
    });

    /// <summary>
    /// Client-streaming calls one after another on one channel: completed by the client; ended by
    /// the server before the client half-closes, with OK or an error; disposed after a request.
    /// </summary>
    public static Task ClientStreamingCallsInARowAsync(RpcChannel channel, int calls) => InARowAsync(calls, 4, async (i, ending) =>
    {
        using var call = channel.ClientStreamingCall(EchoMethods.Collect, Options());
        var text = $"c{i}";
        switch (ending)
        {
            case 0:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text });
                await call.RequestStream.WriteAsync(new EchoRequest { Text = "more" });
                await call.RequestStream.CompleteAsync();
                Assert.Equal($"{text},more", (await call).Text);
                break;
            case 1:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text, Last = true });
                Assert.Equal(text, (await call).Text);
                break;
            case 2:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text, FailCode = (int)StatusCode.Aborted });
                Assert.Equal(StatusCode.Aborted, (await Assert.ThrowsAsync<RpcException>(async () => await call)).StatusCode);
                break;
            default:
                await call.RequestStream.WriteAsync(new EchoRequest { Text = text });
                break;
        }
    });

    /// <summary>
    /// Server-streaming and unary calls one after another on one channel: read to the end; failed by
    /// the server after some messages; disposed after the first of many; a unary call that
    /// succeeds and one that fails.
    /// </summary>
    public static Task ServerStreamingAndUnaryCallsInARowAsync(RpcChannel channel, int calls) => InARowAsync(calls, 5, async (i, ending) =>
    {
        var text = $"s{i}";
        switch (ending)
        {
            case 0:
            {
                using var call = channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Text = text, Count = 3 }, Options());
                Assert.Equal([0, 1, 2], await call.ResponseStream.ReadAllAsync().Select(r => r.Index).ToListAsync());
                Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
                break;
            }

            case 1:
            {
                using var call = channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Text = text, Count = 2, FailCode = (int)StatusCode.Aborted }, Options());
                await ExpectReplyAsync(call.ResponseStream, text);
                await ExpectReplyAsync(call.ResponseStream, text);
                Assert.Equal(StatusCode.Aborted, (await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext())).StatusCode);
                break;
            }

            case 2:
            {
                using var call = channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Text = text, Count = 1000 }, Options());
                await ExpectReplyAsync(call.ResponseStream, text);
                break;
            }

            case 3:
                Assert.Equal(text, (await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = text }, Options())).Text);
                break;
            default:
                Assert.Equal(StatusCode.NotFound, (await Assert.ThrowsAsync<RpcException>(async () =>
                    await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { FailCode = (int)StatusCode.NotFound }, Options()))).StatusCode);
                break;
        }
    });

    private static CallOptions Options() => new(Deadline: DateTime.UtcNow.AddSeconds(10));

    private static async Task InARowAsync(int calls, int endings, Func<int, int, Task> call)
    {
        for (var i = 0; i < calls; i++)
        {
            try
            {
                await call(i, i % endings);
            }
            catch (Exception e)
            {
                throw new InvalidOperationException($"Call {i} (ending {i % endings}) failed after {i} calls in a row succeeded.", e);
            }
        }
    }

    private static async Task ExpectReplyAsync(IAsyncStreamReader<EchoReply> replies, string text)
    {
        Assert.True(await replies.MoveNext());
        Assert.Equal(text, replies.Current.Text);
    }

    private static async Task ExpectEndAsync(IAsyncStreamReader<EchoReply> replies, RpcCall call)
    {
        Assert.False(await replies.MoveNext());
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }
}
