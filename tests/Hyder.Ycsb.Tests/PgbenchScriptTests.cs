using System.Globalization;
using Hyder.Testing;
using Npgsql;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>Runs alone, after the parallel tests: pgbench keeps both cores busy for its seconds.</summary>
[CollectionDefinition(nameof(PgbenchScriptTests), DisableParallelization = true)]
public sealed class PgbenchCollection;

/// <summary>
/// <c>benchmarks/pgbench-tx.sh</c>, the pgbench side of the PostgreSQL comparison in
/// docs/benchmarks/server.md: its help and refusals, and a short real run against the PostgreSQL
/// that <c>tools/test.sh</c> starts (the same one <see cref="PostgresTests"/> uses).
/// </summary>
[Collection(nameof(PgbenchScriptTests))]
public sealed class PgbenchScriptTests
{
    [Fact]
    public async Task HelpSaysHowToRunItAndBadOptionsAreRefusedWithExitCode2()
    {
        var help = await RunAsync("--help");
        Assert.Equal(0, help.ExitCode);
        Assert.Contains("Usage: bash benchmarks/pgbench-tx.sh", help.Output, StringComparison.Ordinal);
        Assert.Contains("--clients N", help.Output, StringComparison.Ordinal);

        var unknown = await RunAsync("--fast");
        Assert.Equal(2, unknown.ExitCode);
        Assert.Contains("unknown option '--fast'", unknown.Error, StringComparison.Ordinal);

        var notNumber = await RunAsync("--records", "many");
        Assert.Equal(2, notNumber.ExitCode);
        Assert.Contains("'many' is not a positive number", notNumber.Error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AShortRunCommitsTransactionsAndDropsItsTable()
    {
        try
        {
            await using var connection = new NpgsqlConnection(PostgresTests.ConnectionString);
            await connection.OpenAsync();
        }
        catch (Exception e) when (e is NpgsqlException or System.Net.Sockets.SocketException or TimeoutException)
        {
            throw MissingPackageException.For($"PostgreSQL with role and database hyder_ycsb is not reachable on 127.0.0.1:5432 ({e.Message.TrimEnd('.')})", "postgresql");
        }

        var run = await RunAsync("--records", "500", "--clients", "2", "--seconds", "2");
        Assert.True(run.ExitCode == 0, run.Error + run.Output);
        var last = run.Output.TrimEnd().Split('\n')[^1];
        Assert.StartsWith("pgbench-tx: ", last, StringComparison.Ordinal);
        Assert.EndsWith("tps committed (clients 2, records 500, 2 s)", last, StringComparison.Ordinal);
        Assert.True(double.Parse(last.Split(' ')[1], CultureInfo.InvariantCulture) > 0, last);

        await using var check = new NpgsqlConnection(PostgresTests.ConnectionString);
        await check.OpenAsync();
        await using var exists = new NpgsqlCommand("SELECT count(*) FROM pg_tables WHERE tablename = 'pgbench_tx'", check);
        Assert.Equal(0L, (long)(await exists.ExecuteScalarAsync())!);
    }

    private static Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args) =>
        ChildProcess.RunAsync("bash", [Path.Combine(BuiltProject.RepositoryRoot(), "benchmarks", "pgbench-tx.sh"), .. args], TimeSpan.FromMinutes(2));
}
