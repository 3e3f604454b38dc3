#!/usr/bin/env bash
# Removes what install.sh installed: units (disabled and stopped first), /opt/hyder. Keeps the
# configuration in /etc/hyder, the data in /var/lib/hyder and the hyder user unless --purge.
#
#   sudo deploy/linux/uninstall.sh            keep configuration and data
#   sudo deploy/linux/uninstall.sh --purge    delete them too, and the hyder user
set -euo pipefail

prefix=""
dry_run=0
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2%/}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --purge) purge=1; shift ;;
    -h|--help) echo "usage: uninstall.sh [--prefix DIR] [--dry-run] [--purge]"; exit 0 ;;
    *) echo "uninstall.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

run() {
  echo "+ $*"
  if [ "$dry_run" -eq 0 ]; then "$@"; fi
}

units_dir="$prefix/etc/systemd/system"
units=()
for unit in "$units_dir"/hyder-*.service; do
  [ -e "$unit" ] && units+=("$(basename "$unit")")
done

if [ -z "$prefix" ] && [ -d /run/systemd/system ] && [ ${#units[@]} -gt 0 ]; then
  # Instances of the templates are running units too: stop every hyder unit by pattern.
  run systemctl stop 'hyder-*.service' || true
  run systemctl disable "${units[@]}" || true
fi

for unit in "${units[@]}"; do
  run rm -f "$units_dir/$unit"
done
if [ -z "$prefix" ] && [ -d /run/systemd/system ]; then
  run systemctl daemon-reload
fi
run rm -rf "$prefix/opt/hyder"

if [ "$purge" -eq 1 ]; then
  run rm -rf "$prefix/etc/hyder" "$prefix/var/lib/hyder"
  if [ -z "$prefix" ] && getent passwd hyder >/dev/null; then
    run userdel hyder
  fi
else
  echo "  (kept $prefix/etc/hyder and $prefix/var/lib/hyder; --purge deletes them)"
fi
