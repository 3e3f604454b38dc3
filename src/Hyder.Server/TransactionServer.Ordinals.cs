using Hyder.Server.Core;
using Hyder.Server.Engine;

namespace Hyder.Server;

/// <summary>Waits for an ordinal to be melded: the server side of the "at least ordinal N" token (docs/api.md, "Read your writes").</summary>
public sealed partial class TransactionServer
{
    /// <summary>Callers waiting for an ordinal; final meld announces each ordinal to it.</summary>
    private readonly OrdinalWaiters _ordinalWaiters;

    /// <summary>Cooperative mode: the last ordinal melded, announced after the submit that melded it.</summary>
    private long _cooperativeMelded = -1;

    /// <inheritdoc/>
    /// <remarks>
    /// Completes without allocating when <paramref name="ordinal"/> is melded already. Otherwise it
    /// waits for final meld to announce it (no polling), at most
    /// <see cref="ServerOptions.OrdinalWaitTimeout"/>, then fails with
    /// <see cref="EngineErrorCode.Unavailable"/> naming both ordinals.
    /// </remarks>
    public ValueTask WaitForMeldedAsync(long ordinal, CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        return _ordinalWaiters.Reached >= ordinal ? default : WaitForMeldedSlowAsync(ordinal, _options.OrdinalWaitTimeout, cancellationToken);
    }

    private async ValueTask WaitForMeldedSlowAsync(long ordinal, TimeSpan limit, CancellationToken cancellationToken)
    {
        // The ordinal is in the log (a client saw it commit elsewhere) or about to be: the reader
        // looks now rather than at its next quiet poll.
        WakeReader();
        using var timeout = limit == Timeout.InfiniteTimeSpan ? null : new CancellationTokenSource(limit, _time);
        using var linked = timeout is null ? null : CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, timeout.Token);
        try
        {
            await _ordinalWaiters.WaitAsync(ordinal, linked?.Token ?? cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            ThrowIfStopping();
            throw new EngineException(
                EngineErrorCode.Unavailable,
                $"server {_options.ServerId} has melded up to #{_ordinalWaiters.Reached}, not yet #{ordinal} (waited {limit.TotalSeconds:0.###} s); retry later or on another server");
        }
    }

    /// <summary>Final meld has finished <paramref name="ordinal"/> and the current state includes it.</summary>
    private void AnnounceMelded(long ordinal)
    {
        if (_cooperative)
        {
            // Inside a stage step: waiters continue after the submit returns (DeliverOutcomes).
            _cooperativeMelded = ordinal;
        }
        else
        {
            _ordinalWaiters.Advance(ordinal);
        }
    }

    /// <summary>Cooperative mode: announces the last ordinal melded during the submit that just returned.</summary>
    private void AnnounceCooperativeMelded()
    {
        if (_cooperativeMelded >= 0)
        {
            _ordinalWaiters.Advance(_cooperativeMelded);
        }
    }
}
