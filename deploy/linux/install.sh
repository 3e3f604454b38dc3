#!/usr/bin/env bash
# Installs Hyder as systemd services: framework-dependent builds in /opt/hyder, configuration in
# /etc/hyder (from the samples, never over an existing file), the hyder user, data directories
# with mode 0700, and the unit files; enables the chosen units when systemd is running.
#
#   sudo deploy/linux/install.sh                       build, install, enable hyder-server.service
#   deploy/linux/install.sh --prefix /tmp/root --no-publish   into a staging root (tests)
#   deploy/linux/install.sh --dry-run                  print every step, change nothing
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
prefix=""
dry_run=0
publish=1
configuration=Release
dotnet_path=""
enable_units="hyder-server.service"
log_units="1"

usage() {
  cat <<USAGE
usage: install.sh [--prefix DIR] [--dry-run] [--no-publish] [--configuration C]
                  [--dotnet PATH] [--enable "UNIT..."] [--log-units "NAME..."]
  --prefix DIR       install under DIR instead of / (no user is created, nothing is enabled)
  --dry-run          print what would be done and change nothing
  --no-publish       skip dotnet publish (/opt/hyder/{server,log} are filled by other means)
  --configuration C  build configuration to publish (default Release)
  --dotnet PATH      the dotnet the units run (default: the one on PATH, resolved)
  --enable "UNITS"   units to enable (default hyder-server.service; "" for none)
  --log-units "NAMES" log unit instances whose /etc/hyder/log-unit-NAME.env to write (default 1)
USAGE
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2%/}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --no-publish) publish=0; shift ;;
    --configuration) configuration="$2"; shift 2 ;;
    --dotnet) dotnet_path="$2"; shift 2 ;;
    --enable) enable_units="$2"; shift 2 ;;
    --log-units) log_units="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

# Every change goes through run: printed always, executed unless --dry-run.
run() {
  echo "+ $*"
  if [ "$dry_run" -eq 0 ]; then "$@"; fi
}

if [ -z "$dotnet_path" ]; then
  dotnet_path="$(readlink -f "$(command -v dotnet || echo /usr/bin/dotnet)")"
fi

opt="$prefix/opt/hyder"
etc="$prefix/etc/hyder"
var="$prefix/var/lib/hyder"
units="$prefix/etc/systemd/system"
owner=""
if [ -z "$prefix" ]; then owner="hyder"; fi

# 1. Builds: framework-dependent, so the machine's .NET runtime serves them.
if [ "$publish" -eq 1 ]; then
  run dotnet publish "$repo/src/Hyder.Server.Host/Hyder.Server.Host.csproj" -c "$configuration" --no-self-contained -o "$opt/server"
  run dotnet publish "$repo/src/Hyder.Log.Host/Hyder.Log.Host.csproj" -c "$configuration" --no-self-contained -o "$opt/log"
else
  echo "  (--no-publish: $opt/server and $opt/log are not built)"
fi
run install -d -m 0755 "$opt/share/samples"
run install -m 0644 "$here/README.md" "$opt/share/README.md"
for sample in "$here"/*.sample.json "$here"/*.sample.env; do
  run install -m 0644 "$sample" "$opt/share/samples/"
done

# 2. The service user: a system account with no login and no home of its own.
if [ -n "$owner" ]; then
  if getent passwd hyder >/dev/null; then
    echo "  (user hyder exists)"
  else
    run useradd --system --user-group --home-dir /var/lib/hyder --no-create-home --shell /usr/sbin/nologin hyder
  fi
else
  echo "  (--prefix: would create the system user hyder; files stay owned by $(id -un))"
fi

# 3. Configuration: readable by the service, writable by root; an existing file is kept.
config() {
  local sample="$1" target="$2"
  if [ -e "$target" ]; then
    echo "  (keeping $target)"
    return
  fi
  run install -m 0640 "$sample" "$target"
  if [ -n "$owner" ]; then run chown root:hyder "$target"; fi
}
run install -d -m 0750 "$etc"
if [ -n "$owner" ]; then run chown root:hyder "$etc"; fi
config "$here/server.sample.json" "$etc/server.json"
config "$here/projection.sample.env" "$etc/projection.env"
config "$here/sequencer.sample.env" "$etc/sequencer.env"
for name in $log_units; do
  config "$here/log-unit.sample.env" "$etc/log-unit-$name.env"
done

# 4. Data directories, 0700 and the service's own (systemd's StateDirectory= keeps them so).
data_dirs=("$var" "$var/server" "$var/projection")
for name in $log_units; do data_dirs+=("$var/log-unit-$name"); done
for dir in "${data_dirs[@]}"; do
  run install -d -m 0700 "$dir"
  if [ -n "$owner" ]; then run chown hyder:hyder "$dir"; fi
done

# 5. Units, pointing at this machine's dotnet.
run install -d -m 0755 "$units"
for unit in "$here"/*.service; do
  target="$units/$(basename "$unit")"
  echo "+ sed 's#/usr/bin/dotnet #$dotnet_path #' $unit > $target"
  if [ "$dry_run" -eq 0 ]; then
    sed "s#/usr/bin/dotnet #$dotnet_path #" "$unit" > "$target"
    chmod 0644 "$target"
  fi
done

# 6. Enable: only on the real root with systemd running; otherwise say what would run.
if [ -z "$prefix" ] && [ -d /run/systemd/system ]; then
  run systemctl daemon-reload
  if [ -n "$enable_units" ]; then
    # shellcheck disable=SC2086
    run systemctl enable $enable_units
  fi
else
  echo "  (systemd is not running here or --prefix is set; on the target run:"
  echo "     systemctl daemon-reload${enable_units:+ && systemctl enable --now $enable_units})"
fi
echo "installed: binaries $opt, configuration $etc, data $var, units $units"
