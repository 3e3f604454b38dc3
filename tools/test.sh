#!/usr/bin/env bash
# The tests, on a fresh Debian machine that has only the .NET SDK: installs the Debian packages the
# tests use, starts a local PostgreSQL with the tests' role and database, then runs the default
# test run (Release, then a Debug pass of the engine, log and server tests). Arguments replace the
# default run with one Release run of that filter, e.g. `tools/test.sh --filter "Category=Stress"`
# for the long run. Setup needs root or sudo; without either it says what is missing and runs the
# tests anyway (each test that needs a missing package fails with one line naming it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages used by tests: etcd-server for the projection store's tests against a real etcd;
# postgresql for the YCSB tool's PostgreSQL target; python3, python3-grpcio, python3-protobuf and
# protobuf-compiler for the gRPC interop tests against the reference implementation (they run
# /usr/bin/python3) and the report renderer; systemd for `systemd-analyze verify` on every unit
# under deploy/linux (systemd need not be running); iproute2 (ip, tc) for the network-namespace
# test of tests/Hyder.Processes.Tests.
apt_packages=(etcd-server postgresql python3 python3-grpcio python3-protobuf protobuf-compiler systemd iproute2)

if [ "$(id -u)" -eq 0 ]; then
  as_root() { "$@"; }
  as_postgres() { (cd / && runuser -u postgres -- "$@"); }
elif command -v sudo >/dev/null 2>&1; then
  as_root() { sudo "$@"; }
  as_postgres() { (cd / && sudo -u postgres "$@"); }
fi

missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if declare -F as_root >/dev/null; then
    echo "tools/test.sh: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "tools/test.sh: missing Debian packages (${missing[*]}); run as root or install sudo to install them" >&2
  fi
fi

# A local PostgreSQL for tests/Hyder.Ycsb.Tests: Debian's cluster, started, with the role and
# database hyder_ycsb (password hyder_ycsb) on 127.0.0.1:5432.
if declare -F as_postgres >/dev/null && command -v pg_lsclusters >/dev/null 2>&1; then
  psql_admin() { as_postgres psql -qtA "$@"; }
  if [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
    as_root pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -1)" main >/dev/null
  fi
  read -r pg_version pg_cluster _ < <(pg_lsclusters -h | head -1)
  as_root pg_ctlcluster "$pg_version" "$pg_cluster" start 2>/dev/null || true
  for _ in $(seq 1 30); do
    psql_admin -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 1
  done
  psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'hyder_ycsb'" | grep -q 1 ||
    psql_admin -c "CREATE ROLE hyder_ycsb LOGIN PASSWORD 'hyder_ycsb'"
  psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'hyder_ycsb'" | grep -q 1 ||
    psql_admin -c "CREATE DATABASE hyder_ycsb OWNER hyder_ycsb"
fi

if [ $# -gt 0 ]; then
  exec dotnet test Hyder.sln -c Release "$@"
fi

# The default run: every test project in Release, then a Debug pass of the engine's, the log's and
# the server's tests (Hyder.Debug.slnf) with the Debug-tier invariant checks on (Invariant.Assert,
# docs/CONTRIBUTING.md). The Debug pass leaves out the log's tests of host processes, which check
# processes, TLS and metrics rather than the unit's invariants and cost the most time, and the
# tests that measure what Release code allocates (Category=ReleaseOnly: a Debug build's async
# methods allocate their state machines, so its bytes per commit say nothing).
status=0
dotnet test Hyder.sln -c Release --filter "Category!=Stress" || status=$?
dotnet test Hyder.Debug.slnf -c Debug --filter "Category!=Stress&Category!=ReleaseOnly&FullyQualifiedName!~ProcessTests" || status=$?
exit "$status"
