using Hyder.Api.V1;
using Hyder.Rpc;

namespace Hyder.Api;

/// <summary>
/// The method descriptors of <c>hyder.v1.Hyder</c> for Hyder.Rpc, shared by the server binding and
/// the client. Full names are <c>/hyder.v1.Hyder/Method</c>, as any gRPC client expects.
/// </summary>
public static class HyderMethods
{
    /// <summary>The fully qualified service name.</summary>
    public const string ServiceName = "hyder.v1.Hyder";

    /// <summary>A one-shot transaction (unary).</summary>
    public static readonly Method<ExecuteRequest, ExecuteResponse> Execute =
        new(MethodType.Unary, ServiceName, "Execute", ExecuteRequest.Parser, ExecuteResponse.Parser);

    /// <summary>An interactive transaction (bidirectional streaming).</summary>
    public static readonly Method<TransactRequest, TransactResponse> Transact =
        new(MethodType.DuplexStreaming, ServiceName, "Transact", TransactRequest.Parser, TransactResponse.Parser);

    /// <summary>A read-only range scan (server streaming, batches of rows).</summary>
    public static readonly Method<ScanRequest, ScanResponse> Scan =
        new(MethodType.ServerStreaming, ServiceName, "Scan", ScanRequest.Parser, ScanResponse.Parser);

    /// <summary>Read-only snapshot gets of several keys (unary).</summary>
    public static readonly Method<ReadRequest, ReadResponse> Read =
        new(MethodType.Unary, ServiceName, "Read", ReadRequest.Parser, ReadResponse.Parser);

    /// <summary>The server's view of the cluster (unary).</summary>
    public static readonly Method<StatusRequest, StatusResponse> Status =
        new(MethodType.Unary, ServiceName, "Status", StatusRequest.Parser, StatusResponse.Parser);

    /// <summary>A hash of the last committed state (unary).</summary>
    public static readonly Method<StateHashRequest, StateHashResponse> StateHash =
        new(MethodType.Unary, ServiceName, "StateHash", StateHashRequest.Parser, StateHashResponse.Parser);

    /// <summary>Writes a checkpoint (unary, admin).</summary>
    public static readonly Method<CheckpointRequest, CheckpointResponse> Checkpoint =
        new(MethodType.Unary, ServiceName, "Checkpoint", CheckpointRequest.Parser, CheckpointResponse.Parser);
}
