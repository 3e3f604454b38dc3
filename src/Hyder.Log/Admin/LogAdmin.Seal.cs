using Hyder.Log.Layout;
using Hyder.Log.Transport;

namespace Hyder.Log.Admin;

public sealed partial class LogAdmin
{
    /// <summary>What sealing the units of a projection found.</summary>
    /// <param name="Highest">The highest address any sealed unit holds (-1 if none).</param>
    /// <param name="Unreachable">Units that did not answer.</param>
    public sealed record SealResult(long Highest, IReadOnlyList<string> Unreachable);

    /// <summary>
    /// Seals every unit of <paramref name="projection"/> (and <paramref name="extra"/>) at
    /// <paramref name="epoch"/>. Each chain needs at least one sealed replica: a block is
    /// acknowledged only after the whole chain has it, so one replica per chain bounds every
    /// acknowledged address.
    /// </summary>
    public async Task<SealResult> SealAsync(Projection projection, long epoch, IEnumerable<string> extra, CancellationToken cancellationToken = default)
    {
        var units = projection.AllUnits().Concat(extra).Distinct(StringComparer.Ordinal).ToArray();
        var answers = await Task.WhenAll(units.Select(u => SealOneAsync(u, epoch, cancellationToken))).ConfigureAwait(false);
        var highest = -1L;
        var sealedUnits = new HashSet<string>(StringComparer.Ordinal);
        var unreachable = new List<string>();
        for (var i = 0; i < units.Length; i++)
        {
            if (answers[i] is { } h)
            {
                highest = Math.Max(highest, h);
                sealedUnits.Add(units[i]);
            }
            else
            {
                unreachable.Add(units[i]);
            }
        }

        foreach (var range in projection.Ranges)
        {
            foreach (var chain in range.Chains)
            {
                if (!chain.Any(sealedUnits.Contains))
                {
                    throw new SharedLogException(LogStatus.Failed, -1,
                        $"No replica of chain [{string.Join(", ", chain)}] could be sealed at epoch {epoch}; its tail is unknown.");
                }
            }
        }

        return new SealResult(highest, unreachable);
    }

    private async Task SealUnitsAsync(IEnumerable<string> units, long epoch, CancellationToken cancellationToken)
    {
        foreach (var unit in units)
        {
            if (await SealOneAsync(unit, epoch, cancellationToken).ConfigureAwait(false) is null)
            {
                throw new SharedLogException(LogStatus.Failed, -1, $"New unit {unit} could not be sealed at epoch {epoch}.");
            }
        }
    }

    private async Task<long?> SealOneAsync(string unit, long epoch, CancellationToken cancellationToken)
    {
        try
        {
            // A unit that is alive but does not answer (stopped, hung disk) counts as unreachable.
            var reply = await _connector.Unit(unit).SealAsync(epoch, cancellationToken).AsTask()
                .WaitAsync(TimeSpan.FromSeconds(5), _time, cancellationToken).ConfigureAwait(false);
            if (reply.Status == LogStatus.Ok)
            {
                return reply.Value;
            }

            LogUnsealed(unit, epoch, $"answered {reply.Status} (its epoch {reply.Value})");
            return null;
        }
        catch (Exception e) when (e is UnitUnreachableException or TimeoutException)
        {
            LogUnsealed(unit, epoch, e.Message);
            return null;
        }
    }
}
