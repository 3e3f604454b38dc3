#!/usr/bin/env bash
# The benchmark report (issue 7): the Hyder.Benchmarks reports (meld.md, pipeline.md, server.md)
# and a YCSB sweep of Hyder (meld pipeline, isolation, transaction size, skew, read-only share) with
# PostgreSQL side by side, rendered to ycsb.md with gnuplot charts. `--help` says how to run it;
# docs/benchmarks/README.md says what each file is.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash benchmarks/report.sh [--quick] [--out DIR] [--skip-bdn] [--skip-postgres]
                                 [--records N] [--warmup S] [--duration S] [--threads N] [--in-flight N]

Runs the Hyder.Benchmarks reports (report -> meld.md, pipeline -> pipeline.md, server -> server.md)
and a YCSB sweep of tools/Hyder.Ycsb (pipeline settings, isolation, transaction size, skew,
read-only share, and the same workloads on PostgreSQL), then writes DIR/ycsb.md, its charts
DIR/ycsb/*.png and the runs' JSON DIR/ycsb/runs/. About 30-45 minutes on 2 cores.

  --quick          a smoke run (few records, seconds per run; BDN reports with --quick), about
                   5 minutes; writes to a new temporary folder unless --out is given
  --out DIR        where the reports go (default: docs/benchmarks)
  --skip-bdn       do not run the Hyder.Benchmarks reports
  --skip-postgres  do not start PostgreSQL; the side-by-side section has Hyder's rows only
  --records N      records per YCSB run (default 100000; --quick 5000)
  --warmup S       seconds of warm-up per YCSB run (default 5; --quick 1)
  --duration S     seconds measured per YCSB run (default 20; --quick 3)
  --threads N      YCSB worker threads (default 2)
  --in-flight N    transactions in flight per thread (default 16)

Environment: HYDER_REPORT_TARGET=embedded|memory chooses the Hyder target of the YCSB tool
(default embedded; memory is the tool's in-process reference target, for a dry run of the script).

As root, the script installs gnuplot-nox, python3 and postgresql with apt-get when missing.
PostgreSQL runs as a fresh cluster in a temporary folder on 127.0.0.1 and a free port (as the
postgres user when run as root); it is stopped and deleted on exit. The system cluster is not used.
EOF
}

say() { printf '[report] %s\n' "$*"; }
# Words as a shell would need them: bare when safe, else in single quotes.
quote() {
  local word out=""
  for word in "$@"; do
    if [[ $word =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then out+=" $word"; else out+=" '${word//\'/\'\\\'\'}'"; fi
  done
  printf '%s' "${out# }"
}
die() { printf 'report.sh: error: %s\n' "$*" >&2; exit 2; }

# ---------------------------------------------------------------------------------------------
# Options

quick=0 out="" skip_bdn=0 skip_pg=0
records="" warmup="" duration="" threads=2 in_flight=16
original_args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) quick=1 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift ;;
    --skip-bdn) skip_bdn=1 ;;
    --skip-postgres) skip_pg=1 ;;
    --records|--warmup|--duration|--threads|--in-flight)
      [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || die "$1 needs a positive whole number"
      case "$1" in
        --records) records=$2 ;; --warmup) warmup=$2 ;; --duration) duration=$2 ;;
        --threads) threads=$2 ;; --in-flight) in_flight=$2 ;;
      esac
      shift ;;
    *) usage >&2; die "unknown option $1" ;;
  esac
  shift
done

hyder_target=${HYDER_REPORT_TARGET:-embedded}
case "$hyder_target" in
  embedded|memory) ;;
  *) die "HYDER_REPORT_TARGET must be embedded or memory, not '$hyder_target'" ;;
esac

if [ "$quick" -eq 1 ]; then
  : "${records:=5000}" "${warmup:=1}" "${duration:=3}"
else
  : "${records:=100000}" "${warmup:=5}" "${duration:=20}"
fi
value_size=1024

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
if [ -z "$out" ]; then
  if [ "$quick" -eq 1 ]; then out=$(mktemp -d /tmp/hyder-report-quick.XXXXXX); else out=docs/benchmarks; fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

invocation="bash benchmarks/report.sh"
[ ${#original_args[@]} -gt 0 ] && invocation+=" $(quote "${original_args[@]}")"
[ -n "${HYDER_REPORT_TARGET:-}" ] && invocation="HYDER_REPORT_TARGET=$HYDER_REPORT_TARGET $invocation"
say "$invocation"

# ---------------------------------------------------------------------------------------------
# Cleanup: whatever happens, the temporary PostgreSQL cluster is stopped and deleted.

work=$(mktemp -d /tmp/hyder-report-work.XXXXXX)
pg_dir="" pg_bin="" pg_started=0 child="" keep_work=0
# The cluster's superuser is the operating-system user that runs it (peer authentication on its socket).
pg_super=postgres
[ "$(id -u)" -eq 0 ] || pg_super=$(id -un)

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

stop_postgres() {
  if [ "$pg_started" -eq 1 ]; then
    as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || {
      local pid
      pid=$(head -1 "$pg_dir/data/postmaster.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
      sleep 2
    }
    pg_started=0
  fi
  if [ -n "$pg_dir" ]; then
    rm -rf "$pg_dir"
    pg_dir=""
  fi
}

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  stop_postgres
  if [ "$keep_work" -eq 1 ] || [ "$code" -ne 0 ]; then
    say "logs of the runs kept in $work"
  else
    rm -rf "$work"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_child OUT ERR COMMAND...: runs COMMAND in the background, its output to the files OUT and ERR,
# so that a signal reaches the trap at once (and the trap stops it). The redirections are the
# child's alone: the trap's messages still reach the terminal.
run_child() {
  local out=$1 err=$2
  shift 2
  if [ "$out" = "$err" ]; then "$@" >"$out" 2>&1 & else "$@" >"$out" 2>"$err" & fi
  child=$!
  local code=0
  wait "$child" || code=$?
  child=""
  return "$code"
}

# ---------------------------------------------------------------------------------------------
# Tools: python3 renders, gnuplot draws, Debian's postgresql is the side-by-side system.

need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v gnuplot >/dev/null 2>&1 || need+=(gnuplot-nox)
if [ "$skip_pg" -eq 0 ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then need+=(postgresql); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    printf 'report.sh: missing %s. Install them (Debian: sudo apt-get install %s) or run this script as root, which installs them.\n' \
      "${need[*]}" "${need[*]}" >&2
    command -v python3 >/dev/null 2>&1 || exit 2
    [[ " ${need[*]} " == *" postgresql "* ]] && { echo "report.sh: or pass --skip-postgres" >&2; exit 2; }
    say "continuing without gnuplot: ycsb.md will have its tables but no charts"
  fi
fi

manifest_py=$repo/benchmarks/report/manifest.py
stage=$work/stage
runs=$stage/ycsb/runs
mkdir -p "$runs"
manifest=$runs/manifest.json
python3 "$manifest_py" "$manifest" init
record_meta() { python3 "$manifest_py" "$manifest" meta "$@"; }

started=$SECONDS
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit+=" (with uncommitted changes)"
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
memory=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
os_name=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")
dotnet_runtime=$(dotnet --list-runtimes 2>/dev/null | awk '/^Microsoft.NETCore.App / { v = $2 } END { print v }')
record_meta date "$(date -u '+%Y-%m-%d %H:%M UTC')" commit "$commit" cpu "${cpu:-unknown}" cores "$(nproc)" \
  memory "$memory" os "${os_name:-unknown}" kernel "$(uname -r)" dotnet "${dotnet_runtime:-unknown} (SDK $(dotnet --version))" \
  loadBefore "$load_before" command "$invocation" mode "$([ "$quick" -eq 1 ] && echo quick || echo full)" hyderTarget "$hyder_target"
say "output: $out; Hyder target: $hyder_target; $records records, ${warmup} s warm-up + ${duration} s per run, $threads threads x $in_flight in flight"

# ---------------------------------------------------------------------------------------------
# Hyder.Benchmarks: meld.md, pipeline.md, server.md through the project's own commands.

written=()
if [ "$skip_bdn" -eq 0 ]; then
  say "building benchmarks/Hyder.Benchmarks"
  run_child "$work/bdn-build.log" "$work/bdn-build.log" dotnet build -c Release -nologo -v q benchmarks/Hyder.Benchmarks ||
    { tail -20 "$work/bdn-build.log" >&2; die "the build of benchmarks/Hyder.Benchmarks failed"; }
  quick_flag=()
  [ "$quick" -eq 1 ] && quick_flag=(--quick)
  for pair in report:meld.md pipeline:pipeline.md server:server.md; do
    command=${pair%%:*} file=${pair#*:}
    say "Hyder.Benchmarks $command ${quick_flag[*]} -> $out/$file"
    t0=$SECONDS
    run_child "$work/bdn-$command.log" "$work/bdn-$command.err" \
      dotnet run -c Release --no-build --project benchmarks/Hyder.Benchmarks -- "$command" "${quick_flag[@]}" --out "$out/$file" ||
      { tail -20 "$work/bdn-$command.log" "$work/bdn-$command.err" >&2; die "Hyder.Benchmarks $command failed"; }
    say "  done in $((SECONDS - t0)) s"
    written+=("$out/$file")
  done
fi

# ---------------------------------------------------------------------------------------------
# PostgreSQL: a fresh cluster in a temporary folder, on 127.0.0.1 and a free port.

pg_connection=""
pg_password=""
pg_failed=0
# Every step checks its own outcome: the function runs in an `if`, where set -e does not apply.
start_postgres() {
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  pg_dir=$(mktemp -d /tmp/hyder-report-pg.XXXXXX)
  if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$pg_dir"; fi
  chmod 700 "$pg_dir"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  pg_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U "$pg_super" --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --no-locale \
    >"$work/pg-initdb.log" 2>&1 || { cat "$work/pg-initdb.log" >&2; say "initdb failed"; return 1; }
  # One connection per YCSB session (threads x in-flight), plus room for psql: at least the default 100.
  local connections=$((threads * in_flight + 10 > 100 ? threads * in_flight + 10 : 100))
  as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$pg_dir -c max_connections=$connections" start >/dev/null ||
    { cat "$pg_dir/server.log" >&2; say "PostgreSQL did not start"; return 1; }
  pg_started=1
  local sql=(-h "$pg_dir" -p "$port" -U "$pg_super" -d postgres -qAt -v ON_ERROR_STOP=1)
  as_pg "$pg_bin/psql" "${sql[@]}" -c "CREATE ROLE hyder_report LOGIN PASSWORD '$pg_password'" \
    -c "CREATE DATABASE hyder_report OWNER hyder_report" >/dev/null || { say "could not create the role and database"; return 1; }
  local version settings
  version=$(as_pg "$pg_bin/psql" "${sql[@]}" -c "SHOW server_version") || return 1
  settings=$(as_pg "$pg_bin/psql" "${sql[@]}" -c "SELECT string_agg(name || ' ' || current_setting(name), ', ' ORDER BY name)
    FROM pg_settings WHERE name IN ('shared_buffers', 'fsync', 'synchronous_commit', 'max_connections', 'wal_level')") || return 1
  record_meta postgres "PostgreSQL $version, a fresh cluster (initdb's defaults but max_connections; $settings) on 127.0.0.1 in a temporary folder, started and deleted by the script"
  pg_connection="Host=127.0.0.1;Port=$port;Username=hyder_report;Password=$pg_password;Database=hyder_report"
  say "PostgreSQL $version on 127.0.0.1:$port (data in $pg_dir)"
}

# ---------------------------------------------------------------------------------------------
# The YCSB sweep. Every run: run --load (load, warm-up, measured window) with the same records,
# value size, threads and in-flight. Each sweep runs its own rows back to back, so that the rows it
# compares share the machine's conditions; --quick runs the baseline once for every sweep.

say "building tools/Hyder.Ycsb"
run_child "$work/ycsb-build.log" "$work/ycsb-build.log" dotnet build -c Release -nologo -v q tools/Hyder.Ycsb ||
  { tail -20 "$work/ycsb-build.log" >&2; die "the build of tools/Hyder.Ycsb failed"; }
ycsb_dll=$(dotnet msbuild tools/Hyder.Ycsb -nologo -getProperty:TargetPath -p:Configuration=Release)
[ -f "$ycsb_dll" ] || die "the build left no $ycsb_dll"
ycsb_dll_shown=${ycsb_dll#"$repo"/}

common=(--record-count "$records" --value-size "$value_size" --threads "$threads" --in-flight "$in_flight"
  --warmup "$warmup" --duration "$duration")
run_limit=$((warmup + duration + (quick == 1 ? 300 : 900)))

declare -A ran=() exit_of=() seconds_of=() error_of=()
planned=0 done_count=0 failures=0 counting=0

sweep() { [ "$counting" -eq 1 ] || python3 "$manifest_py" "$manifest" sweep "$@"; }

# ycsb SWEEP LABEL SYSTEM GROUP NAME ARGS...: one row; runs NAME unless an earlier row ran it.
ycsb() {
  local sweep_id=$1 label=$2 system=$3 group=$4 name=$5
  shift 5
  if [ "$counting" -eq 1 ]; then
    [ -n "${ran[$name]:-}" ] || { ran[$name]=1; planned=$((planned + 1)); }
    return 0
  fi
  local file=$name.json
  # The command as the report shows it: from the repository root, the password masked.
  local shown=() a
  for a in dotnet "$ycsb_dll_shown" run --load "$@" "${common[@]}" --json "$file"; do
    shown+=("${a//$pg_password/***}")
  done
  if [ -z "${ran[$name]:-}" ]; then
    ran[$name]=1
    done_count=$((done_count + 1))
    say "$done_count/$planned $name: $(quote "${shown[@]}")"
    local t0=$SECONDS code=0
    run_child "$work/$name.out" "$work/$name.err" \
      timeout -k 20 "$run_limit" dotnet "$ycsb_dll" run --load "$@" "${common[@]}" --json "$runs/$file" || code=$?
    exit_of[$name]=$code
    seconds_of[$name]=$((SECONDS - t0))
    if [ "$code" -eq 0 ]; then
      local rate aborts
      rate=$(awk -F', ' '$1 == "[OVERALL]" && $2 == "Committed(tx/sec)" { v = $3 } END { print v }' "$work/$name.out")
      aborts=$(awk -F', ' '$1 == "[OVERALL]" && $2 == "AbortRate(%)" { v = $3 } END { print v }' "$work/$name.out")
      say "  $rate committed tx/s, $aborts % aborted attempts (${seconds_of[$name]} s)"
    else
      failures=$((failures + 1))
      keep_work=1
      [ "$code" -eq 124 ] && echo "error: no result within $run_limit s (timeout)" >>"$work/$name.err"
      error_of[$name]=$( (grep -m1 '^error:' "$work/$name.err" || tail -1 "$work/$name.err") | cut -c1-400)
      rm -f "$runs/$file"
      say "  FAILED with exit code $code: ${error_of[$name]}"
    fi
  fi
  local entry=(--sweep "$sweep_id" --label "$label" --system "$system" --file "$file" --exit "${exit_of[$name]}"
    --seconds "${seconds_of[$name]}")
  [ -n "$group" ] && entry+=(--group "$group")
  [ -n "${error_of[$name]:-}" ] && entry+=(--error "${error_of[$name]}")
  python3 "$manifest_py" "$manifest" run "${entry[@]}" -- "${shown[@]}"
}

# hyder_row SWEEP LABEL GROUP NAME PIPELINE ARGS...: a Hyder row; PIPELINE is final, group, premeld or both.
hyder_row() {
  local sweep_id=$1 label=$2 group=$3 name=$4 pipeline=$5
  shift 5
  local target=(--target "$hyder_target")
  if [ "$hyder_target" = embedded ]; then
    target+=(--servers 1)
    case "$pipeline" in
      final) ;;
      group) target+=(--group-meld) ;;
      premeld) target+=(--premeld-threads 2 --distance 2) ;;
      both) target+=(--premeld-threads 2 --distance 2 --group-meld) ;;
    esac
  fi
  ycsb "$sweep_id" "$label" Hyder "$group" "$name" "${target[@]}" "$@"
}

# pg_row SWEEP LABEL GROUP NAME ARGS...: a PostgreSQL row.
pg_row() {
  local sweep_id=$1 label=$2 group=$3 name=$4
  shift 4
  ycsb "$sweep_id" "$label" PostgreSQL "$group" "$name" --target postgres --pg "$pg_connection" "$@"
}

tx82=(--workload tx --reads 8 --writes 2 --distribution uniform)

# own NAME SHARED: the run of a row that repeats an earlier configuration (SHARED) in another sweep.
own() { if [ "$quick" -eq 1 ]; then echo "$2"; else echo "$1"; fi; }

hyder_sweeps() {
  sweep pipeline "Meld pipeline settings" \
    "8 reads + 2 writes per transaction, uniform keys, serializable, one server; the setting is the server's meld pipeline: final meld only, group meld, premeld with 2 threads at distance 2 (t=2 d=2), and both."
  hyder_row pipeline "final meld only" "" pipeline-final final "${tx82[@]}" --isolation serializable
  hyder_row pipeline "group meld" "" pipeline-group group "${tx82[@]}" --isolation serializable
  hyder_row pipeline "premeld t=2 d=2" "" pipeline-premeld premeld "${tx82[@]}" --isolation serializable
  hyder_row pipeline "premeld t=2 d=2 + group meld" "" pipeline-both both "${tx82[@]}" --isolation serializable

  sweep isolation "Serializable vs snapshot isolation" \
    "8 reads + 2 writes per transaction, uniform keys, final meld only; the setting is the isolation level."
  hyder_row isolation serializable "" "$(own isolation-serializable pipeline-final)" final "${tx82[@]}" --isolation serializable
  hyder_row isolation snapshot "" isolation-snapshot final "${tx82[@]}" --isolation snapshot

  sweep txsize "Transaction size" \
    "Uniform keys, serializable, final meld only; the setting is reads + writes per transaction."
  hyder_row txsize "2 + 2" "" txsize-2-2 final --workload tx --reads 2 --writes 2 --distribution uniform --isolation serializable
  hyder_row txsize "8 + 2" "" "$(own txsize-8-2 pipeline-final)" final "${tx82[@]}" --isolation serializable
  hyder_row txsize "16 + 4" "" txsize-16-4 final --workload tx --reads 16 --writes 4 --distribution uniform --isolation serializable

  sweep skew "Key skew" \
    "8 reads + 2 writes per transaction, serializable, final meld only; the setting is the key distribution: uniform, zipfian (θ = 0.99), and hotspot, where a fraction x of the keys gets 1 − x of the operations."
  hyder_row skew uniform "" "$(own skew-uniform pipeline-final)" final "${tx82[@]}" --isolation serializable
  hyder_row skew "zipfian 0.99" "" skew-zipfian final --workload tx --reads 8 --writes 2 --distribution zipfian --zipfian-constant 0.99 --isolation serializable
  hyder_row skew "hotspot x=0.2" "" skew-hotspot-0.2 final --workload tx --reads 8 --writes 2 --distribution hotspot --hotspot-data-fraction 0.2 --isolation serializable
  hyder_row skew "hotspot x=0.05" "" skew-hotspot-0.05 final --workload tx --reads 8 --writes 2 --distribution hotspot --hotspot-data-fraction 0.05 --isolation serializable

  sweep readonly "Read-only share" \
    "8 reads + 2 writes per update transaction, uniform keys, serializable, final meld only; the setting is the share of transactions that only read (their 8 reads)."
  hyder_row readonly 0 "" "$(own readonly-0 pipeline-final)" final "${tx82[@]}" --isolation serializable
  hyder_row readonly 0.5 "" readonly-0.5 final "${tx82[@]}" --read-only-share 0.5 --isolation serializable
  hyder_row readonly 0.9 "" readonly-0.9 final "${tx82[@]}" --read-only-share 0.9 --isolation serializable
}

comparison_sweep() {
  local note="PostgreSQL was not run (--skip-postgres)."
  [ "$skip_pg" -eq 1 ] || note="PostgreSQL runs in the same script run, on the same machine, with the same records, value size, threads and in-flight transactions; its SERIALIZABLE and REPEATABLE READ (snapshot isolation in PostgreSQL) face Hyder's serializable and snapshot isolation."
  sweep postgres "Side by side with PostgreSQL" \
    "Two workloads: tx 8 + 2 (8 reads + 2 writes per transaction, uniform keys) and YCSB A (one operation per transaction, read 0.5 / update 0.5, zipfian keys). Hyder runs final meld only. $note"
  hyder_row postgres "Hyder, serializable" "tx 8+2" "$(own tx-serializable pipeline-final)" final "${tx82[@]}" --isolation serializable
  hyder_row postgres "Hyder, snapshot" "tx 8+2" "$(own tx-snapshot isolation-snapshot)" final "${tx82[@]}" --isolation snapshot
  if [ "$skip_pg" -eq 0 ] && [ "$counting" -eq 0 ] && ! start_postgres; then
    say "PostgreSQL failed to start: its rows are left out (the script will exit with 1)"
    record_meta postgres "failed to start (the script's output says why)"
    stop_postgres
    pg_failed=1
  fi
  if [ "$skip_pg" -eq 0 ] && [ "$pg_failed" -eq 0 ]; then
    pg_row postgres "PostgreSQL, SERIALIZABLE" "tx 8+2" pg-tx-serializable "${tx82[@]}" --isolation serializable
    pg_row postgres "PostgreSQL, REPEATABLE READ" "tx 8+2" pg-tx-repeatable-read "${tx82[@]}" --isolation repeatable-read
  fi
  hyder_row postgres "Hyder, serializable" "YCSB A" a-serializable final --workload a --isolation serializable
  hyder_row postgres "Hyder, snapshot" "YCSB A" a-snapshot final --workload a --isolation snapshot
  if [ "$skip_pg" -eq 0 ] && [ "$pg_failed" -eq 0 ]; then
    pg_row postgres "PostgreSQL, SERIALIZABLE" "YCSB A" pg-a-serializable --workload a --isolation serializable
    pg_row postgres "PostgreSQL, REPEATABLE READ" "YCSB A" pg-a-repeatable-read --workload a --isolation repeatable-read
    [ "$counting" -eq 1 ] || stop_postgres
  fi
}

counting=1
hyder_sweeps
comparison_sweep
counting=0
ran=()
say "YCSB sweep: $planned runs"
hyder_sweeps
comparison_sweep

# ---------------------------------------------------------------------------------------------
# Render ycsb.md and move it, its charts and its runs into the output folder.

elapsed=$((SECONDS - started))
record_meta loadAfter "$(cut -d' ' -f1-3 /proc/loadavg)" elapsed "$(printf '%02d:%02d' $((elapsed / 60)) $((elapsed % 60)))"
if [ "$planned" -gt 0 ] && [ "$failures" -eq "$planned" ]; then
  die "all $planned YCSB runs failed; $out is unchanged (logs in $work)"
fi
render_code=0
python3 benchmarks/report/render.py "$runs" --out "$stage" || render_code=$?
[ "$render_code" -eq 2 ] && die "render.py could not render the sweep (logs in $work)"
rm -rf "$out/ycsb" "$out/ycsb.md"
mv "$stage/ycsb.md" "$out/ycsb.md"
mv "$stage/ycsb" "$out/ycsb"

written+=("$out/ycsb.md")
say "wrote:"
for f in "${written[@]}"; do say "  $f"; done
say "  $out/ycsb/ ($(find "$out/ycsb" -maxdepth 1 -name '*.png' | wc -l) charts, $(find "$out/ycsb/runs" -name '*.json' ! -name manifest.json | wc -l) runs)"
say "took $(printf '%02d:%02d' $((elapsed / 60)) $((elapsed % 60)))"
if [ "$failures" -gt 0 ]; then
  say "$failures of $planned YCSB runs failed (see ycsb.md)"
  exit 1
fi
[ "$pg_failed" -eq 0 ] || exit 1
[ "$render_code" -eq 0 ] || exit 1
