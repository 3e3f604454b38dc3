#!/usr/bin/env bash
# PostgreSQL through pgbench with the main job's transaction shape: 8 reads and 2 updates of
# distinct-enough uniform keys over N records of 1 KiB, SERIALIZABLE, prepared statements,
# serialization failures retried. The second PostgreSQL figure docs/benchmarks/server.md puts next
# to Hyder's (the first is the YCSB tool's --target postgres). `--help` says how to run it.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash benchmarks/pgbench-tx.sh [--records N] [--clients N] [--seconds S] [--keep]

Runs pgbench against a PostgreSQL reached through the usual libpq variables (PGHOST, PGPORT,
PGUSER, PGPASSWORD, PGDATABASE). Without them it uses what tools/test.sh creates: 127.0.0.1:5432,
role and database hyder_ycsb, password hyder_ycsb (start it with `pg_ctlcluster 15 main start`).

  --records N   rows in the table (default 100000, the main job's record count)
  --clients N   pgbench clients (default 64: the main job's 2 threads x 32 in flight)
  --seconds S   measured seconds (default 20)
  --keep        keep the table pgbench_tx afterwards (it is dropped by default)

Each transaction: BEGIN ISOLATION LEVEL SERIALIZABLE; 8 SELECTs of random keys; 2 UPDATEs of
random keys with a fresh 1 KiB value; COMMIT. A transaction that fails serialization is retried
(pgbench --max-tries 20) and counted once when it commits. The last line printed is
`pgbench-tx: N tps committed (clients C, records R, S s)`.
EOF
}

records=100000 clients=64 seconds=20 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift ;;
    --clients) clients=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "pgbench-tx.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

for n in "$records" "$clients" "$seconds"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "pgbench-tx.sh: '$n' is not a positive number" >&2; exit 2; }
done
command -v pgbench >/dev/null || { echo "pgbench-tx.sh: pgbench not found (apt-get install postgresql-client)" >&2; exit 2; }

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-hyder_ycsb}
export PGPASSWORD=${PGPASSWORD:-hyder_ycsb} PGDATABASE=${PGDATABASE:-hyder_ycsb}
psql -qAtc "select 1" >/dev/null || { echo "pgbench-tx.sh: cannot connect to $PGUSER@$PGHOST:$PGPORT/$PGDATABASE" >&2; exit 2; }

work=$(mktemp -d)
cleanup() {
  rm -rf "$work"
  [ "$keep" -eq 1 ] || psql -qc "drop table if exists pgbench_tx" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "pgbench-tx: loading $records rows of 1 KiB into pgbench_tx" >&2
psql -q <<EOF
drop table if exists pgbench_tx;
create table pgbench_tx (k bigint primary key, v bytea not null);
insert into pgbench_tx select i, decode(repeat(md5(i::text), 64), 'hex') from generate_series(1, $records) i;
vacuum analyze pgbench_tx;
EOF

{
  for i in 1 2 3 4 5 6 7 8; do echo "\\set r$i random(1, $records)"; done
  echo "\\set w1 random(1, $records)"
  echo "\\set w2 random(1, $records)"
  echo "BEGIN ISOLATION LEVEL SERIALIZABLE;"
  for i in 1 2 3 4 5 6 7 8; do echo "SELECT v FROM pgbench_tx WHERE k = :r$i;"; done
  echo "UPDATE pgbench_tx SET v = decode(repeat(md5(random()::text), 64), 'hex') WHERE k = :w1;"
  echo "UPDATE pgbench_tx SET v = decode(repeat(md5(random()::text), 64), 'hex') WHERE k = :w2;"
  echo "COMMIT;"
} > "$work/tx.sql"

echo "pgbench-tx: $clients clients for $seconds s" >&2
pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" --max-tries 20 -f "$work/tx.sql" > "$work/out.txt" 2>&1 || {
  cat "$work/out.txt" >&2
  echo "pgbench-tx.sh: pgbench failed" >&2
  exit 1
}
cat "$work/out.txt"
tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$work/out.txt")
[ -n "$tps" ] || { echo "pgbench-tx.sh: no tps line in pgbench's output" >&2; exit 1; }
echo "pgbench-tx: $tps tps committed (clients $clients, records $records, $seconds s)"
