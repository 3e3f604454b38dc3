#!/usr/bin/env bash
# A whole Hyder cluster of real processes on one machine, on 127.0.0.1: the projection store, the
# sequencer, N log units (chains of R replicas) and M transaction servers with intention broadcast.
# Same binaries and the same kind of command lines as the systemd units in deploy/linux.
#
#   deploy/local-cluster.sh start  [--dir D] [--units N] [--servers M] [--replicas R] [--base-port P] [--build]
#   deploy/local-cluster.sh status [--dir D]
#   deploy/local-cluster.sh stop   [--dir D] [--timeout S]
#   deploy/local-cluster.sh kill NAME [--dir D] [--signal SIG]     (fault injection; `start` restarts it)
#
# deploy/README.md describes the layout, the ports and the exit codes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log_dll="$root/src/Hyder.Log.Host/bin/Release/net10.0/Hyder.Log.Host.dll"
server_dll="$root/src/Hyder.Server.Host/bin/Release/net10.0/hyder-server.dll"

usage() {
  sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() { # die CODE MESSAGE
  echo "local-cluster: $2" >&2
  exit "$1"
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
command="$1"
shift
case "$command" in
  start | stop | status | kill) ;;
  -h | --help | help) usage; exit 0 ;;
  *) usage >&2; die 2 "unknown command '$command' (start, stop, status or kill)" ;;
esac

dir="./local-cluster"
units=""
servers=""
replicas=""
base_port=""
build=0
timeout=20
signal=KILL
target=""
if [ "$command" = kill ]; then
  if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then die 2 "kill needs a process name (see status)"; fi
  target="$1"
  shift
fi

number() { # number OPTION VALUE MIN MAX
  if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then die 2 "$1 '$2' is not a whole number in $3..$4"; fi
}

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] || die 2 "--dir needs a value"; dir="$2"; shift 2 ;;
    --units) [ $# -ge 2 ] || die 2 "--units needs a value"; number --units "$2" 1 40; units="$2"; shift 2 ;;
    --servers) [ $# -ge 2 ] || die 2 "--servers needs a value"; number --servers "$2" 1 30; servers="$2"; shift 2 ;;
    --replicas) [ $# -ge 2 ] || die 2 "--replicas needs a value"; number --replicas "$2" 1 8; replicas="$2"; shift 2 ;;
    --base-port) [ $# -ge 2 ] || die 2 "--base-port needs a value"; number --base-port "$2" 1024 65400; base_port="$2"; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die 2 "--timeout needs a value"; number --timeout "$2" 1 600; timeout="$2"; shift 2 ;;
    --signal) [ $# -ge 2 ] || die 2 "--signal needs a value"; signal="$2"; shift 2 ;;
    --build) build=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die 2 "unknown option '$1' for $command" ;;
  esac
done

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
config="$dir/cluster.env"

# The cluster's shape is fixed by its first start (the projection names the units' ports); a
# later start reads it back and refuses a different one.
if [ -f "$config" ]; then
  # shellcheck disable=SC1090
  source "$config"
  for pair in "units:$units:$UNITS" "servers:$servers:$SERVERS" "replicas:$replicas:$REPLICAS" "base-port:$base_port:$BASE_PORT"; do
    IFS=: read -r name given stored <<<"$pair"
    [ -z "$given" ] || [ "$given" = "$stored" ] || die 2 "$dir holds a cluster with --$name $stored; stop it and use another --dir for --$name $given"
  done
elif [ "$command" = start ]; then
  UNITS="${units:-2}"
  SERVERS="${servers:-2}"
  REPLICAS="${replicas:-$([ "$UNITS" -ge 2 ] && echo 2 || echo 1)}"
  BASE_PORT="${base_port:-7500}"
  [ $((UNITS % REPLICAS)) -eq 0 ] || die 2 "--units $UNITS is not a multiple of --replicas $REPLICAS (each chain holds R units)"
  # A port in the kernel's ephemeral range may be taken at any time as the source port of some
  # outgoing connection (a restarted process then cannot bind it again): say so, start anyway.
  if read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [ $((BASE_PORT + 100)) -gt "$ephemeral" ]; then
    echo "warning: ports $BASE_PORT..$((BASE_PORT + 99)) reach the ephemeral range (from $ephemeral), where outgoing connections may take them; a --base-port below $((ephemeral - 100)) avoids that" >&2
  fi
  printf 'UNITS=%s\nSERVERS=%s\nREPLICAS=%s\nBASE_PORT=%s\n' "$UNITS" "$SERVERS" "$REPLICAS" "$BASE_PORT" >"$config"
else
  # stop and status on a directory that never held a cluster: nothing runs there.
  [ "$command" = status ] && { echo "no cluster in $dir"; exit 3; }
  [ "$command" = kill ] && die 1 "no cluster in $dir"
  exit 0
fi

# Ports: projection P, sequencer P+1, unit i P+10+i, server i gRPC P+50+i and broadcast P+80+i.
projection_port=$BASE_PORT
sequencer_port=$((BASE_PORT + 1))
unit_port() { echo $((BASE_PORT + 9 + $1)); }
server_port() { echo $((BASE_PORT + 49 + $1)); }
broadcast_port() { echo $((BASE_PORT + 79 + $1)); }

names() {
  echo projection
  for i in $(seq 1 "$UNITS"); do echo "unit-$i"; done
  echo sequencer
  for i in $(seq 1 "$SERVERS"); do echo "server-$i"; done
}

endpoint() {
  case "$1" in
    projection) echo "127.0.0.1:$projection_port" ;;
    sequencer) echo "127.0.0.1:$sequencer_port" ;;
    unit-*) echo "127.0.0.1:$(unit_port "${1#unit-}")" ;;
    server-*) echo "http://127.0.0.1:$(server_port "${1#server-}")" ;;
  esac
}

port_of() { local e; e="$(endpoint "$1")"; echo "${e##*:}"; }

# The pid in NAME.pid, if that process is alive and is one of ours (a reused pid is not).
running_pid() {
  local file="$dir/pids/$1.pid" pid
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) "
  [[ "$cmd" == *" $dir/data/$1 "* || ("$cmd" == *" --server-id $1 "* && "$cmd" == *" $dir/server.json "*) ]] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

command_line() { # the process's command line, one word per line
  local name="$1" i
  case "$name" in
    projection)
      printf '%s\n' dotnet "$log_dll" --role projection --data "$dir/data/projection" --listen 127.0.0.1 --port "$projection_port" --log-format simple --cluster-allow-plaintext ;;
    sequencer)
      # The sequencer keeps no data; the marker argument lets stop/status recognise it.
      printf '%s\n' dotnet "$log_dll" --role sequencer --projection-store "tcp:127.0.0.1:$projection_port" --listen 127.0.0.1 --port "$sequencer_port" --log-format simple --cluster-allow-plaintext --data "$dir/data/sequencer" ;;
    unit-*)
      printf '%s\n' dotnet "$log_dll" --role unit --data "$dir/data/$name" --listen 127.0.0.1 --port "$(port_of "$name")" --log-format simple --cluster-allow-plaintext ;;
    server-*)
      i="${name#server-}"
      printf '%s\n' dotnet "$server_dll" --log "tcp:127.0.0.1:$projection_port" --server-id "$name" --listen "http://127.0.0.1:$(server_port "$i")" \
        --broadcast-listen "127.0.0.1:$(broadcast_port "$i")" --cluster-id "local-$BASE_PORT" --spin yield --log-format simple --cluster-allow-plaintext
      for p in $(seq 1 "$SERVERS"); do
        [ "$p" = "$i" ] || printf '%s\n' --peer "127.0.0.1:$(broadcast_port "$p")"
      done
      # Where this server belongs: stop/status match it by this marker.
      printf '%s\n' --config "$dir/server.json" ;;
  esac
}

ready_pattern() {
  case "$1" in
    server-*) echo "^hyder-server $1 ready on " ;;
    *) echo "Log host ready on port" ;;
  esac
}

launch() { # launch NAME: start it in its own session, output to logs/NAME.log
  local name="$1" args=()
  mapfile -t args < <(command_line "$name")
  mkdir -p "$dir/logs" "$dir/pids"
  case "$name" in projection | unit-* | sequencer) mkdir -p "$dir/data/$name" ;; esac
  ! port_open "$(port_of "$name")" || die 3 "port $(port_of "$name") for $name is in use by another process (choose another --base-port)"
  echo "--- $(date -u +%FT%TZ) start: ${args[*]}" >>"$dir/logs/$name.log"
  DOTNET_EnableDiagnostics=0 setsid "${args[@]}" </dev/null >>"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name.pid"
}

await_ready() { # await_ready NAME: its ready line after the last start, and its port open
  local name="$1" pattern deadline pid
  pattern="$(ready_pattern "$name")"
  deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    # Just launched, its pid may still be the shell's fork before exec: alive is enough here.
    pid="$(cat "$dir/pids/$name.pid")"
    if [ ! -e "/proc/$pid" ] || [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ]; then
      echo "local-cluster: $name exited while starting; the end of $dir/logs/$name.log:" >&2
      tail -n 20 "$dir/logs/$name.log" >&2
      return 1
    fi
    if awk '/^--- .* start: /{found=0} $0 ~ p {found=1} END{exit !found}' p="$pattern" "$dir/logs/$name.log" && port_open "$(port_of "$name")"; then
      return 0
    fi
    sleep 0.2
  done
  echo "local-cluster: $name was not ready within 60 s; the end of $dir/logs/$name.log:" >&2
  tail -n 20 "$dir/logs/$name.log" >&2
  return 1
}

stop_all() {
  local name pid pids=() waited=0
  for name in $(names | tac); do
    if pid="$(running_pid "$name")"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$name:$pid")
    fi
  done
  for entry in "${pids[@]}"; do
    name="${entry%%:*}"
    pid="${entry#*:}"
    while running_pid "$name" >/dev/null && [ $waited -lt $((timeout * 10)) ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if running_pid "$name" >/dev/null; then
      echo "local-cluster: $name (pid $pid) did not stop within ${timeout} s of SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for entry in "${pids[@]}"; do
    pid="${entry#*:}"
    while [ -e "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; do sleep 0.05; done
    echo "stopped ${entry%%:*} (pid $pid)"
  done
  rm -f "$dir"/pids/*.pid
}

print_endpoints() {
  local name pid
  for name in $(names); do
    if pid="$(running_pid "$name")"; then
      printf '%-12s %-8s pid %-8s %s\n' "$name" running "$pid" "$(endpoint "$name")"
    else
      printf '%-12s %-8s %-12s %s\n' "$name" stopped "" "$(endpoint "$name")"
    fi
  done
}

case "$command" in
  stop)
    stop_all
    exit 0
    ;;
  kill)
    names | grep -x -- "$target" >/dev/null || die 2 "no process '$target' in this cluster ($(names | tr '\n' ' '))"
    pid="$(running_pid "$target")" || die 1 "$target is not running"
    kill "-$signal" "$pid" || die 2 "could not send SIG$signal to $target (pid $pid)"
    echo "sent SIG$signal to $target (pid $pid)"
    exit 0
    ;;
  status)
    print_endpoints
    down=0
    for name in $(names); do
      if ! running_pid "$name" >/dev/null || ! port_open "$(port_of "$name")"; then down=$((down + 1)); fi
    done
    [ $down -eq 0 ] && exit 0
    [ $down -eq "$(names | wc -l)" ] && exit 3
    exit 1
    ;;
esac

# start
if [ $build -eq 1 ]; then
  dotnet build -c Release -nologo -v q "$root/src/Hyder.Log.Host/Hyder.Log.Host.csproj" >&2
  dotnet build -c Release -nologo -v q "$root/src/Hyder.Server.Host/Hyder.Server.Host.csproj" >&2
fi
[ -f "$log_dll" ] || die 2 "$log_dll is missing: pass --build (or run dotnet build -c Release)"
[ -f "$server_dll" ] || die 2 "$server_dll is missing: pass --build (or run dotnet build -c Release)"

# The servers' --config marker file: an empty JSON object (the command line says everything).
[ -f "$dir/server.json" ] || echo '{}' >"$dir/server.json"

# A failed start leaves nothing running, not even the processes that were already up.
on_exit() {
  local code=$?
  if [ $code -ne 0 ]; then
    echo "local-cluster: start failed; stopping the cluster" >&2
    stop_all >&2
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

start_if_down() {
  running_pid "$1" >/dev/null && return 0
  launch "$1"
  await_ready "$1"
}

start_if_down projection
for i in $(seq 1 "$UNITS"); do running_pid "unit-$i" >/dev/null || launch "unit-$i"; done
for i in $(seq 1 "$UNITS"); do await_ready "unit-$i"; done
start_if_down sequencer

if [ ! -f "$dir/bootstrapped" ]; then
  chains=()
  for c in $(seq 0 $((UNITS / REPLICAS - 1))); do
    chain=""
    for r in $(seq 1 "$REPLICAS"); do
      chain+="${chain:+,}127.0.0.1:$(unit_port $((c * REPLICAS + r)))"
    done
    chains+=(--chain "$chain")
  done
  dotnet "$log_dll" admin --cluster-allow-plaintext --projection-store "tcp:127.0.0.1:$projection_port" bootstrap --sequencer "127.0.0.1:$sequencer_port" "${chains[@]}" >"$dir/logs/bootstrap.json"
  touch "$dir/bootstrapped"
fi

for i in $(seq 1 "$SERVERS"); do running_pid "server-$i" >/dev/null || launch "server-$i"; done
for i in $(seq 1 "$SERVERS"); do await_ready "server-$i"; done

trap - EXIT
print_endpoints
for i in $(seq 1 "$SERVERS"); do
  echo "connection server-$i: Endpoint=$(endpoint "server-$i")"
done
