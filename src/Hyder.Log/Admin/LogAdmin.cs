using Hyder.Log.Client;
using Hyder.Log.Layout;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Log.Admin;

/// <summary>
/// Reconfiguration of the log. Every change follows the same steps: seal every reachable unit of
/// the current projection at the next epoch (clients of the old epoch are turned away from then
/// on), take the highest address any of them holds as the tail, prepare the new units, install
/// the next projection with the store's compare-and-swap, and restart the sequencer above the
/// tail. A lost compare-and-swap means another administrator won the epoch: nothing is installed.
/// </summary>
public sealed partial class LogAdmin
{
    private readonly IProjectionStore _store;
    private readonly ILogConnector _connector;
    private readonly ILogger _logger;
    private readonly TimeProvider _time;

    /// <summary>
    /// Creates an administrator over <paramref name="store"/>; <paramref name="timeProvider"/>
    /// times the seal calls (the system clock by default, a virtual one in the simulation).
    /// </summary>
    public LogAdmin(IProjectionStore store, ILogConnector connector, ILogger? logger = null, TimeProvider? timeProvider = null)
    {
        _store = store;
        _connector = connector;
        _logger = logger ?? NullLogger.Instance;
        _time = timeProvider ?? TimeProvider.System;
    }

    /// <summary>Installs the first projection (epoch 1) and starts the sequencer above the units' tails.</summary>
    public async Task<Projection> BootstrapAsync(Projection initial, CancellationToken cancellationToken = default)
    {
        if (initial.Epoch != 1)
        {
            throw new ArgumentException("The first projection has epoch 1.", nameof(initial));
        }

        var seal = await SealAsync(initial, 1, [], cancellationToken).ConfigureAwait(false);
        if (!await _store.TryInstallAsync(initial, cancellationToken).ConfigureAwait(false))
        {
            throw new SharedLogException(LogStatus.Conflict, -1, "The log is already bootstrapped.");
        }

        await ResetSequencerAsync(initial, seal.Highest + 1, cancellationToken).ConfigureAwait(false);
        LogInstalled(initial.Epoch, "bootstrap", seal.Highest + 1);
        return initial;
    }

    /// <summary>
    /// Moves to the next epoch with the same layout: what a restarted sequencer needs, since its
    /// soft state is gone. The new sequencer starts above every address a unit holds.
    /// </summary>
    public Task<Projection> NewEpochAsync(string? sequencer = null, CancellationToken cancellationToken = default) =>
        ReconfigureAsync("new epoch", (current, _) => current.With(current.Epoch + 1, sequencer: sequencer), null, cancellationToken);

    /// <summary>
    /// Replaces <paramref name="failed"/> by <paramref name="replacement"/> (an empty unit) in every
    /// chain, copying each such chain's blocks, fills and trims from a surviving replica first.
    /// </summary>
    public Task<Projection> ReplaceUnitAsync(string failed, string replacement, CancellationToken cancellationToken = default) =>
        ReconfigureAsync(
            $"replace {failed} by {replacement}",
            (current, _) => current.With(current.Epoch + 1, current.Ranges.Select(r => new LayoutRange
            {
                Start = r.Start,
                Chains = r.Chains.Select(c => (IReadOnlyList<string>)c.Select(u => u == failed ? replacement : u).ToArray()).ToArray(),
            }).ToArray()),
            (current, next, tail, ct) => CopyChainsAsync(current, next.Epoch, failed, replacement, tail, ct),
            cancellationToken);

    /// <summary>Adds a chain: from the tail on, addresses are striped over one more chain.</summary>
    public Task<Projection> AddStripeAsync(IReadOnlyList<string> chain, CancellationToken cancellationToken = default) =>
        ReconfigureAsync(
            $"add stripe [{string.Join(", ", chain)}]",
            (current, tail) =>
            {
                var last = current.Ranges[^1];
                var start = Math.Max(tail + 1, last.Start + 1);
                var range = new LayoutRange { Start = start, Chains = [.. last.Chains, chain] };
                return current.With(current.Epoch + 1, [.. current.Ranges, range]);
            },
            async (_, next, _, ct) => await SealUnitsAsync(chain, next.Epoch, ct).ConfigureAwait(false),
            cancellationToken);

    private async Task<Projection> ReconfigureAsync(
        string what,
        Func<Projection, long, Projection> change,
        Func<Projection, Projection, long, CancellationToken, Task>? prepare,
        CancellationToken cancellationToken)
    {
        var current = await _store.GetLatestAsync(cancellationToken).ConfigureAwait(false)
            ?? throw new SharedLogException("The log has no projection; bootstrap it first.");
        var epoch = current.Epoch + 1;
        var seal = await SealAsync(current, epoch, [], cancellationToken).ConfigureAwait(false);
        var next = change(current, seal.Highest);
        next.Validate();
        if (prepare is not null)
        {
            await prepare(current, next, seal.Highest, cancellationToken).ConfigureAwait(false);
        }

        if (!await _store.TryInstallAsync(next, cancellationToken).ConfigureAwait(false))
        {
            throw new SharedLogException(LogStatus.Conflict, -1, $"Another reconfiguration installed epoch {epoch} first; '{what}' was not applied.");
        }

        var start = next.Ranges[^1].Start > seal.Highest ? next.Ranges[^1].Start : seal.Highest + 1;
        await ResetSequencerAsync(next, start, cancellationToken).ConfigureAwait(false);
        LogInstalled(epoch, what, start);
        return next;
    }

    private async Task ResetSequencerAsync(Projection projection, long next, CancellationToken cancellationToken)
    {
        var reply = await _connector.Sequencer(projection.Sequencer).ResetAsync(projection.Epoch, next, cancellationToken).ConfigureAwait(false);
        if (reply.Status != LogStatus.Ok)
        {
            throw new SharedLogException(reply.Status, next, $"The sequencer refused epoch {projection.Epoch} from address {next}: {reply.Status}.");
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Installed projection epoch {Epoch} ({What}); sequencer restarts at address {Next}")]
    private partial void LogInstalled(long epoch, string what, long next);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Unit {Unit} did not answer the seal of epoch {Epoch}: {Reason}")]
    private partial void LogUnsealed(string unit, long epoch, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Copied {Count} entries of chain {Chain} to {Replacement} from {Source}")]
    private partial void LogCopied(int count, IReadOnlyList<string> chain, string replacement, string source);
}
