namespace Hyder.Benchmarks.Meld;

/// <summary>The operation mix of a workload (meld paper §8).</summary>
public enum MeldMix
{
    /// <summary>Reads and updates of keys of the initial table: the symmetric case (§8.1, §8.2).</summary>
    ReadUpdate,

    /// <summary>Reads of the initial table and inserts into the gaps between its keys: the asymmetric case (§8.3).</summary>
    ReadInsert,
}

/// <summary>
/// One benchmark configuration: the initial table, the transactions' shape and the concurrency
/// degree (the number of intentions in each transaction's conflict zone).
/// </summary>
/// <param name="Suite">The report section it belongs to.</param>
/// <param name="Mix">Reads with updates (symmetric) or reads with inserts (asymmetric).</param>
/// <param name="Keys">Keys in the initial table.</param>
/// <param name="Size">Operations per transaction.</param>
/// <param name="Degree">Concurrency degree: transaction k runs on the state before intention k - degree.</param>
/// <param name="ReadPercent">Share of reads. 50 means exactly half the operations of each transaction;
/// any other value draws each operation independently, and read-only transactions never reach the log.</param>
/// <param name="Count">Intentions pre-generated and timed.</param>
public sealed record MeldWorkload(string Suite, MeldMix Mix, int Keys, int Size, int Degree, int ReadPercent, int Count)
{
    /// <summary>Distance between adjacent keys of the initial table (inserts fall in the gaps).</summary>
    public const long Stride = 1 << 16;

    /// <summary>Seed of the generator: fixed per configuration (not HashCode, which is randomized per process).</summary>
    public int Seed => (((((int)Mix * 31 + Keys) * 31 + Size) * 31 + Degree) * 31 + ReadPercent) & 0x7fffffff;

    /// <summary>True when each transaction has exactly as many reads as writes.</summary>
    public bool ExactHalf => ReadPercent == 50;

    /// <summary>True for the cache-resident variant: so few intentions that a pass stays in cache.</summary>
    public bool CacheResident => Count < MeldSuites.QuickCount;

    /// <summary>Short name: the paper's series names (rw/ri, keys, ops, con-d, read %), and -nCOUNT when cache-resident.</summary>
    public string Name =>
        $"{(Mix == MeldMix.ReadUpdate ? "rw" : "ri")}-{Keys / 1024}K-op{Size}-d{Degree}-r{ReadPercent}{(CacheResident ? $"-n{Count}" : string.Empty)}";

    /// <inheritdoc/>
    public override string ToString() => Name;
}
