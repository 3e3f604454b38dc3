namespace Hyder.Rpc;

/// <summary>Options of one client call.</summary>
/// <param name="Headers">Custom request metadata; none when null.</param>
/// <param name="Deadline">
/// When the call must be over (UTC). Sent as <c>grpc-timeout</c> and enforced locally too: when it
/// passes the client cancels the stream and the call fails with DEADLINE_EXCEEDED.
/// </param>
/// <param name="CancellationToken">Cancels the call (RST_STREAM); it then fails with CANCELLED.</param>
public readonly record struct CallOptions(Metadata? Headers = null, DateTime? Deadline = null, CancellationToken CancellationToken = default);
