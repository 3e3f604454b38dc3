using System.Net.Sockets;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Workloads;
using Npgsql;

namespace Hyder.Ycsb.Targets;

/// <summary>
/// PostgreSQL through Npgsql: one table per key space (<c>k bytea primary key</c> with <c>v bytea</c>
/// or, for counters, <c>n bigint</c>), one connection per session, prepared statements.
/// Isolation: serializable → SERIALIZABLE, repeatable read and snapshot → REPEATABLE READ
/// (PostgreSQL's repeatable read is snapshot isolation), read committed → READ COMMITTED.
/// Serialization failures (SQLSTATE 40001) and deadlocks (40P01) abort the attempt; the driver
/// retries it as a YCSB-JDBC user would and counts every abort.
/// </summary>
internal sealed partial class PostgresTarget : ITarget
{
    private readonly NpgsqlDataSource _dataSource;
    private readonly string _tablePrefix;
    private readonly string _where;

    public PostgresTarget(string connectionString, string tablePrefix, int sessions)
    {
        NpgsqlConnectionStringBuilder builder;
        try
        {
            builder = new NpgsqlConnectionStringBuilder(connectionString);
        }
        catch (ArgumentException e)
        {
            throw new ArgumentException($"--pg is not a valid connection string: {e.Message}", nameof(connectionString), e);
        }

        if (builder.MaxPoolSize < sessions)
        {
            builder.MaxPoolSize = sessions;
        }

        _where = $"{builder.Username ?? "(default user)"}@{builder.Host ?? "localhost"}:{builder.Port}/{builder.Database ?? "(default database)"}";
        _tablePrefix = tablePrefix;
        _dataSource = NpgsqlDataSource.Create(builder.ConnectionString);
    }

    public string Description => $"postgres {_where} (tables {_tablePrefix}*)";

    public string TableName(KeySpace space) => _tablePrefix + space.Name;

    public async Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken)
    {
        await using var connection = await OpenAsync(cancellationToken).ConfigureAwait(false);
        foreach (var space in keySpaces)
        {
            var column = space.Kind == ValueKind.Counter ? "n bigint NOT NULL" : "v bytea NOT NULL";
            var sql = $"CREATE TABLE IF NOT EXISTS {TableName(space)} (k bytea PRIMARY KEY, {column})";
            if (reset)
            {
                sql += $"; TRUNCATE {TableName(space)}";
            }

            await using var command = new NpgsqlCommand(sql, connection);
            await command.ExecuteNonQueryAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    public async Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken) =>
        new Session(this, await OpenAsync(cancellationToken).ConfigureAwait(false));

    public ValueTask DisposeAsync() => _dataSource.DisposeAsync();

    private async Task<NpgsqlConnection> OpenAsync(CancellationToken cancellationToken)
    {
        try
        {
            return await _dataSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is NpgsqlException or SocketException or TimeoutException)
        {
            throw new TargetUnavailableException($"PostgreSQL is not reachable at {_where}: {e.Message}", e);
        }
    }

    /// <summary>The abort cause of a PostgreSQL error that ends the transaction but may succeed on retry, or null.</summary>
    internal static AbortCause? Retryable(PostgresException e) => e.SqlState switch
    {
        PostgresErrorCodes.SerializationFailure => AbortCause.Serialization,
        PostgresErrorCodes.DeadlockDetected => AbortCause.Deadlock,
        _ => null,
    };
}
