using System.IO.Pipelines;
using System.Net;
using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>
/// The request body of a call: either one message written at once (unary, server streaming), or
/// a stream the caller writes into while the response flows (client and duplex streaming). In the
/// streaming case <see cref="HttpClient"/> hands over the HTTP/2 request stream through
/// <see cref="SerializeToStreamAsync(Stream, TransportContext?, CancellationToken)"/>, which stays
/// open until the caller completes it; returning from it ends the stream (END_STREAM).
/// </summary>
internal sealed class RequestContent : HttpContent
{
    private readonly IMessage? _single;
    private readonly int _maxSize;
    private readonly TaskCompletionSource<Stream> _stream = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _complete = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private PipeWriter? _writer;

    public RequestContent(IMessage? single, int maxSize)
    {
        _single = single;
        _maxSize = maxSize;
        Headers.TryAddWithoutValidation("Content-Type", GrpcProtocol.ContentType);
    }

    /// <summary>Writes one message to the request stream and flushes it.</summary>
    public async Task WriteAsync(IMessage message, CancellationToken cancellationToken)
    {
        var stream = await _stream.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        _writer ??= PipeWriter.Create(stream, new StreamPipeWriterOptions(leaveOpen: true));
        MessageFraming.Write(_writer, message, _maxSize);
        await _writer.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Ends the request stream.</summary>
    public void Complete() => _complete.TrySetResult();

    /// <summary>The call failed: writers waiting for the stream get the failure, and the body ends.</summary>
    public void Abort(Exception exception)
    {
        _stream.TrySetException(exception);
        _complete.TrySetResult();
    }

    protected override Task SerializeToStreamAsync(Stream stream, TransportContext? context) =>
        SerializeToStreamAsync(stream, context, CancellationToken.None);

    protected override async Task SerializeToStreamAsync(Stream stream, TransportContext? context, CancellationToken cancellationToken)
    {
        if (_single is not null)
        {
            var writer = PipeWriter.Create(stream, new StreamPipeWriterOptions(leaveOpen: true));
            MessageFraming.Write(writer, _single, _maxSize);
            await writer.FlushAsync(cancellationToken).ConfigureAwait(false);
            await writer.CompleteAsync().ConfigureAwait(false);
            return;
        }

        // SocketsHttpHandler holds the HEADERS frame back until the body writes: a call whose client
        // reads before it writes would not reach the server until that write, or its deadline.
        await stream.FlushAsync(cancellationToken).ConfigureAwait(false);
        _stream.TrySetResult(stream);
        await _complete.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    protected override bool TryComputeLength(out long length)
    {
        length = -1;
        return false;
    }
}
