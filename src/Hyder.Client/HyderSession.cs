namespace Hyder.Client;

/// <summary>
/// A causal token: the highest ordinal a client has seen committed or read at (docs/api.md, "Read
/// your writes"). A <see cref="HyderClient"/> raises it with every commit and snapshot it learns
/// of and, with <see cref="HyderClientSettings.ReadYourWrites"/> on, sends it as each request's
/// <c>min_ordinal</c>, so the server answers from a state that includes it. Thread-safe.
/// </summary>
/// <remarks>
/// Each client has a session of its own. Clients of different servers that should see each
/// other's writes share one through <see cref="HyderClientSettings.Session"/>; a token carried to
/// another process travels as <see cref="Ordinal"/> and comes back through <see cref="Observe"/>.
/// </remarks>
public sealed class HyderSession
{
    private long _ordinal;

    /// <summary>The highest ordinal observed (0: none).</summary>
    public long Ordinal => Volatile.Read(ref _ordinal);

    /// <summary>Raises <see cref="Ordinal"/> to <paramref name="ordinal"/> if it is higher; a lower one changes nothing.</summary>
    /// <param name="ordinal">An ordinal seen committed or read at.</param>
    public void Observe(long ordinal)
    {
        var seen = Volatile.Read(ref _ordinal);
        while (ordinal > seen)
        {
            var was = Interlocked.CompareExchange(ref _ordinal, ordinal, seen);
            if (was == seen)
            {
                return;
            }

            seen = was;
        }
    }
}
