using System.Collections.Concurrent;
using Google.Protobuf;

namespace Hyder.Rpc.Tests;

/// <summary>The method descriptors of echo.proto's service, shared by servers and clients.</summary>
internal static class EchoMethods
{
    public const string Service = "hyder.rpc.test.Echo";

    public static readonly Method<EchoRequest, EchoReply> Unary = new(MethodType.Unary, Service, "Unary", EchoRequest.Parser, EchoReply.Parser);
    public static readonly Method<EchoRequest, EchoReply> Count = new(MethodType.ServerStreaming, Service, "Count", EchoRequest.Parser, EchoReply.Parser);
    public static readonly Method<EchoRequest, EchoReply> Collect = new(MethodType.ClientStreaming, Service, "Collect", EchoRequest.Parser, EchoReply.Parser);
    public static readonly Method<EchoRequest, EchoReply> Chat = new(MethodType.DuplexStreaming, Service, "Chat", EchoRequest.Parser, EchoReply.Parser);
    public static readonly Method<EchoRequest, EchoReply> Wait = new(MethodType.Unary, Service, "Wait", EchoRequest.Parser, EchoReply.Parser);
}

/// <summary>The C# implementation of the echo service; records what the server saw for the tests.</summary>
internal sealed class EchoService
{
    /// <summary>Completes when a Wait call's token fires: "deadline" or "cancelled".</summary>
    public TaskCompletionSource<string> WaitEnded { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when the first Wait call reaches its handler.</summary>
    public TaskCompletionSource WaitStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>How every Wait call ended, in order.</summary>
    public ConcurrentQueue<string> WaitEndings { get; } = new();

    /// <summary>Completes with the time (UTC) the first Wait call's token fired, whichever side fired it.</summary>
    public TaskCompletionSource<DateTime> WaitCancelledAt { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>How many Wait calls reached their handler.</summary>
    public int WaitStarts => Volatile.Read(ref _waitStarts);

    private int _waitStarts;

    public RpcServiceRegistry Register(RpcServiceRegistry registry) => registry
        .AddUnary(EchoMethods.Unary, UnaryAsync)
        .AddServerStreaming(EchoMethods.Count, CountAsync)
        .AddClientStreaming(EchoMethods.Collect, CollectAsync)
        .AddDuplexStreaming(EchoMethods.Chat, ChatAsync)
        .AddUnary(EchoMethods.Wait, WaitAsync);

    private static async Task<EchoReply> UnaryAsync(EchoRequest request, ServerCallContext context)
    {
        var echo = context.RequestHeaders.GetValue("x-echo");
        var echoBin = context.RequestHeaders.GetValueBytes("x-echo-bin");
        if (echo is not null || echoBin is not null)
        {
            var headers = new Metadata();
            if (echo is not null)
            {
                headers.Add("x-echo", echo);
                context.ResponseTrailers.Add("x-echo-trailer", echo);
            }

            if (echoBin is not null)
            {
                headers.Add("x-echo-bin", echoBin);
                context.ResponseTrailers.Add("x-echo-trailer-bin", echoBin);
            }

            await context.WriteResponseHeadersAsync(headers);
        }

        ThrowIfAsked(request);
        return new EchoReply { Text = request.Text, Payload = request.Payload };
    }

    private static async Task CountAsync(EchoRequest request, IServerStreamWriter<EchoReply> responses, ServerCallContext context)
    {
        for (var i = 0; i < request.Count; i++)
        {
            await responses.WriteAsync(new EchoReply { Text = request.Text, Index = i, Payload = request.Payload });
        }

        ThrowIfAsked(request);
    }

    private static async Task<EchoReply> CollectAsync(IAsyncStreamReader<EchoRequest> requests, ServerCallContext context)
    {
        var texts = new List<string>();
        long payload = 0;
        await foreach (var request in requests.ReadAllAsync(context.CancellationToken))
        {
            ThrowIfAsked(request);
            texts.Add(request.Text);
            payload += request.Payload.Length;
            if (request.Last)
            {
                break;
            }
        }

        return new EchoReply { Text = string.Join(',', texts), Index = texts.Count, Payload = ByteString.CopyFromUtf8(payload.ToString(System.Globalization.CultureInfo.InvariantCulture)) };
    }

    private static async Task ChatAsync(IAsyncStreamReader<EchoRequest> requests, IServerStreamWriter<EchoReply> responses, ServerCallContext context)
    {
        var index = 0;
        await foreach (var request in requests.ReadAllAsync(context.CancellationToken))
        {
            ThrowIfAsked(request);
            await responses.WriteAsync(new EchoReply { Text = request.Text, Index = index++, Payload = request.Payload });
            if (request.Last)
            {
                return;
            }
        }
    }

    private async Task<EchoReply> WaitAsync(EchoRequest request, ServerCallContext context)
    {
        Interlocked.Increment(ref _waitStarts);
        WaitStarted.TrySetResult();
        if (request.Text == "headers")
        {
            // Lets a client that cannot see our WaitStarted know the call reached the handler.
            await context.WriteResponseHeadersAsync(new Metadata());
        }

        try
        {
            await Task.Delay(Timeout.Infinite, context.CancellationToken);
        }
        catch (OperationCanceledException)
        {
            WaitCancelledAt.TrySetResult(DateTime.UtcNow);

            // The client resets the stream at its deadline too, and may beat the server's timer: the tests' deadlines and cancellations are seconds apart.
            var ending = DateTime.UtcNow >= context.Deadline.AddMilliseconds(-500) ? "deadline" : "cancelled";
            WaitEndings.Enqueue(ending);
            WaitEnded.TrySetResult(ending);
            throw;
        }

        return new EchoReply();
    }

    private static void ThrowIfAsked(EchoRequest request)
    {
        if (request.FailCode != 0)
        {
            var trailers = new Metadata { { "x-fail", "yes" } };
            throw new RpcException(new Status((StatusCode)request.FailCode, request.FailMessage), trailers);
        }
    }
}
