namespace Hyder.Rpc;

/// <summary>The outcome of a call: a status code and a human-readable detail (the <c>grpc-message</c>).</summary>
/// <param name="StatusCode">The status code.</param>
/// <param name="Detail">The detail; empty when there is none.</param>
public readonly record struct Status(StatusCode StatusCode, string Detail)
{
    /// <summary>The status of a call that succeeded.</summary>
    public static readonly Status DefaultSuccess = new(StatusCode.OK, string.Empty);

    /// <inheritdoc />
    public override string ToString() =>
        Detail.Length == 0 ? $"Status(StatusCode=\"{StatusCode}\")" : $"Status(StatusCode=\"{StatusCode}\", Detail=\"{Detail}\")";
}
