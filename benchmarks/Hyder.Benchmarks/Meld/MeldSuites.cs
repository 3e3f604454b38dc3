namespace Hyder.Benchmarks.Meld;

/// <summary>
/// The configurations of the meld paper's §8 and Appendix F (issue 3), shared by the
/// BenchmarkDotNet classes and the report command.
/// </summary>
public static class MeldSuites
{
    /// <summary>Keys in the paper's initial table.</summary>
    public const int SmallTable = 128 * 1024;

    /// <summary>Keys in the paper's deeper table (App. F, "Tree depth").</summary>
    public const int LargeTable = 512 * 1024;

    /// <summary>Intentions per configuration in a full run.</summary>
    public const int FullCount = 4096;

    /// <summary>Intentions per configuration in a quick run.</summary>
    public const int QuickCount = 512;

    /// <summary>
    /// Intentions in the cache-resident variant: a pass over 64 intentions and their states stays
    /// in L2/L3, as a freshly deserialized intention would be; 4,096 do not, so every meld there
    /// also pays for cache misses on intention and state nodes.
    /// </summary>
    public const int HotCount = 64;

    /// <summary>Transaction sizes (operations per transaction).</summary>
    public static readonly int[] Sizes = [2, 4, 8, 16, 32];

    /// <summary>Concurrency degrees.</summary>
    public static readonly int[] Degrees = [4, 16, 64, 256];

    /// <summary>Read percentages of the sweep (50 is the symmetric suite; 100 makes no intentions).</summary>
    public static readonly int[] ReadPercents = [0, 20, 40, 60, 80, 90];

    /// <summary>§8.1: reads and updates 1:1, every size and degree.</summary>
    public static IEnumerable<MeldWorkload> Symmetric(int count) =>
        from size in Sizes from d in Degrees select new MeldWorkload("symmetric", MeldMix.ReadUpdate, SmallTable, size, d, 50, count);

    /// <summary>§8.2: the read-percentage sweep at sizes 2 and 8, degrees 16 and 64.</summary>
    public static IEnumerable<MeldWorkload> ReadSweep(int count) =>
        from size in new[] { 2, 8 }
        from d in new[] { 16, 64 }
        from r in ReadPercents
        select new MeldWorkload("read-sweep", MeldMix.ReadUpdate, SmallTable, size, d, r, count);

    /// <summary>§8.3: reads and inserts 1:1 (inserts in the gaps of the initial table).</summary>
    public static IEnumerable<MeldWorkload> Asymmetric(int count) =>
        from size in Sizes from d in Degrees select new MeldWorkload("asymmetric", MeldMix.ReadInsert, SmallTable, size, d, 50, count);

    /// <summary>App. F: the symmetric case on a 512K-key table (two levels deeper).</summary>
    public static IEnumerable<MeldWorkload> TreeDepth(int count) =>
        from size in Sizes from d in Degrees select new MeldWorkload("tree-depth", MeldMix.ReadUpdate, LargeTable, size, d, 50, count);

    /// <summary>The symmetric and asymmetric cases again, cache-resident (<see cref="HotCount"/> intentions).</summary>
    public static IEnumerable<MeldWorkload> CacheResident() =>
        Symmetric(HotCount).Concat(Asymmetric(HotCount)).Select(w => w with { Suite = "cache-resident" });

    /// <summary>Every configuration, in report order.</summary>
    public static IEnumerable<MeldWorkload> All(int count) =>
        Symmetric(count).Concat(ReadSweep(count)).Concat(Asymmetric(count)).Concat(TreeDepth(count)).Concat(CacheResident());

    /// <summary>The quick subset: the degree-16 and degree-64 rows at sizes 2 and 8 of each suite.</summary>
    public static IEnumerable<MeldWorkload> Quick() =>
        All(QuickCount).Where(w => w.Size is 2 or 8 && w.Degree is 16 or 64 && w.ReadPercent is 0 or 50 or 90);
}
