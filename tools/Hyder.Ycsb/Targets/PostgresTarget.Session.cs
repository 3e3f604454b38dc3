using System.Buffers.Binary;
using System.Data;
using Hyder.Ycsb.Workloads;
using Npgsql;
using NpgsqlTypes;
using Isolation = Hyder.Ycsb.Workloads.IsolationLevel;

namespace Hyder.Ycsb.Targets;

internal sealed partial class PostgresTarget
{
    private enum Statement
    {
        Get,
        Put,
        Insert,
        Delete,
        Scan,
        Add,
    }

    private sealed class Session(PostgresTarget target, NpgsqlConnection connection) : ITargetSession
    {
        private readonly Dictionary<(int Space, Statement Statement), NpgsqlCommand> _commands = [];
        private NpgsqlTransaction? _transaction;

        public async ValueTask BeginAsync(Isolation isolation, bool readOnly, CancellationToken cancellationToken)
        {
            await RollbackAsync(cancellationToken).ConfigureAwait(false);
            var level = isolation switch
            {
                Isolation.Serializable => System.Data.IsolationLevel.Serializable,
                Isolation.RepeatableRead or Isolation.Snapshot => System.Data.IsolationLevel.RepeatableRead,
                Isolation.ReadCommitted => System.Data.IsolationLevel.ReadCommitted,
                _ => throw new ArgumentOutOfRangeException(nameof(isolation), isolation, null),
            };

            // Npgsql sends BEGIN with the first statement: no round trip of its own.
            _transaction = await connection.BeginTransactionAsync(level, cancellationToken).ConfigureAwait(false);
        }

        public async ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Get, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            return await GuardAsync(async () =>
            {
                await using var reader = await command.ExecuteReaderAsync(CommandBehavior.SingleRow, cancellationToken).ConfigureAwait(false);
                return await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
            }).ConfigureAwait(false);
        }

        public async ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Get, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            return await GuardAsync(async () =>
            {
                await using var reader = await command.ExecuteReaderAsync(CommandBehavior.SingleRow, cancellationToken).ConfigureAwait(false);
                return await reader.ReadAsync(cancellationToken).ConfigureAwait(false) ? reader.GetInt64(0) : (long?)null;
            }).ConfigureAwait(false);
        }

        public async ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Put, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            SetValue(command, space, value);
            await GuardAsync(() => command.ExecuteNonQueryAsync(cancellationToken)).ConfigureAwait(false);
        }

        public async ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Insert, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            SetValue(command, space, value);
            return await GuardAsync(() => command.ExecuteNonQueryAsync(cancellationToken)).ConfigureAwait(false) == 1;
        }

        public async ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Delete, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            return await GuardAsync(() => command.ExecuteNonQueryAsync(cancellationToken)).ConfigureAwait(false) == 1;
        }

        public async ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Scan, cancellationToken).ConfigureAwait(false);
            SetKey(command, startKey);
            ((NpgsqlParameter<int>)command.Parameters[1]).TypedValue = limit;
            return await GuardAsync(async () =>
            {
                await using var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                var rows = 0;
                while (await reader.ReadAsync(cancellationToken).ConfigureAwait(false))
                {
                    rows++;
                }

                return rows;
            }).ConfigureAwait(false);
        }

        public async ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken)
        {
            var command = await CommandAsync(space, Statement.Add, cancellationToken).ConfigureAwait(false);
            SetKey(command, key);
            ((NpgsqlParameter<long>)command.Parameters[1]).TypedValue = delta;
            await GuardAsync(() => command.ExecuteNonQueryAsync(cancellationToken)).ConfigureAwait(false);
        }

        public async ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken)
        {
            var transaction = _transaction ?? throw new InvalidOperationException("No transaction is open.");
            _transaction = null;
            try
            {
                await transaction.CommitAsync(cancellationToken).ConfigureAwait(false);
                return CommitOutcome.Success;
            }
            catch (PostgresException e) when (Retryable(e) is { } cause)
            {
                return CommitOutcome.Aborted(cause);
            }
            finally
            {
                await transaction.DisposeAsync().ConfigureAwait(false);
            }
        }

        public async ValueTask RollbackAsync(CancellationToken cancellationToken)
        {
            var transaction = _transaction;
            _transaction = null;
            if (transaction is null)
            {
                return;
            }

            try
            {
                await transaction.RollbackAsync(cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                await transaction.DisposeAsync().ConfigureAwait(false);
            }
        }

        public async ValueTask DisposeAsync()
        {
            foreach (var command in _commands.Values)
            {
                await command.DisposeAsync().ConfigureAwait(false);
            }

            if (_transaction is not null)
            {
                await _transaction.DisposeAsync().ConfigureAwait(false);
            }

            await connection.DisposeAsync().ConfigureAwait(false);
        }

        private static async Task<T> GuardAsync<T>(Func<Task<T>> statement)
        {
            try
            {
                return await statement().ConfigureAwait(false);
            }
            catch (PostgresException e) when (Retryable(e) is { } cause)
            {
                throw new TransactionAbortedException(cause, $"PostgreSQL aborted the transaction: {e.SqlState} {e.MessageText}", e);
            }
        }

        private static void SetKey(NpgsqlCommand command, ReadOnlyMemory<byte> key) =>
            ((NpgsqlParameter<ReadOnlyMemory<byte>>)command.Parameters[0]).TypedValue = key;

        private static void SetValue(NpgsqlCommand command, KeySpace space, ReadOnlyMemory<byte> value)
        {
            if (space.Kind == ValueKind.Counter)
            {
                ((NpgsqlParameter<long>)command.Parameters[1]).TypedValue = BinaryPrimitives.ReadInt64LittleEndian(value.Span);
            }
            else
            {
                ((NpgsqlParameter<ReadOnlyMemory<byte>>)command.Parameters[1]).TypedValue = value;
            }
        }

        private async ValueTask<NpgsqlCommand> CommandAsync(KeySpace space, Statement statement, CancellationToken cancellationToken)
        {
            if (_commands.TryGetValue((space.Id, statement), out var command))
            {
                return command;
            }

            var table = target.TableName(space);
            var counter = space.Kind == ValueKind.Counter;
            var column = counter ? "n" : "v";
            var sql = statement switch
            {
                Statement.Get => $"SELECT {column} FROM {table} WHERE k = $1",
                Statement.Put => $"INSERT INTO {table} (k, {column}) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET {column} = EXCLUDED.{column}",
                Statement.Insert => $"INSERT INTO {table} (k, {column}) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING",
                Statement.Delete => $"DELETE FROM {table} WHERE k = $1",
                Statement.Scan => $"SELECT k, {column} FROM {table} WHERE k >= $1 ORDER BY k LIMIT $2",
                Statement.Add => counter
                    ? $"INSERT INTO {table} AS t (k, n) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = t.n + EXCLUDED.n"
                    : throw new InvalidOperationException($"Add needs a counter key space; {space.Name} holds bytes."),
                _ => throw new ArgumentOutOfRangeException(nameof(statement), statement, null),
            };
            command = new NpgsqlCommand(sql, connection);
            command.Parameters.Add(new NpgsqlParameter<ReadOnlyMemory<byte>> { NpgsqlDbType = NpgsqlDbType.Bytea });
            switch (statement)
            {
                case Statement.Put or Statement.Insert when !counter:
                    command.Parameters.Add(new NpgsqlParameter<ReadOnlyMemory<byte>> { NpgsqlDbType = NpgsqlDbType.Bytea });
                    break;
                case Statement.Put or Statement.Insert or Statement.Add:
                    command.Parameters.Add(new NpgsqlParameter<long> { NpgsqlDbType = NpgsqlDbType.Bigint });
                    break;
                case Statement.Scan:
                    command.Parameters.Add(new NpgsqlParameter<int> { NpgsqlDbType = NpgsqlDbType.Integer });
                    break;
                default:
                    break;
            }

            await command.PrepareAsync(cancellationToken).ConfigureAwait(false);
            _commands.Add((space.Id, statement), command);
            return command;
        }
    }
}
