using Hyder.Testing;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Workloads;
using Npgsql;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// Integration tests against a real PostgreSQL: <c>tools/test.sh</c> installs Debian's postgresql,
/// starts it and creates the role and database below. Each fails with one line saying so when the
/// server is not reachable. HYDER_YCSB_PG overrides the connection string.
/// </summary>
public sealed class PostgresTests : IAsyncLifetime
{
    public static readonly string ConnectionString =
        Environment.GetEnvironmentVariable("HYDER_YCSB_PG") ?? "Host=127.0.0.1;Port=5432;Username=hyder_ycsb;Password=hyder_ycsb;Database=hyder_ycsb";

    private static readonly KeySpace s_space = new(0, "t", ValueKind.Bytes, 0);
    private static readonly KeySpace s_counters = new(1, "c", ValueKind.Counter, 0);
    private readonly string _prefix = $"test_{Guid.NewGuid():N}"[..20] + "_";
    private bool _reachable;

    public async Task InitializeAsync()
    {
        try
        {
            await using var connection = new NpgsqlConnection(ConnectionString);
            await connection.OpenAsync();
            _reachable = true;
        }
        catch (Exception e) when (e is NpgsqlException or System.Net.Sockets.SocketException or TimeoutException)
        {
            throw MissingPackageException.For(
                $"PostgreSQL with role and database hyder_ycsb is not reachable on 127.0.0.1:5432 ({e.Message.TrimEnd('.')}; HYDER_YCSB_PG names another)", "postgresql");
        }
    }

    public async Task DisposeAsync()
    {
        if (!_reachable)
        {
            return;
        }

        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var tables = new NpgsqlCommand($"SELECT tablename FROM pg_tables WHERE tablename LIKE '{_prefix}%'", connection);
        var names = new List<string>();
        await using (var reader = await tables.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                names.Add(reader.GetString(0));
            }
        }

        foreach (var name in names)
        {
            await using var drop = new NpgsqlCommand($"DROP TABLE {name}", connection);
            await drop.ExecuteNonQueryAsync();
        }
    }

    [Fact]
    public async Task OperationsReadBackWhatTheyWrote()
    {
        await using var target = new PostgresTarget(ConnectionString, _prefix, 2);
        await target.PrepareAsync([s_space, s_counters], reset: true, default);
        await using var session = await target.OpenSessionAsync(default);
        await session.BeginAsync(IsolationLevel.Serializable, false, default);
        Assert.True(await session.InsertAsync(s_space, new byte[] { 1 }, new byte[] { 10 }, default));
        Assert.False(await session.InsertAsync(s_space, new byte[] { 1 }, new byte[] { 11 }, default));
        await session.PutAsync(s_space, new byte[] { 2 }, new byte[] { 20 }, default);
        await session.PutAsync(s_space, new byte[] { 3 }, new byte[] { 30 }, default);
        await session.AddAsync(s_counters, new byte[] { 1 }, 5, default);
        await session.AddAsync(s_counters, new byte[] { 1 }, -2, default);
        Assert.True((await session.CommitAsync(default)).Committed);

        await session.BeginAsync(IsolationLevel.RepeatableRead, true, default);
        Assert.True(await session.GetAsync(s_space, new byte[] { 2 }, default));
        Assert.False(await session.GetAsync(s_space, new byte[] { 9 }, default));
        Assert.Equal(3, await session.ReadCounterAsync(s_counters, new byte[] { 1 }, default));
        Assert.Null(await session.ReadCounterAsync(s_counters, new byte[] { 2 }, default));
        Assert.Equal(2, await session.ScanAsync(s_space, new byte[] { 2 }, 10, default));
        Assert.Equal(1, await session.ScanAsync(s_space, new byte[] { 0 }, 1, default));
        Assert.True(await session.DeleteAsync(s_space, new byte[] { 3 }, default));
        Assert.False(await session.DeleteAsync(s_space, new byte[] { 3 }, default));
        Assert.True((await session.CommitAsync(default)).Committed);

        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var count = new NpgsqlCommand($"SELECT n FROM {_prefix}c WHERE k = '\\x01'", connection);
        Assert.Equal(3L, await count.ExecuteScalarAsync());
    }

    [Fact]
    public async Task WriteSkewUnderSerializableIsASerializationAbort()
    {
        await using var target = new PostgresTarget(ConnectionString, _prefix, 2);
        await target.PrepareAsync([s_space], reset: true, default);
        await using var t1 = await target.OpenSessionAsync(default);
        await using var t2 = await target.OpenSessionAsync(default);
        await t1.BeginAsync(IsolationLevel.Serializable, false, default);
        await t1.PutAsync(s_space, new byte[] { 1 }, new byte[] { 0 }, default);
        await t1.PutAsync(s_space, new byte[] { 2 }, new byte[] { 0 }, default);
        Assert.True((await t1.CommitAsync(default)).Committed);

        await t1.BeginAsync(IsolationLevel.Serializable, false, default);
        await t2.BeginAsync(IsolationLevel.Serializable, false, default);
        await t1.GetAsync(s_space, new byte[] { 1 }, default);
        await t2.GetAsync(s_space, new byte[] { 2 }, default);
        await t1.PutAsync(s_space, new byte[] { 2 }, new byte[] { 1 }, default);
        CommitOutcome second;
        try
        {
            await t2.PutAsync(s_space, new byte[] { 1 }, new byte[] { 1 }, default);
            Assert.True((await t1.CommitAsync(default)).Committed);
            second = await t2.CommitAsync(default);
        }
        catch (TransactionAbortedException e)
        {
            second = CommitOutcome.Aborted(e.Cause);
            await t2.RollbackAsync(default);
        }

        Assert.Equal(CommitOutcome.Aborted(AbortCause.Serialization), second);
    }

    [Fact]
    public async Task ConcurrentUpdatesOfAHotCounterAbortAndRetryWithoutLosingIncrements()
    {
        var prefix = _prefix;
        var (code, output, error) = await CliTests.RunAsync("load", "--target", "postgres", "--pg", ConnectionString, "--table-prefix", prefix,
            "--workload", "incr1", "--record-count", "100");
        Assert.True(code == 0, error);
        (code, output, error) = await CliTests.RunAsync("run", "--target", "postgres", "--pg", ConnectionString, "--table-prefix", prefix,
            "--workload", "incr1", "--record-count", "100", "--hot-share", "1", "--isolation", "repeatable-read", "--threads", "2", "--in-flight", "4",
            "--operations", "400", "--retries", "1000");
        Assert.True(code == 0, error);
        Assert.Contains("[OVERALL], Committed, 400", output, StringComparison.Ordinal);
        Assert.Contains("[ABORT], serialization, ", output, StringComparison.Ordinal);

        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var sum = new NpgsqlCommand($"SELECT sum(n) FROM {prefix}counters", connection);
        Assert.Equal(400m, await sum.ExecuteScalarAsync());
    }

    [Fact]
    public async Task WorkloadALoadsAndRunsThroughTheCommandLine()
    {
        var (code, output, error) = await CliTests.RunAsync("run", "--load", "--target", "postgres", "--pg", ConnectionString, "--table-prefix", _prefix,
            "--workload", "a", "--record-count", "2000", "--value-size", "100", "--operations", "1000", "--threads", "2", "--in-flight", "2");
        Assert.True(code == 0, error);
        Assert.Contains("[INSERT], Operations, 2000", output, StringComparison.Ordinal);
        Assert.Contains("[READ], Operations, ", output, StringComparison.Ordinal);
        Assert.Contains("[UPDATE], Operations, ", output, StringComparison.Ordinal);
        Assert.Contains("[OVERALL], GaveUp, 0", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AnUnreachableServerIsAClearErrorNotASilentPass()
    {
        var (code, _, error) = await CliTests.RunAsync("load", "--target", "postgres", "--pg", "Host=127.0.0.1;Port=1;Username=x;Password=x;Database=x;Timeout=2",
            "--record-count", "10");
        Assert.Equal(1, code);
        Assert.Contains("PostgreSQL is not reachable", error, StringComparison.Ordinal);
    }
}
