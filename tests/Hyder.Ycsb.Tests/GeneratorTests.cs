using Hyder.Ycsb.Generators;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Ycsb.Tests;

public class GeneratorTests(ITestOutputHelper output)
{
    [Fact]
    public void ZetaMatchesYcsbsConstantForTenBillionItems()
    {
        var zeta = ZipfianGenerator.Zeta(ScrambledZipfianChooser.ItemCount, 0.99);
        output.WriteLine($"zeta(1e10, 0.99) = {zeta:R}, YCSB's ZETAN = {ScrambledZipfianChooser.ZetaForDefaultConstant:R}");
        Assert.Equal(ScrambledZipfianChooser.ZetaForDefaultConstant, zeta, 1e-9);
    }

    [Fact]
    public void ZetaBeyondTheExactTermsMatchesTheExactSum()
    {
        double exact = 0;
        for (var i = 1; i <= 300_000; i++)
        {
            exact += Math.Pow(i, -0.7);
        }

        Assert.Equal(exact, ZipfianGenerator.Zeta(300_000, 0.7), 1e-9);
    }

    [Fact]
    public void ZipfianRankFrequencyHasSlopeMinusTheta()
    {
        var zipfian = new ZipfianGenerator(1_000, 0.99);
        var rng = new Rng(11);
        var counts = new long[1_000];
        for (var i = 0; i < 1_000_000; i++)
        {
            counts[zipfian.Next(ref rng)]++;
        }

        // Least-squares slope of log(frequency) over log(rank) for the 50 most popular ranks.
        var slope = Slope(Enumerable.Range(0, 50).Select(r => (Math.Log(r + 1), Math.Log(counts[r]))).ToArray());
        output.WriteLine($"rank-frequency slope {slope:F3} (θ = 0.99); rank 0 share {counts[0] / 1e6:P2}, expected {1 / zipfian.ZetaN:P2}");
        Assert.InRange(slope, -1.05, -0.93);
        Assert.Equal(1 / zipfian.ZetaN, counts[0] / 1e6, 0.003);
    }

    [Fact]
    public void ScrambledZipfianScattersTheHotKeysButKeepsTheirShare()
    {
        var chooser = new ScrambledZipfianChooser();
        var rng = new Rng(12);
        const int Keys = 10_000;
        var counts = new long[Keys];
        for (var i = 0; i < 1_000_000; i++)
        {
            counts[chooser.Next(ref rng, Keys)]++;
        }

        var hottest = Array.IndexOf(counts, counts.Max());
        var sorted = counts.OrderDescending().ToArray();
        var share = sorted[0] / 1e6;
        output.WriteLine($"hottest key {hottest} share {share:P2} (1/ZETAN = {1 / ScrambledZipfianChooser.ZetaForDefaultConstant:P2}); top 10 share {sorted.Take(10).Sum() / 1e6:P2}");
        Assert.Equal((long)(Fnv.Hash64(0) % Keys), hottest);
        Assert.InRange(share, 0.036, 0.041);
        var slope = Slope(Enumerable.Range(0, 20).Select(r => (Math.Log(r + 1), Math.Log(sorted[r]))).ToArray());
        Assert.InRange(slope, -1.05, -0.8);
    }

    [Fact]
    public void FnvHashIsYcsbsFnv1aOverEightBytes()
    {
        // FNV-1a of eight zero bytes, made non-negative as YCSB does.
        var hash = 0xCBF29CE484222325UL;
        for (var i = 0; i < 8; i++)
        {
            hash *= 1099511628211UL;
        }

        var signed = (long)hash;
        Assert.Equal(signed < 0 ? (ulong)-signed : (ulong)signed, Fnv.Hash64(0));
        Assert.NotEqual(Fnv.Hash64(1), Fnv.Hash64(256));
    }

    [Theory]
    [InlineData(0.2, 0.8)]
    [InlineData(0.05, 0.95)]
    [InlineData(0.5, 0.5)]
    public void HotspotSendsItsShareOfOperationsToTheHotKeys(double data, double operations)
    {
        var chooser = new HotspotChooser(data, operations);
        var rng = new Rng(13);
        const long Keys = 100_000;
        var hot = 0;
        const int Samples = 200_000;
        for (var i = 0; i < Samples; i++)
        {
            var key = chooser.Next(ref rng, Keys);
            Assert.InRange(key, 0, Keys - 1);
            if (key < (long)(Keys * data))
            {
                hot++;
            }
        }

        output.WriteLine($"hot set {data:P0} of keys got {hot / (double)Samples:P2} of operations (expected {operations:P0})");
        Assert.Equal(operations, hot / (double)Samples, 0.005);
    }

    [Fact]
    public void HotspotWithEverythingHotIsUniform()
    {
        var chooser = new HotspotChooser(1.0, 0.0);
        var rng = new Rng(14);
        var counts = new long[10];
        for (var i = 0; i < 100_000; i++)
        {
            counts[chooser.Next(ref rng, 10)]++;
        }

        Assert.All(counts, c => Assert.InRange(c, 9_500, 10_500));
    }

    [Fact]
    public void LatestFavoursTheNewestKeyAndFollowsInserts()
    {
        var chooser = new LatestChooser();
        var rng = new Rng(15);
        var counts = new long[2_000];
        for (var i = 0; i < 200_000; i++)
        {
            counts[chooser.Next(ref rng, 1_000)]++;
        }

        Assert.Equal(999, Array.IndexOf(counts, counts.Max()));
        Assert.True(counts[999] > counts[998] && counts[998] > counts[990] && counts[990] > counts[500]);
        Assert.Equal(1 / ZipfianGenerator.Zeta(1_000, 0.99), counts[999] / 200_000.0, 0.005);

        Array.Clear(counts);
        for (var i = 0; i < 200_000; i++)
        {
            counts[chooser.Next(ref rng, 2_000)]++;
        }

        Assert.Equal(1999, Array.IndexOf(counts, counts.Max()));
        Assert.Equal(1 / ZipfianGenerator.Zeta(2_000, 0.99), counts[1999] / 200_000.0, 0.005);
    }

    [Fact]
    public void ZipfTableHandlesExponentsAboveOne()
    {
        var table = new ZipfTable(1_000_000, 1.4);
        var rng = new Rng(16);
        var top = 0;
        for (var i = 0; i < 200_000; i++)
        {
            if (table.Next(ref rng) == 0)
            {
                top++;
            }
        }

        output.WriteLine($"α = 1.4 over 1M pages: top page in {top / 200_000.0:P2} of draws (exact {table.Probability(0):P2}; Doppel reports 32 %)");
        Assert.Equal(table.Probability(0), top / 200_000.0, 0.005);
        Assert.InRange(table.Probability(0), 0.30, 0.34);
    }

    [Theory]
    [InlineData("Uniform")]
    [InlineData("Zipfian")]
    [InlineData("Hotspot")]
    [InlineData("Latest")]
    public void ChoosersAreDeterministicUnderASeed(string name)
    {
        var distribution = Enum.Parse<Distribution>(name);
        static long[] Draw(Distribution d, ulong seed)
        {
            var chooser = new DistributionSettings().Create(d);
            var rng = new Rng(seed);
            return Enumerable.Range(0, 1_000).Select(i => chooser.Next(ref rng, 5_000 + i)).ToArray();
        }

        Assert.Equal(Draw(distribution, 42), Draw(distribution, 42));
        Assert.NotEqual(Draw(distribution, 42), Draw(distribution, 43));
        Assert.All(Draw(distribution, 42).Select((k, i) => (k, i)), x => Assert.InRange(x.k, 0, 5_000 + x.i - 1));
    }

    [Fact]
    public void RngBoundsAreUnbiasedAndStreamsDiffer()
    {
        var rng = new Rng(17);
        var counts = new long[3];
        for (var i = 0; i < 300_000; i++)
        {
            counts[rng.NextInt64(3)]++;
        }

        Assert.All(counts, c => Assert.InRange(c, 99_000, 101_000));
        var a = Rng.ForStream(1, 0);
        var b = Rng.ForStream(1, 1);
        Assert.NotEqual(a.NextUInt64(), b.NextUInt64());
    }

    private static double Slope((double X, double Y)[] points)
    {
        var mx = points.Average(p => p.X);
        var my = points.Average(p => p.Y);
        return points.Sum(p => (p.X - mx) * (p.Y - my)) / points.Sum(p => (p.X - mx) * (p.X - mx));
    }
}
