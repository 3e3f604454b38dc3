using System.Diagnostics;
using Hyder.Server.Grpc;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests.Server;

/// <summary>TLS calls keep completing while busy threads oversubscribe the machine's cores.</summary>
public sealed class CpuHogTests(ITestOutputHelper output)
{
    [Fact]
    public async Task TlsCallsBesideBusyLoopsEachCompleteWithinAFewSeconds()
    {
        using var ca = TestCertificates.CreateCa("Hyder Hog CA");
        using var certificate = TestCertificates.Issue(ca, "localhost", server: true, client: false);
        await using var server = await HyderGrpcServer.StartAsync(new FakeEngine(), new GrpcServerOptions { Tls = new GrpcServerTls { Certificate = certificate } });
        server.SetServing();

        // Two busy threads more than there are cores: every core has a spinning competitor.
        using var stop = new CancellationTokenSource();
        var hogs = Enumerable.Range(0, Environment.ProcessorCount + 2).Select(_ => new Thread(() =>
        {
            var x = 0UL;
            while (!stop.IsCancellationRequested)
            {
                x = (x * 6364136223846793005UL) + 1442695040888963407UL;
            }

            GC.KeepAlive(x);
        }) { IsBackground = true }).ToArray();
        foreach (var hog in hogs)
        {
            hog.Start();
        }

        var slowest = TimeSpan.Zero;
        try
        {
            // A fresh client (and TLS handshake) per round, and calls of every kind, 8 at a time.
            for (var round = 0; round < 5; round++)
            {
                await using var client = new HyderClient(new HyderClientSettings { Endpoint = server.Address, TrustedCertificateAuthorities = [ca], Timeout = TimeSpan.FromSeconds(30) });
                var calls = Enumerable.Range(0, 8).Select(async i =>
                {
                    var key = Of($"hog-{round}-{i}");
                    var clock = Stopwatch.StartNew();
                    await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(key, Of("v"))]);
                    var one = clock.Elapsed;
                    clock.Restart();
                    await client.ReadWriteAsync(async tx => await tx.PutAsync(key, Of($"{await tx.GetAsync(key) is not null}")));
                    var two = clock.Elapsed;
                    clock.Restart();
                    Assert.Equal("True", Text((await client.ReadAsync([key]))[0]));
                    return new[] { one, two, clock.Elapsed }.Max();
                });
                foreach (var took in await Task.WhenAll(calls))
                {
                    slowest = took > slowest ? took : slowest;
                }
            }
        }
        finally
        {
            stop.Cancel();
            foreach (var hog in hogs)
            {
                hog.Join();
            }
        }

        output.WriteLine($"slowest call {slowest.TotalMilliseconds:F0} ms beside {hogs.Length} busy threads on {Environment.ProcessorCount} cores");
        Assert.True(slowest < TimeSpan.FromSeconds(5), $"a call took {slowest.TotalMilliseconds:F0} ms");
    }
}
