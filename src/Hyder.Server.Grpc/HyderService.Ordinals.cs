namespace Hyder.Server.Grpc;

public sealed partial class HyderService
{
    /// <summary>
    /// A request's <c>min_ordinal</c> (docs/api.md, "Read your writes"): waits until the engine
    /// has melded it, before the request takes its snapshot. 0 asks for nothing; a melded ordinal
    /// costs no allocation.
    /// </summary>
    /// <param name="minOrdinal">The request's <c>min_ordinal</c>.</param>
    /// <param name="cancellationToken">The call's token (its deadline).</param>
    /// <returns>A task that completes when the snapshot may be taken.</returns>
    internal ValueTask MeldedAtLeastAsync(long minOrdinal, CancellationToken cancellationToken) =>
        minOrdinal switch
        {
            0 => default,
            < 0 => throw Messages.Invalid($"min_ordinal is negative ({minOrdinal})"),
            _ => _engine.WaitForMeldedAsync(minOrdinal, cancellationToken),
        };
}
