#!/usr/bin/env bash
# Make this machine able to build: a running Docker engine with BuildKit (engine 23 or later
# and the buildx plugin, so `imgkit build` bakes by default), mmdebstrap and debootstrap (the
# base image when no registry is reachable: mmdebstrap makes Debian's, debootstrap Ubuntu's).
# That is all `make build` needs; the test tools come with `make test`
# (.ci/setup-test-tools.sh).
#
# Which engine:
# - one already running is used as it is (imgkit's legacy builder builds where it lacks
#   BuildKit, and says so);
# - where the distribution's docker.io is 23 or later (Debian 13, Ubuntu 24.04), apt
#   installs it with docker-buildx;
# - Debian 12's is 20.10, whose BuildKit cannot build named contexts without pulling a
#   frontend image: there .ci/unpack-engine.sh unpacks a newer engine, its CLI, containerd
#   and buildx into /opt/imgkit-engine (Debian testing's 28.5, else Debian 13's 26), run
#   with Debian 12's runc on the default socket. The newer the better: engines 26.0 to 27.1
#   make every pip step wait while BuildKit checksums its parent (docs/building.md). Its CLI
#   is linked from /usr/local/bin where there is no docker CLI, buildx from the user's
#   Docker config (~/.docker/cli-plugins).
# Idempotent: does nothing that is already done. Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
ENGINE=/opt/imgkit-engine
LOG=/var/log/imgkit-dockerd.log
PLUGINS="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"

major() { sed -E 's/^([0-9]+:)?([0-9]+).*/\2/'; }     # 5:26.1.5-1 -> 26, 20.10.24 -> 20

apt_updated=""
apt_install() {
  [ -n "$apt_updated" ] || { $SUDO apt-get update -q; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$@"
}

# the tools that make a base image, those not installed added to `missing`
base_tools_missing() {
  for tool in mmdebstrap debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  # mmdebstrap's Recommends: without it, no root of another architecture (arm64 under QEMU)
  command -v arch-test >/dev/null 2>&1 || missing+=(arch-test)
}

if ! docker info >/dev/null 2>&1; then
  missing=()
  base_tools_missing
  if [ ! -x "$ENGINE/usr/sbin/dockerd" ] &&
     ! { command -v dockerd >/dev/null 2>&1 && [ "$(dockerd --version | cut -d' ' -f3 | major)" -ge 23 ]; }; then
    [ -n "$apt_updated" ] || { $SUDO apt-get update -q; apt_updated=1; }
    candidate=$(apt-cache policy docker.io | awk '/Candidate:/ {print $2}')
    if [ "$candidate" != "(none)" ] && [ -n "$candidate" ] && [ "$(echo "$candidate" | major)" -ge 23 ]; then
      missing+=(docker.io docker-buildx)
    else
      missing+=(runc iptables)
      bash "$(dirname "$0")/unpack-engine.sh" "$ENGINE"
    fi
  fi
  [ "${#missing[@]}" -eq 0 ] || { echo "setup-host: installing ${missing[*]}"; apt_install "${missing[@]}"; }

  if [ -x "$ENGINE/usr/sbin/dockerd" ]; then
    # its CLI where there is none (a docker CLI already here is kept: any since 20.10 speaks to it)
    command -v docker >/dev/null 2>&1 || $SUDO ln -sf "$ENGINE/usr/bin/docker" /usr/local/bin/docker
    mkdir -p "$PLUGINS"
    ln -sf "$ENGINE/usr/libexec/docker/cli-plugins/docker-buildx" "$PLUGINS/docker-buildx"
    dockerd="$ENGINE/usr/sbin/dockerd"
    path="$ENGINE/usr/sbin:$ENGINE/usr/bin"          # its containerd, shims and docker-proxy
  else
    dockerd=$(command -v dockerd)
    path="$(dirname "$dockerd")"
  fi
  echo "setup-host: starting dockerd $("$dockerd" --version | cut -d' ' -f3 | tr -d ,)"
  $SUDO sh -c "PATH=$path:\$PATH nohup $dockerd >$LOG 2>&1 &"
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "setup-host: dockerd did not start:"; tail -20 "$LOG"; exit 1; }
else
  missing=()
  base_tools_missing
  [ "${#missing[@]}" -eq 0 ] || { echo "setup-host: installing ${missing[*]}"; apt_install "${missing[@]}"; }
fi

version=$(docker info --format '{{.ServerVersion}}')
if buildx=$(docker buildx version 2>/dev/null) && [ "$(echo "$version" | major)" -ge 23 ]; then
  echo "setup-host: Docker engine $version with buildx $(echo "$buildx" | cut -d' ' -f2) is running"
else
  echo "setup-host: Docker engine $version is running, without BuildKit that can build named" \
       "contexts (engine 23 or later and the buildx plugin): imgkit builds with the legacy builder"
fi
