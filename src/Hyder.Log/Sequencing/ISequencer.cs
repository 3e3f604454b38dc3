namespace Hyder.Log.Sequencing;

/// <summary>The token service: hands out log addresses, each once per epoch.</summary>
public interface ISequencer
{
    /// <summary>
    /// Reserves <paramref name="count"/> consecutive addresses for a client of
    /// <paramref name="epoch"/>; the first is in <see cref="TokenReply.Address"/>. A count of 0
    /// only asks for the tail (the next address to hand out).
    /// </summary>
    ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default);

    /// <summary>
    /// Starts epoch <paramref name="epoch"/> handing out from <paramref name="next"/>, which a
    /// reconfiguration computed from the sealed units' tails. Refused for an epoch not newer.
    /// </summary>
    ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default);
}

/// <summary>The sequencer's answer.</summary>
/// <param name="Status"><see cref="LogStatus.Ok"/>, <see cref="LogStatus.StaleEpoch"/> or <see cref="LogStatus.NotReady"/>.</param>
/// <param name="Epoch">The sequencer's epoch.</param>
/// <param name="Address">The first address handed out, or the tail.</param>
public readonly record struct TokenReply(LogStatus Status, long Epoch, long Address);
