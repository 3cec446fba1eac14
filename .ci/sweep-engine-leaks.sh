#!/usr/bin/env bash
# Remove the overlay2 layers a stopped Docker engine no longer names, before it starts.
#
# Engine 28.5's BuildKit (the `docker` driver on the overlay2 graphdriver) leaks a layer it
# builds when the engine already holds the very same layer: after the rebuilt image is
# removed and the build cache emptied, the rebuild's copy stays in /var/lib/docker/overlay2,
# named by no image, container or build record (moby/moby#45939, #46136). imgkit's layers
# are reproducible, so every `--force` build, and every test namespace that builds the mini
# chain again, leaks one: this machine, which CI reuses run after run, had lost 27 GB to it
# in a day (220 layers), and a disk short of room makes the bundled stack's test empty
# BuildKit's whole cache (tests/test_docker_buildkit.py), so the next run builds the arm64
# layer under QEMU again. tests/test_docker_engine_sweep.py makes one and sweeps it.
#
# Only with the engine stopped (nothing is being built), only on the overlay2 graphdriver,
# and only a layer that none of these names: an image's layer or a container's (layerdb),
# BuildKit's or containerd's metadata (any mention at all), or the `lower` chain of one kept.
# Usage: sweep-engine-leaks.sh [--dry-run] [DOCKER_ROOT]  (default /var/lib/docker). Needs
# root. --dry-run lists what it would remove, the engine running or not.
set -euo pipefail
dry=""
[ "${1:-}" != "--dry-run" ] || { dry=1; shift; }
ROOT="${1:-/var/lib/docker}"
LAYERS="$ROOT/overlay2"
LAYERDB="$ROOT/image/overlay2/layerdb"
[ -d "$LAYERS" ] && [ -d "$LAYERDB" ] || exit 0
# the data-root of each running dockerd (--data-root, else daemon.json's, else the default)
running_roots() {
  local pid arg next root default=/var/lib/docker
  if [ -f /etc/docker/daemon.json ]; then
    default=$(python3 -c 'import json; print(json.load(open("/etc/docker/daemon.json")).get("data-root", "/var/lib/docker"))' 2>/dev/null || echo /var/lib/docker)
  fi
  for pid in $(pgrep -x dockerd || true); do
    root=$default next=""
    while IFS= read -r -d '' arg; do
      if [ -n "$next" ]; then root=$arg; next=""; fi
      case "$arg" in --data-root) next=1 ;; --data-root=*) root=${arg#--data-root=} ;; esac
    done < "/proc/$pid/cmdline"
    realpath -m "$root"
  done
}
# read whole before grep: under pipefail, `grep -q` ending the pipe early would make the
# pipeline fail, and an engine running on ROOT pass for none (it did: the test caught it)
roots=$(running_roots)
if [ -z "$dry" ] && grep -qxF "$(realpath -m "$ROOT")" <<< "$roots"; then
  echo "sweep-engine-leaks: an engine is running on $ROOT: nothing swept"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# what images and containers use
for f in "$LAYERDB"/sha256/*/cache-id "$LAYERDB"/mounts/*/mount-id "$LAYERDB"/mounts/*/init-id; do
  if [ -f "$f" ]; then cat "$f"; echo; fi
done | sed 's/-init$//' | sort -u > "$work/named"
find "$LAYERS" -mindepth 1 -maxdepth 1 -type d ! -name l -printf '%f\n' | sed 's/-init$//' |
  sort -u > "$work/all"
comm -13 "$work/named" "$work/all" > "$work/candidates"
# what BuildKit's and containerd's metadata mention, however (bolt keeps the ids as text)
find "$ROOT/buildkit" "$ROOT/containerd" -type f -print0 2>/dev/null |
  xargs -0 -r grep -a -o -h -F -f "$work/candidates" 2>/dev/null | sort -u > "$work/mentioned" || true
comm -23 "$work/candidates" "$work/mentioned" > "$work/unnamed"
# every layer a kept one stands on (its `lower`: l/LINK entries, LINK -> ../DIR/diff)
comm -23 "$work/all" "$work/unnamed" | while read -r dir; do
  for d in "$dir" "$dir-init"; do
    if [ -f "$LAYERS/$d/lower" ]; then tr ':' '\n' < "$LAYERS/$d/lower"; echo; fi
  done
done | sed 's#^l/##' | sort -u | while read -r link; do
  if target=$(readlink "$LAYERS/l/$link" 2>/dev/null); then basename "$(dirname "$target")"; fi
done | sort -u > "$work/below"
comm -23 "$work/unnamed" "$work/below" > "$work/leaked"

count=$(wc -l < "$work/leaked")
[ "$count" -gt 0 ] || { echo "sweep-engine-leaks: nothing leaked"; exit 0; }
kb=$(cd "$LAYERS" && xargs -r du -sc < "$work/leaked" | tail -1 | cut -f1)
if [ -n "$dry" ]; then
  cat "$work/leaked"; echo "sweep-engine-leaks: would remove $count layers ($((kb / 1024)) MB)"; exit 0
fi
while read -r dir; do
  link=$(cat "$LAYERS/$dir/link" 2>/dev/null || true)
  [ -z "$link" ] || rm -f "$LAYERS/l/$link"
  rm -rf "${LAYERS:?}/$dir" "${LAYERS:?}/$dir-init"
done < "$work/leaked"
echo "sweep-engine-leaks: removed $count layers no image, container or build record named ($((kb / 1024)) MB)"
