using System.Globalization;
using System.Text;
using Hyder.Client;

namespace Hyder.Soak.Workload;

/// <summary>
/// The soak's unchecked half of the load, YCSB-style: one-shot serializable transactions of four
/// reads and one update over 10,000 keys chosen uniformly, 100-byte values. Counts outcomes only.
/// </summary>
public sealed class YcsbCounters
{
    private const int Records = 10_000;
    private long _ok;
    private long _notOk;

    /// <summary>Committed transactions.</summary>
    public long Ok => Interlocked.Read(ref _ok);

    /// <summary>Aborted or failed transactions.</summary>
    public long NotOk => Interlocked.Read(ref _notOk);

    /// <summary>Runs <paramref name="processes"/> client tasks, task p on <paramref name="clients"/>[p mod n], until <paramref name="stop"/>.</summary>
    public Task RunAsync(IReadOnlyList<HyderClient> clients, int processes, int seed, CancellationToken stop) =>
        Task.WhenAll(Enumerable.Range(0, processes).Select(p => Task.Run(() => RunProcessAsync(clients[p % clients.Count], new Random(seed ^ (p + 1) * 7919), stop), CancellationToken.None)));

    private static byte[] Key(int i) => Encoding.ASCII.GetBytes("y" + i.ToString("D5", CultureInfo.InvariantCulture));

    private async Task RunProcessAsync(HyderClient client, Random random, CancellationToken stop)
    {
        var value = new byte[100];
        while (!stop.IsCancellationRequested)
        {
            random.NextBytes(value);
            HyderOperation[] operations =
            [
                HyderOperation.Get(Key(random.Next(Records))),
                HyderOperation.Get(Key(random.Next(Records))),
                HyderOperation.Get(Key(random.Next(Records))),
                HyderOperation.Get(Key(random.Next(Records))),
                HyderOperation.Put(Key(random.Next(Records)), value),
            ];
            try
            {
                await client.ExecuteAsync(IsolationLevel.Serializable, operations, stop).ConfigureAwait(false);
                Interlocked.Increment(ref _ok);
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e) when (e is HyderException or OperationCanceledException or HttpRequestException or IOException)
            {
                Interlocked.Increment(ref _notOk);
                if (e is not TransactionAbortedException)
                {
                    try
                    {
                        await Task.Delay(100, stop).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException)
                    {
                        return;
                    }
                }
            }
        }
    }
}
