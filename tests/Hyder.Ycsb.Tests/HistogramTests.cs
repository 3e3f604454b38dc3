using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Ycsb.Tests;

public class HistogramTests(ITestOutputHelper output)
{
    /// <summary>3 significant digits: a reported value is within 0.1 % of the exact one.</summary>
    private const double RelativeBound = 0.001;

    private static readonly double[] s_percentiles = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100];

    [Theory]
    [InlineData("uniform", 1)]
    [InlineData("exponential", 2)]
    [InlineData("lognormal", 3)]
    [InlineData("bimodal", 4)]
    [InlineData("pareto", 5)]
    public void PercentilesAreWithinThreeSignificantDigitsOfTheExactOnes(string shape, ulong seed)
    {
        var rng = new Rng(seed);
        var histogram = new LatencyHistogram();
        var samples = new long[200_000];
        for (var i = 0; i < samples.Length; i++)
        {
            samples[i] = Sample(shape, ref rng);
            histogram.Record(samples[i]);
        }

        Array.Sort(samples);
        var worst = 0.0;
        foreach (var p in s_percentiles)
        {
            var exact = ExactPercentile(samples, p);
            var reported = histogram.ValueAtPercentile(p);
            Assert.True(reported >= exact, $"{shape} p{p}: reported {reported} under the exact {exact}");
            var error = (reported - exact) / (double)Math.Max(exact, 1);
            Assert.True(reported - exact <= Math.Max(exact * RelativeBound, 0), $"{shape} p{p}: reported {reported}, exact {exact}, error {error:P4}");
            worst = Math.Max(worst, error);
        }

        Assert.Equal(samples.Length, histogram.TotalCount);
        Assert.Equal(samples[0], histogram.Min);
        Assert.Equal(samples[^1], histogram.Max);
        Assert.Equal(samples.Average(), histogram.Mean, 6);
        output.WriteLine($"{shape}: worst relative percentile error {worst:P4} over {s_percentiles.Length} percentiles of {samples.Length} samples");
        Assert.True(worst < RelativeBound, $"{shape}: worst relative error {worst:P4}");
    }

    [Fact]
    public void EveryBucketIsNarrowerThanAThousandthOfItsValues()
    {
        for (var index = 0; index <= LatencyHistogram.IndexOf(LatencyHistogram.DefaultHighestTrackableValue); index++)
        {
            var low = LatencyHistogram.LowestEquivalent(index);
            var high = LatencyHistogram.HighestEquivalent(index);
            Assert.Equal(index, LatencyHistogram.IndexOf(low));
            Assert.Equal(index, LatencyHistogram.IndexOf(high));
            Assert.True(high - low <= low * RelativeBound, $"bucket {index}: [{low}, {high}]");
            if (index > 0)
            {
                Assert.Equal(LatencyHistogram.HighestEquivalent(index - 1) + 1, low);
            }
        }
    }

    [Fact]
    public void MergedPerThreadHistogramsEqualOneHistogramOfEverySample()
    {
        var one = new LatencyHistogram();
        var parts = Enumerable.Range(0, 4).Select(_ => new LatencyHistogram()).ToArray();
        var rng = new Rng(7);
        for (var i = 0; i < 100_000; i++)
        {
            var v = Sample("lognormal", ref rng);
            one.Record(v);
            parts[i % parts.Length].Record(v);
        }

        var merged = new LatencyHistogram();
        foreach (var part in parts)
        {
            merged.Add(part);
        }

        Assert.Equal(one.TotalCount, merged.TotalCount);
        Assert.Equal(one.Min, merged.Min);
        Assert.Equal(one.Max, merged.Max);
        Assert.Equal(one.Mean, merged.Mean, 9);
        foreach (var p in s_percentiles)
        {
            Assert.Equal(one.ValueAtPercentile(p), merged.ValueAtPercentile(p));
        }
    }

    [Fact]
    public async Task RecordersOnManyThreadsLoseNoSampleWhileACollectorRuns()
    {
        var recorders = Enumerable.Range(0, 4).Select(_ => new MeasurementRecorder()).ToArray();
        var total = new Measurements();
        using var barrier = new Barrier(recorders.Length + 1);
        var writers = recorders.Select((r, t) => Task.Factory.StartNew(() =>
        {
            barrier.SignalAndWait();
            for (var i = 0; i < 50_000; i++)
            {
                r.Record(Series.Read, i % 1000);
            }
        }, TaskCreationOptions.LongRunning)).ToArray();
        barrier.SignalAndWait();
        var all = Task.WhenAll(writers);
        while (!all.IsCompleted)
        {
            await Task.Yield();
            foreach (var r in recorders)
            {
                r.CollectInto(total);
            }
        }

        await all;
        foreach (var r in recorders)
        {
            r.CollectInto(total);
        }

        Assert.Equal(4 * 50_000, total[Series.Read].TotalCount);
        Assert.Equal(499.5, total[Series.Read].Mean, 6);
    }

    [Fact]
    public void ZeroHugeAndNegativeValuesAreRecordedAndClamped()
    {
        var histogram = new LatencyHistogram();
        histogram.Record(0);
        histogram.Record(long.MaxValue);
        histogram.Record(-5);
        histogram.Record(LatencyHistogram.DefaultHighestTrackableValue);
        Assert.Equal(4, histogram.TotalCount);
        Assert.Equal(2, histogram.ClampedCount);
        Assert.Equal(0, histogram.Min);
        Assert.Equal(LatencyHistogram.DefaultHighestTrackableValue, histogram.Max);
        Assert.Equal(0, histogram.ValueAtPercentile(50));
        Assert.Equal(LatencyHistogram.DefaultHighestTrackableValue, histogram.ValueAtPercentile(100));
    }

    [Fact]
    public void AnEmptyHistogramReportsZeros()
    {
        var histogram = new LatencyHistogram();
        Assert.Equal(0, histogram.ValueAtPercentile(99));
        Assert.Equal(0, histogram.Min);
        Assert.Equal(0, histogram.Max);
        Assert.Equal(0, histogram.Mean);
        histogram.Record(12345);
        histogram.Reset();
        Assert.Equal(0, histogram.TotalCount);
        Assert.Equal(0, histogram.ValueAtPercentile(50));
    }

    [Fact]
    public void SmallValuesAreExactAndMemoryIsFixed()
    {
        var histogram = new LatencyHistogram();
        for (var v = 0; v < 2048; v++)
        {
            histogram.Record(v);
        }

        Assert.Equal(1023, histogram.ValueAtPercentile(50));
        Assert.True(histogram.FootprintBytes <= 200 * 1024, $"{histogram.FootprintBytes} bytes");
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 10_000; i++)
        {
            histogram.Record(i * 7919L);
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }

    [Fact]
    public void HistogramsOfDifferentRangesDoNotMerge()
    {
        Assert.Throws<ArgumentException>(() => new LatencyHistogram().Add(new LatencyHistogram(1_000_000)));
    }

    private static long ExactPercentile(long[] sorted, double percentile)
    {
        var rank = Math.Max(1, (long)Math.Ceiling(percentile / 100 * sorted.Length));
        return sorted[rank - 1];
    }

    private static long Sample(string shape, ref Rng rng)
    {
        var u = rng.NextDouble();
        return shape switch
        {
            "uniform" => rng.NextInt64(10_000_000),
            "exponential" => (long)(-Math.Log(1 - u) * 2_000),
            "lognormal" => (long)Math.Exp(7 + (2 * Normal(ref rng))),
            "bimodal" => u < 0.9 ? 200 + rng.NextInt64(100) : 50_000 + rng.NextInt64(5_000_000),
            "pareto" => Math.Min((long)(100 / Math.Pow(1 - u, 1 / 1.2)), 3_000_000_000),
            _ => throw new ArgumentOutOfRangeException(nameof(shape)),
        };
    }

    private static double Normal(ref Rng rng) =>
        Math.Sqrt(-2 * Math.Log(1 - rng.NextDouble())) * Math.Cos(2 * Math.PI * rng.NextDouble());
}
