using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Embedded;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

public sealed class ClientTests
{
    private static byte[] Block(long address) => BitConverter.GetBytes(address * 7919).Concat(new byte[56]).ToArray();

    private static Task<EmbeddedLog> OpenAsync(int chains = 2, int replicas = 2, string? directory = null) =>
        EmbeddedLog.OpenAsync(new EmbeddedLogOptions
        {
            Chains = chains,
            Replicas = replicas,
            BlockSize = 64,
            DataDirectory = directory,
            SlotsPerSegment = 16,
            Client = { HoleFillDelay = TimeSpan.FromMilliseconds(50) },
        });

    [Fact]
    public async Task AppendedBlocksAreOnEveryReplicaOfTheirChainAndReadBack()
    {
        await using var log = await OpenAsync();
        var addresses = await Task.WhenAll(Enumerable.Range(0, 100).Select(_ => log.AppendAsync(new byte[] { 1, 2, 3 }).AsTask()));
        Assert.Equal(Enumerable.Range(0, 100).Select(i => (long)i), addresses.Order());
        Assert.Equal(100, await log.TailAsync());
        foreach (var unit in log.Units)
        {
            Assert.Equal(99 - (log.Units.ToList().IndexOf(unit) < 2 ? 1 : 0), (await unit.HighestAsync(1)).Value);
        }

        var buffer = new byte[64];
        var read = await log.ReadAsync(42, buffer);
        Assert.Equal(new LogRead(LogEntryKind.Data, 3), read);
    }

    [Fact]
    public async Task ReadCompletesAHalfWrittenChain()
    {
        await using var log = await OpenAsync(chains: 1, replicas: 3);
        var token = await log.Connector.Sequencer("sequencer").NextAsync(1, 1);
        await log.Units[0].WriteAsync(1, token.Address, Block(token.Address));
        var buffer = new byte[64];
        Assert.Equal(LogEntryKind.Data, (await log.ReadAsync(token.Address, buffer)).Kind);
        Assert.Equal(Block(token.Address), buffer);
        Assert.Equal(LogStatus.Ok, (await log.Units[2].ReadAsync(1, token.Address, buffer)).Status);
    }

    [Fact]
    public async Task SubscriptionYieldsBlocksInAddressOrderAndFillsHolesLeftByCrashedWriters()
    {
        await using var log = await OpenAsync();
        for (var i = 0; i < 10; i++)
        {
            if (i % 4 == 3)
            {
                // A writer takes a token and crashes before writing anything.
                await log.Connector.Sequencer("sequencer").NextAsync(1, 1);
                continue;
            }

            await log.AppendAsync(Block(i));
        }

        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var seen = new List<long>();
        await foreach (var record in log.SubscribeAsync(0, cts.Token))
        {
            Assert.Equal(Block(record.Address), record.Block.ToArray());
            seen.Add(record.Address);
            if (record.Address == 9)
            {
                break;
            }
        }

        Assert.Equal([0L, 1, 2, 4, 5, 6, 8, 9], seen);
        Assert.Equal(LogEntryKind.Filled, (await log.ReadAsync(3, new byte[64])).Kind);
    }

    [Fact]
    public async Task SubscriptionWaitsForAppendsAtTheTail()
    {
        await using var log = await OpenAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var reader = Task.Run(async () =>
        {
            var seen = new List<long>();
            await foreach (var record in log.SubscribeAsync(0, cts.Token))
            {
                seen.Add(record.Address);
                if (seen.Count == 20)
                {
                    break;
                }
            }

            return seen;
        });
        for (var i = 0; i < 20; i++)
        {
            await log.AppendAsync(Block(i));
            await Task.Delay(2);
        }

        Assert.Equal(Enumerable.Range(0, 20).Select(i => (long)i), await reader);
    }

    [Fact]
    public async Task ClientFetchesTheNewProjectionAfterASealAndRetries()
    {
        await using var log = await OpenAsync();
        var done = 0;
        var appenders = Enumerable.Range(0, 4).Select(w => Task.Run(async () =>
        {
            var mine = new List<long>();
            for (var i = 0; i < 50; i++)
            {
                mine.Add(await log.AppendAsync(Block(i)));
                Interlocked.Increment(ref done);
            }

            return mine;
        })).ToList();
        SpinWait.SpinUntil(() => Volatile.Read(ref done) >= 40);
        log.Connector.Add("sequencer", new Sequencer());
        await log.Admin.NewEpochAsync();
        var addresses = (await Task.WhenAll(appenders)).SelectMany(a => a).ToArray();
        Assert.Equal(200, addresses.Distinct().Count());
        Assert.True(await log.AppendAsync(Block(200)) >= 200);
        Assert.Equal(2, log.Client.Projection.Epoch);
        var buffer = new byte[64];
        foreach (var address in addresses)
        {
            Assert.Equal(LogEntryKind.Data, (await log.ReadAsync(address, buffer)).Kind);
        }
    }

    [Fact]
    public async Task AddingAStripeSpreadsNewAddressesOverTheNewChain()
    {
        await using var log = await OpenAsync(chains: 1, replicas: 1);
        var extra = Hyder.Log.Units.LogUnit.Open(new Hyder.Log.Units.LogUnitOptions { BlockSize = 64 });
        log.Connector.Add("unit-extra", extra);
        for (var i = 0; i < 10; i++)
        {
            await log.AppendAsync(Block(i));
        }

        var projection = await log.Admin.AddStripeAsync(["unit-extra"]);
        Assert.Equal(10, projection.Ranges[1].Start);
        for (var i = 10; i < 20; i++)
        {
            Assert.Equal(i, await log.AppendAsync(Block(i)));
        }

        Assert.Equal(19, (await extra.HighestAsync(2)).Value);
        var buffer = new byte[64];
        for (var i = 0; i < 20; i++)
        {
            Assert.Equal(LogEntryKind.Data, (await log.ReadAsync(i, buffer)).Kind);
            Assert.Equal(Block(i), buffer);
        }

        extra.Dispose();
    }

    [Fact]
    public async Task ReplacingAFailedUnitCopiesItsChainAndKeepsEveryAcknowledgedBlock()
    {
        await using var log = await OpenAsync(chains: 2, replicas: 2);
        for (var i = 0; i < 50; i++)
        {
            await log.AppendAsync(Block(i));
        }

        await log.TrimAsync(4);
        var holes = await log.Connector.Sequencer("sequencer").NextAsync(1, 2);
        Assert.Equal(LogEntryKind.Filled, await log.FillAsync(holes.Address + 1));
        log.Connector.Remove("unit-1-1");
        var spare = Hyder.Log.Units.LogUnit.Open(new Hyder.Log.Units.LogUnitOptions { BlockSize = 64 });
        log.Connector.Add("spare", spare);
        var projection = await log.Admin.ReplaceUnitAsync("unit-1-1", "spare");
        Assert.Equal(["unit-1-0", "spare"], projection.Ranges[0].Chains[1].ToArray());
        var buffer = new byte[64];
        for (var i = 0; i < 50; i++)
        {
            if (i == 4)
            {
                var e = await Assert.ThrowsAsync<SharedLogException>(async () => await log.ReadAsync(i, buffer));
                Assert.Equal(LogStatus.Trimmed, e.Status);
                continue;
            }

            Assert.Equal(LogEntryKind.Data, (await log.ReadAsync(i, buffer)).Kind);
            Assert.Equal(Block(i), buffer);
            if (i % 2 == 1)
            {
                Assert.Equal(LogStatus.Ok, (await spare.ReadAsync(2, i, buffer)).Status);
            }
        }

        Assert.Equal(LogStatus.Filled, (await spare.ReadAsync(2, 51, buffer)).Status);
        Assert.Equal(52, await log.AppendAsync(Block(52)));
        spare.Dispose();
    }

    [Fact]
    public async Task EmbeddedFileLogReopensWithEveryAcknowledgedBlockAndANewEpoch()
    {
        using var dir = new TempDirectory();
        await using (var log = await OpenAsync(directory: dir.Path))
        {
            await Task.WhenAll(Enumerable.Range(0, 40).Select(i => log.AppendAsync(Block(i)).AsTask()));
        }

        await using var reopened = await OpenAsync(directory: dir.Path);
        Assert.Equal(2, reopened.Client.Projection.Epoch);
        Assert.Equal(40, await reopened.AppendAsync(Block(40)));
        var buffer = new byte[64];
        for (var i = 0; i <= 40; i++)
        {
            Assert.Equal(LogEntryKind.Data, (await reopened.ReadAsync(i, buffer)).Kind);
        }
    }

    [Fact]
    public async Task ClientRejectsWrongBlockSizeAndOutOfRangeAddresses()
    {
        await using var log = await OpenAsync();
        Assert.Equal(LogStatus.WrongBlockSize, (await Assert.ThrowsAsync<SharedLogException>(async () => await log.AppendAsync(new byte[65]))).Status);
        Assert.Equal(LogStatus.OutOfRange, (await Assert.ThrowsAsync<SharedLogException>(async () => await log.ReadAsync(-1, new byte[64]))).Status);
    }

    private sealed class SlowSequencer(ISequencer inner) : ISequencer
    {
        public async ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default)
        {
            await Task.Delay(5, cancellationToken);
            return await inner.NextAsync(epoch, count, cancellationToken);
        }

        public ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default) =>
            inner.ResetAsync(epoch, next, cancellationToken);
    }

    [Fact]
    public async Task ConcurrentAppendsShareTokenRequestsAndGetDistinctAddresses()
    {
        await using var log = await OpenAsync();
        log.Connector.Add("sequencer", new SlowSequencer(log.Connector.Sequencer("sequencer")));
        await using var client = await Hyder.Log.Client.LogClient.ConnectAsync(new Hyder.Log.Layout.MemoryProjectionStore() is var store
            && await store.TryInstallAsync(log.Client.Projection.With(1)) ? store : throw new InvalidOperationException(), log.Connector,
            new Hyder.Log.Client.LogClientOptions { BatchTokens = true });
        var addresses = await Task.WhenAll(Enumerable.Range(0, 300).Select(i => Task.Run(() => client.AppendAsync(Block(i)).AsTask())));
        Assert.Equal(Enumerable.Range(0, 300).Select(i => (long)i), addresses.Order());
        Assert.InRange(client.TokenRequests, 1, 150);
    }

    /// <summary>Answers tokens from <paramref name="inner"/>, but holds the next answer until released (a slow network).</summary>
    private sealed class HeldSequencer(ISequencer inner) : ISequencer
    {
        private readonly TaskCompletionSource _handedOut = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task HandedOut => _handedOut.Task;

        public void Release() => _release.TrySetResult();

        public async ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default)
        {
            var reply = await inner.NextAsync(epoch, count, cancellationToken);
            _handedOut.TrySetResult();
            await _release.Task.WaitAsync(cancellationToken);
            return reply;
        }

        public ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default) =>
            inner.ResetAsync(epoch, next, cancellationToken);
    }

    [Fact]
    public async Task ATokenOfAnOlderEpochThatNeverLandedIsNotReusedInTheNewEpoch()
    {
        // The shrunk counterexample of RestartedSequencerNeverHandsOutAnAddressTwice: an append
        // holds a token of epoch 1 while the sequencer restarts. Nothing was written, so the new
        // sequencer starts at the same address and hands it to another append of the same bytes.
        var connector = new InProcessConnector();
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        connector.Add("u", unit);
        var held = new HeldSequencer(new Sequencer());
        connector.Add("s", held);
        var store = new MemoryProjectionStore();
        var admin = new LogAdmin(store, connector);
        await admin.BootstrapAsync(new Projection { Epoch = 1, BlockSize = 64, Sequencer = "s", Ranges = [new LayoutRange { Start = 0, Chains = [["u"]] }] });
        await using var slow = await LogClient.ConnectAsync(store, connector);
        var block = new byte[] { 1, 2, 3 };
        var first = slow.AppendAsync(block).AsTask();
        await held.HandedOut;

        connector.Add("s", new Sequencer());
        await admin.NewEpochAsync();
        await using var other = await LogClient.ConnectAsync(store, connector);
        Assert.Equal(0, await other.AppendAsync(block));

        // The head turns the held token's write away as stale: the address is no longer the
        // slow append's, even though the block now there has the same bytes.
        held.Release();
        Assert.Equal(1, await first);
    }

    [Fact]
    public async Task AnAppendCompletedOnAHeadTheSealMissedDoesNotKeepItsTokenIntoANewEpoch()
    {
        // Found by the simulation (seed 1988): the head took the write, the tail was down; the
        // reconfiguration could not reach the head and sealed only the tail, so the new sequencer
        // started at the address. Completing the chain there in the new epoch acknowledged the
        // block above the new tail.
        var connector = new InProcessConnector();
        using var headUnit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        using var tailUnit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        var head = new SwitchableUnit(headUnit);
        var tail = new SwitchableUnit(tailUnit);
        connector.Add("s", new Sequencer());
        connector.Add("h", head);
        connector.Add("t", tail);
        var store = new MemoryProjectionStore();
        var admin = new LogAdmin(store, connector);
        await admin.BootstrapAsync(new Projection { Epoch = 1, BlockSize = 64, Sequencer = "s", Ranges = [new LayoutRange { Start = 0, Chains = [["h", "t"]] }] });
        await using var client = await LogClient.ConnectAsync(store, connector, new LogClientOptions { RetryDelay = TimeSpan.FromSeconds(1) });

        tail.Down = true;
        var append = client.AppendAsync(new byte[] { 1, 2, 3 }).AsTask();
        await tail.Refused;
        head.Down = true;
        tail.Down = false;
        connector.Add("s", new Sequencer());
        await admin.NewEpochAsync();
        head.Down = false;

        var address = await append;
        Assert.True(await client.TailAsync() > address, $"acknowledged at {address}, but the tail is {await client.TailAsync()}");
        var buffer = new byte[64];
        Assert.Equal(LogEntryKind.Data, (await client.ReadAsync(address, buffer)).Kind);
        Assert.Equal(new byte[] { 1, 2, 3 }, buffer[..3]);
    }

    /// <summary>
    /// A prefix trim whose issuer gave up (crashed) after some units took it: every read below the
    /// mark answers Trimmed or the block's own bytes — never other bytes, never a hole — every read
    /// above it the block; issued again, the trim completes everywhere, and an older mark changes
    /// nothing.
    /// </summary>
    [Fact]
    public async Task APrefixTrimCutShortLeavesEveryReadCorrectAndCompletesWhenIssuedAgain()
    {
        var connector = new InProcessConnector();
        var names = new[] { "a-head", "a-tail", "b-head", "b-tail" };
        var units = names.Select(_ => LogUnit.Open(new LogUnitOptions { BlockSize = 64 })).ToArray();
        var switchable = units.Select(u => new SwitchableUnit(u)).ToArray();
        try
        {
            connector.Add("s", new Sequencer());
            for (var i = 0; i < names.Length; i++)
            {
                connector.Add(names[i], switchable[i]);
            }

            var store = new MemoryProjectionStore();
            await new LogAdmin(store, connector).BootstrapAsync(new Projection
            {
                Epoch = 1, BlockSize = 64, Sequencer = "s",
                Ranges = [new LayoutRange { Start = 0, Chains = [["a-head", "a-tail"], ["b-head", "b-tail"]] }],
            });
            await using var client = await LogClient.ConnectAsync(store, connector, new LogClientOptions { OperationTimeout = TimeSpan.FromMilliseconds(300) });
            for (var i = 0; i < 40; i++)
            {
                Assert.Equal(i, await client.AppendAsync(Block(i)));
            }

            // The last unit is down: the trim reaches the others, then its issuer gives up.
            switchable[3].Down = true;
            await Assert.ThrowsAsync<SharedLogException>(async () => await client.PrefixTrimAsync(20));
            switchable[3].Down = false;
            Assert.Equal(LogStatus.Trimmed, (await units[0].ReadAsync(1, 0, new byte[64])).Status);
            Assert.Equal(LogStatus.Ok, (await units[3].ReadAsync(1, 1, new byte[64])).Status);

            async Task CheckReadsAsync(bool complete)
            {
                var buffer = new byte[64];
                for (var p = 0; p < 40; p++)
                {
                    LogRead read;
                    try
                    {
                        read = await client.ReadAsync(p, buffer);
                    }
                    catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
                    {
                        Assert.True(p < 20, $"@{p} above the mark answered Trimmed");
                        continue;
                    }

                    Assert.False(complete && p < 20, $"@{p} below the completed trim answered {read.Kind}");
                    Assert.Equal(LogEntryKind.Data, read.Kind);
                    Assert.Equal(Block(p), buffer);
                }
            }

            await CheckReadsAsync(complete: false);
            await client.PrefixTrimAsync(20);
            await CheckReadsAsync(complete: true);
            await client.PrefixTrimAsync(10);
            await CheckReadsAsync(complete: true);
            Assert.Equal(40, await client.AppendAsync(Block(40)));
        }
        finally
        {
            foreach (var unit in units)
            {
                unit.Dispose();
            }
        }
    }

    /// <summary>A unit whose process can be taken down: every call then fails as unreachable (connection refused).</summary>
    private sealed class SwitchableUnit(ILogUnit inner) : ILogUnit
    {
        private readonly TaskCompletionSource _refused = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private volatile bool _down;

        public bool Down
        {
            get => _down;
            set => _down = value;
        }

        /// <summary>Completes once a write was refused while down.</summary>
        public Task Refused => _refused.Task;

        public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
        {
            if (Down)
            {
                _refused.TrySetResult();
                throw new Hyder.Log.Transport.UnitUnreachableException("u", null);
            }

            return inner.WriteAsync(epoch, address, block, cancellationToken);
        }

        public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.ReadAsync(epoch, address, destination, cancellationToken);

        public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.FillAsync(epoch, address, cancellationToken);

        public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.TrimAsync(epoch, address, cancellationToken);

        public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.PrefixTrimAsync(epoch, before, cancellationToken);

        public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.SealAsync(epoch, cancellationToken);

        public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) =>
            Down ? throw new Hyder.Log.Transport.UnitUnreachableException("u", null) : inner.HighestAsync(epoch, cancellationToken);
    }

    [Fact]
    public async Task AReadNeverAnswersABlockThatOnlyTheHeadHoldsWhileTheTailIsDown()
    {
        // A writer put @0 on the head and stopped; then the tail went down. The block is not
        // durable (the head may die and be replaced from the tail, which lacks it), so a read
        // waits for the tail instead of answering it, and gives up after the operation timeout.
        var connector = new InProcessConnector();
        var head = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        var tailUnit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        var tail = new SwitchableUnit(tailUnit);
        try
        {
            connector.Add("s", new Sequencer());
            connector.Add("head", head);
            connector.Add("tail", tail);
            var store = new MemoryProjectionStore();
            await new LogAdmin(store, connector).BootstrapAsync(new Projection
            {
                Epoch = 1, BlockSize = 64, Sequencer = "s", Ranges = [new LayoutRange { Start = 0, Chains = [["head", "tail"]] }],
            });
            Assert.Equal(LogStatus.Ok, (await head.WriteAsync(1, 0, Block(0))).Status);
            tail.Down = true;
            await using var client = await LogClient.ConnectAsync(store, connector, new LogClientOptions { OperationTimeout = TimeSpan.FromMilliseconds(300) });
            var buffer = new byte[64];
            await Assert.ThrowsAsync<SharedLogException>(async () => await client.ReadAsync(0, buffer));

            // Once the tail is back, the read completes the chain and answers the block.
            tail.Down = false;
            Assert.Equal(LogEntryKind.Data, (await client.ReadAsync(0, buffer)).Kind);
            Assert.Equal(Block(0), buffer);
            Assert.Equal(LogStatus.Ok, (await tail.ReadAsync(1, 0, new byte[64])).Status);
        }
        finally
        {
            head.Dispose();
            tailUnit.Dispose();
        }
    }
}
