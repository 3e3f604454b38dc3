namespace Hyder.Rpc;

/// <summary>Reads a stream of messages: requests on the server, responses on the client.</summary>
/// <typeparam name="T">The message type.</typeparam>
public interface IAsyncStreamReader<out T>
{
    /// <summary>The message the last successful <see cref="MoveNext"/> read.</summary>
    T Current { get; }

    /// <summary>
    /// Reads the next message. Returns false at the end of the stream; throws
    /// <see cref="RpcException"/> when the call fails.
    /// </summary>
    /// <param name="cancellationToken">Cancels the wait (and, on the client, the call).</param>
    /// <returns>True when <see cref="Current"/> holds a new message.</returns>
    Task<bool> MoveNext(CancellationToken cancellationToken = default);
}

/// <summary>Writes a stream of messages. Writes must not overlap: await each before the next.</summary>
/// <typeparam name="T">The message type.</typeparam>
public interface IAsyncStreamWriter<in T>
{
    /// <summary>Writes one message and flushes it to the transport.</summary>
    /// <param name="message">The message.</param>
    /// <returns>A task that completes when the message is flushed.</returns>
    Task WriteAsync(T message);
}

/// <summary>The server's stream of responses.</summary>
/// <typeparam name="T">The response type.</typeparam>
public interface IServerStreamWriter<in T> : IAsyncStreamWriter<T>
{
}

/// <summary>The client's stream of requests; <see cref="CompleteAsync"/> ends it (half-close).</summary>
/// <typeparam name="T">The request type.</typeparam>
public interface IClientStreamWriter<in T> : IAsyncStreamWriter<T>
{
    /// <summary>Ends the request stream: the server's reader sees its end.</summary>
    /// <returns>A task that completes when the end is sent.</returns>
    Task CompleteAsync();
}

/// <summary>Helpers for stream readers.</summary>
public static class AsyncStreamReaderExtensions
{
    /// <summary>Reads every remaining message as an <see cref="IAsyncEnumerable{T}"/>.</summary>
    /// <typeparam name="T">The message type.</typeparam>
    /// <param name="reader">The reader.</param>
    /// <param name="cancellationToken">Cancels the reads.</param>
    /// <returns>The messages in order.</returns>
    public static async IAsyncEnumerable<T> ReadAllAsync<T>(
        this IAsyncStreamReader<T> reader,
        [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(reader);
        while (await reader.MoveNext(cancellationToken).ConfigureAwait(false))
        {
            yield return reader.Current;
        }
    }
}
