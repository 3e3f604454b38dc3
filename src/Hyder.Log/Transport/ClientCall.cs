using System.Threading.Tasks.Sources;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;

namespace Hyder.Log.Transport;

/// <summary>The answer to one request over a <see cref="FrameClient"/>.</summary>
/// <param name="Status">The status the server answered.</param>
/// <param name="Epoch">The epoch field of the response.</param>
/// <param name="Value">The address-or-value field of the response.</param>
/// <param name="PayloadLength">Bytes copied into the caller's destination.</param>
internal readonly record struct FrameReply(LogStatus Status, long Epoch, long Value, int PayloadLength);

/// <summary>
/// One request in flight on a <see cref="FrameClient"/>: a reusable awaitable bound to a slot of
/// the connection's table, awaited directly as a unit's, the sequencer's or a raw reply, so no
/// async state machine sits between the caller and the socket. The request id is
/// slot | generation, so a late answer to a previous use of the slot is recognized and dropped.
/// Reading the result hands the call back to its connection.
/// </summary>
internal sealed class ClientCall : IValueTaskSource<FrameReply>, IValueTaskSource<UnitReply>, IValueTaskSource<TokenReply>
{
    private readonly FrameClient _owner;
    private ManualResetValueTaskSourceCore<FrameReply> _core = new() { RunContinuationsAsynchronously = true };
    private uint _generation;

    public ClientCall(FrameClient owner, int slot)
    {
        _owner = owner;
        Slot = slot;
    }

    public int Slot { get; }

    public uint RequestId { get; private set; }

    public FrameHeader Header;

    public ReadOnlyMemory<byte> Payload { get; set; }

    public Memory<byte> Destination { get; set; }

    /// <summary>When the request was sent (<see cref="Environment.TickCount64"/>), for the request timeout.</summary>
    public long StartedAt { get; set; }

    public short Version => _core.Version;

    /// <summary>Prepares the call for a new request; returns its request id.</summary>
    public uint Begin(int slotBits)
    {
        _generation++;
        RequestId = (uint)Slot | (_generation << slotBits);
        return RequestId;
    }

    public void Complete(FrameReply reply) => _core.SetResult(reply);

    public void Fail(Exception exception) => _core.SetException(exception);

    private FrameReply Take(short token)
    {
        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            _core.Reset();
            Payload = default;
            Destination = default;
            _owner.Release(this);
        }
    }

    public FrameReply GetResult(short token) => Take(token);

    UnitReply IValueTaskSource<UnitReply>.GetResult(short token)
    {
        var reply = Take(token);
        return new UnitReply(reply.Status, reply.Value);
    }

    TokenReply IValueTaskSource<TokenReply>.GetResult(short token)
    {
        var reply = Take(token);
        return new TokenReply(reply.Status, reply.Epoch, reply.Value);
    }

    public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

    public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}
