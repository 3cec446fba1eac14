#!/usr/bin/env bash
# Engine benchmark: the CUDA 11.8 slice built cold by BuildKit (`imgkit build --force`, its
# build cache emptied first, the Debian base kept) on two Docker engines, one at a time,
# in the order given (alternate them: these machines drift). Each engine is an unpacked
# Debian engine (.ci/unpack-engine.sh DEST) with a data root of its own; the engine running
# on the default socket is stopped for the run and started again at the end. Prints seconds
# per build. Needs root, the base image (`make build` made it), about 25 GB per data root.
#
#   OLD=/opt/imgkit-engine-26 OLD_DATA=/var/lib/docker-26 bash bench/engine_versions.sh old new new old
#
# OLD/NEW: the engines' roots (NEW defaults to /opt/imgkit-engine, `make host`'s; OLD to
# Debian 13's 26 unpacked by hand: see docs/benchmarks.md); *_DATA: their data roots.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A ROOT=([old]=${OLD:-/opt/imgkit-engine-26} [new]=${NEW:-/opt/imgkit-engine})
declare -A DATA=([old]=${OLD_DATA:-/var/lib/docker-26} [new]=${NEW_DATA:-/var/lib/docker})
PLUGIN="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins/docker-buildx"
base=$(mktemp -d)
docker save imgkit/debian:bookworm -o "$base/base.tar"

stop() {
  local pid
  pid=$(pgrep -x dockerd || true)
  [ -z "$pid" ] && return
  kill $pid
  while pgrep -x dockerd >/dev/null; do sleep 0.5; done
}
start() {
  local root=${ROOT[$1]}
  ln -sf "$root/usr/libexec/docker/cli-plugins/docker-buildx" "$PLUGIN"
  sh -c "PATH=$root/usr/sbin:$root/usr/bin:\$PATH nohup $root/usr/sbin/dockerd --data-root ${DATA[$1]} >>/var/log/imgkit-dockerd.log 2>&1 &"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker image inspect imgkit/debian:bookworm >/dev/null 2>&1 || docker load -i "$base/base.tar" >/dev/null
}
trap 'stop; start new; rm -rf "$base"' EXIT

for engine in "$@"; do
  stop
  start "$engine"
  docker buildx prune -af >/dev/null 2>&1
  sync
  started=$(date +%s.%N)
  .venv/bin/imgkit build --cuda 11.8 --force >"$base/build.log" 2>&1 || { cat "$base/build.log"; exit 1; }
  ended=$(date +%s.%N)
  printf 'engine %s, buildx %s: %.1f s\n' "$(docker version --format '{{.Server.Version}}')" \
    "$(docker buildx version | cut -d' ' -f2)" "$(echo "$ended - $started" | bc)"
done
