#!/usr/bin/env bash
# Issue 20's remote-client measurement in one sitting: the README's main job (an embedded cluster),
# the gRPC stack alone (Hyder.Benchmarks rpc-floor) and the same workload through the YCSB tool's
# --connect against a fresh hyder-server --embedded, round after round, with each process's CPU per
# committed transaction and --connect's share of the embedded run. `--help` says how to run it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'EOF'
Usage: bash benchmarks/connect-share.sh [--rounds N] [--warmup S] [--duration S] [--record-count N]
                                        [--floor-work-us N | --no-floor] [--configuration C] [--build]

Each round runs, one after the other on this machine:
  embedded  the README's main job: the YCSB tool against an embedded cluster (8 reads + 2 writes,
            serializable, 1 KiB values, 2 threads x 32 in flight, final meld at nice -10);
  floor     Hyder.Benchmarks rpc-floor: the official gRPC stack alone, two processes, the main
            job's messages, N us of server CPU per transaction standing in for the engine;
  connect   the same YCSB workload through --connect (interactive transactions over gRPC) against
            a fresh hyder-server --embedded listening on 127.0.0.1, port 0; stopped afterwards.

  --rounds N          rounds (default 3)
  --warmup S          warm-up seconds of each run (default 10)
  --duration S        measured seconds of each run (default 20)
  --record-count N    records loaded by each YCSB run (default 100000, the main job's)
  --floor-work-us N   server work per transaction in the floor run (default 80: about what the
                      engine costs per commit on the project's 2-core VM; see docs/benchmarks/rpc.md)
  --no-floor          skip the floor runs
  --configuration C   the build to run (default Release)
  --build             build the three programs first (otherwise they must be built:
                      dotnet build -c Release)

Per run it prints committed tx/s and CPU per committed transaction (user + system time of the
processes over the measured window, from /proc; the embedded run's from the YCSB report). Per
round it prints --connect's share of that round's embedded run (and the floor's). The last line
gives the shares of the means, then the means and the per-round shares:
  connect-share: connect A % of embedded, floor F % (means of N round(s): embedded E, floor G,
  connect C tx/s; per round: connect a b c %, floor f g h %)
Runs on one machine share its cores: compare runs of one sitting, never figures across sittings;
one round's share moves with the machine's noise, the means' less.
EOF
}

die() { # die CODE MESSAGE
  echo "connect-share: $2" >&2
  exit "$1"
}

rounds=3 warmup=10 duration=20 records=100000 floor_work=80 floor=1 build=0 configuration=Release
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds | --warmup | --duration | --record-count | --floor-work-us)
      [ $# -ge 2 ] || die 2 "$1 needs a value (see --help)"
      [[ "$2" =~ ^[0-9]+$ ]] || die 2 "$1 takes a whole number, not '$2'"
      case "$1" in
        --rounds) rounds=$2 ;;
        --warmup) warmup=$2 ;;
        --duration) duration=$2 ;;
        --record-count) records=$2 ;;
        --floor-work-us) floor_work=$2 ;;
      esac
      shift ;;
    --configuration)
      [ $# -ge 2 ] && [[ "$2" =~ ^(Release|Debug)$ ]] || die 2 "--configuration takes Release or Debug"
      configuration=$2
      shift ;;
    --no-floor) floor=0 ;;
    --build) build=1 ;;
    -h | --help) usage; exit 0 ;;
    *) die 2 "unknown option '$1' (see --help)" ;;
  esac
  shift
done
[ "$rounds" -ge 1 ] && [ "$duration" -ge 1 ] && [ "$records" -ge 1 ] || die 2 "--rounds, --duration and --record-count must be at least 1"

ycsb_dll="$root/tools/Hyder.Ycsb/bin/$configuration/net10.0/Hyder.Ycsb.dll"
server_dll="$root/src/Hyder.Server.Host/bin/$configuration/net10.0/hyder-server.dll"
bench_dll="$root/benchmarks/Hyder.Benchmarks/bin/$configuration/net10.0/Hyder.Benchmarks.dll"
if [ "$build" -eq 1 ]; then
  echo "connect-share: building in $configuration" >&2
  dotnet build -c "$configuration" -nologo -v q "$root/tools/Hyder.Ycsb/Hyder.Ycsb.csproj" >&2
  dotnet build -c "$configuration" -nologo -v q "$root/src/Hyder.Server.Host/Hyder.Server.Host.csproj" >&2
  [ "$floor" -eq 0 ] || dotnet build -c "$configuration" -nologo -v q "$root/benchmarks/Hyder.Benchmarks/Hyder.Benchmarks.csproj" >&2
fi
for dll in "$ycsb_dll" "$server_dll"; do
  [ -f "$dll" ] || die 2 "$dll is missing: pass --build (or run dotnet build -c $configuration)"
done
[ "$floor" -eq 0 ] || [ -f "$bench_dll" ] || die 2 "$bench_dll is missing: pass --build (or run dotnet build -c $configuration)"

work=$(mktemp -d)
server_pid="" client_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
cleanup() {
  [ -z "$client_pid" ] || kill "$client_pid" 2>/dev/null || true
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

workload=(--workload tx --reads 8 --writes 2 --isolation serializable --record-count "$records" --value-size 1024
  --threads 2 --in-flight 32 --warmup "$warmup" --duration "$duration")
ticks=$(getconf CLK_TCK)

cpu_seconds() { # cpu_seconds PID: user + system time so far
  awk -v t="$ticks" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

now() { date +%s.%N; }

committed() { # committed FILE: the run phase's committed tx/s from the YCSB summary
  grep -m1 -oE '^# Summary: [0-9,.]+' "$1" | grep -oE '[0-9,.]+$' | tr -d ,
}

wait_for() { # wait_for FILE PATTERN PID: until FILE holds PATTERN; fails if PID exits first
  until grep -qE "$2" "$1" 2>/dev/null; do
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
}

whole() { LC_ALL=C printf "%.0f" "$1"; }

percent() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 100 * a / b }'; }

echo "# connect-share: $rounds round(s); each run $warmup s warm-up, $duration s measured, $records records;" \
  "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

shares=() floor_shares=() embedded_tps=() floor_tps_all=() connect_tps=()
for round in $(seq 1 "$rounds"); do
  echo "connect-share: round $round of $rounds: embedded main job" >&2
  out="$work/embedded.out"
  dotnet "$ycsb_dll" run --load --target embedded "${workload[@]}" --final-meld-nice -10 >"$out" 2>&1 ||
    die 1 "the embedded run failed: $(tail -n 5 "$out")"
  embedded=$(committed "$out")
  embedded_cpu=$(grep -E '^\[HYDER\], CpuUs/Commit\(process\)' "$out" | tail -n 1 | cut -d, -f3 | tr -d ' ')
  [ -n "$embedded" ] || die 1 "the embedded run printed no summary: $(tail -n 5 "$out")"
  embedded_tps+=("$embedded")
  echo "round $round embedded: $(whole "$embedded") tx/s, ${embedded_cpu:-?} us CPU/commit"

  if [ "$floor" -eq 1 ]; then
    echo "connect-share: round $round of $rounds: the gRPC stack alone" >&2
    out="$work/floor.out"
    dotnet "$bench_dll" rpc-floor --rounds 1 --warmup "$warmup" --seconds "$duration" --work-us "$floor_work" >"$out" 2>&1 ||
      die 1 "the floor run failed: $(tail -n 5 "$out")"
    line=$(grep -m1 '^round 1 tcp:' "$out") || die 1 "the floor run printed no round: $(tail -n 5 "$out")"
    floor_tps=$(echo "$line" | grep -oE '[0-9.]+ tx/s' | cut -d' ' -f1)
    floor_share=$(percent "$floor_tps" "$embedded")
    floor_shares+=("$floor_share")
    floor_tps_all+=("$floor_tps")
    echo "round $round floor: ${line#round 1 tcp: }; $floor_share % of embedded"
  fi

  log="$work/server.log"
  dotnet "$server_dll" --embedded --listen http://127.0.0.1:0 >"$log" 2>&1 &
  server_pid=$!
  wait_for "$log" ' ready on http://' "$server_pid" || die 1 "hyder-server did not start: $(tail -n 5 "$log")"
  endpoint=$(grep -m1 -oE ' ready on http://[0-9.:]+' "$log" | cut -d' ' -f4)
  echo "connect-share: round $round of $rounds: --connect against hyder-server --embedded on $endpoint" >&2

  out="$work/connect.out"
  dotnet "$ycsb_dll" run --load --connect "$endpoint" "${workload[@]}" >"$out" 2>&1 &
  client_pid=$!
  # The run phase starts when the load is done; the CPU window lies inside its measured seconds
  # and ends before them (a second before, or halfway through one or two), while both processes run.
  wait_for "$out" '^\[LOAD\] done' "$client_pid" || die 1 "the --connect run failed: $(tail -n 5 "$out")"
  sleep "$warmup"
  s0=$(cpu_seconds "$server_pid") c0=$(cpu_seconds "$client_pid") t0=$(now)
  sleep "$(awk -v d="$duration" 'BEGIN { print (d > 2 ? d - 1 : d / 2) }')"
  s1=$(cpu_seconds "$server_pid") c1=$(cpu_seconds "$client_pid") t1=$(now)
  wait "$client_pid" || die 1 "the --connect run failed: $(tail -n 5 "$out")"
  client_pid=""
  stop_server
  connect=$(committed "$out")
  [ -n "$connect" ] || die 1 "the --connect run printed no summary: $(tail -n 5 "$out")"
  read -r server_us client_us share < <(awk -v s="$s1" -v s0="$s0" -v c="$c1" -v c0="$c0" -v t="$t1" -v t0="$t0" \
    -v r="$connect" -v e="$embedded" 'BEGIN { w = (t - t0) * r; printf "%.1f %.1f %.0f\n", 1e6 * (s - s0) / w, 1e6 * (c - c0) / w, 100 * r / e }')
  shares+=("$share")
  connect_tps+=("$connect")
  echo "round $round connect: $(whole "$connect") tx/s, server $server_us + client $client_us us CPU/tx; $share % of embedded"
done

mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.0f", s / NR }'; }
embedded_mean=$(mean "${embedded_tps[@]}") connect_mean=$(mean "${connect_tps[@]}")
if [ "$floor" -eq 1 ]; then
  floor_mean=$(mean "${floor_tps_all[@]}")
  echo "connect-share: connect $(percent "$connect_mean" "$embedded_mean") % of embedded, floor $(percent "$floor_mean" "$embedded_mean") %" \
    "(means of $rounds round(s): embedded $embedded_mean, floor $floor_mean, connect $connect_mean tx/s;" \
    "per round: connect ${shares[*]} %, floor ${floor_shares[*]} %)"
else
  echo "connect-share: connect $(percent "$connect_mean" "$embedded_mean") % of embedded" \
    "(means of $rounds round(s): embedded $embedded_mean, connect $connect_mean tx/s; per round: connect ${shares[*]} %)"
fi
