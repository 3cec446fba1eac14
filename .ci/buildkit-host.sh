#!/usr/bin/env bash
# A second Docker engine with BuildKit, beside the host's Debian 12 engine (20.10, whose
# embedded BuildKit cannot run named contexts without pulling a frontend image, and nothing
# can be pulled here): Debian 13's dockerd 26 and containerd 1.7 extracted from their .debs
# (they need glibc >= 2.34; Debian 12 has 2.36), Debian 12's own runc (Debian 13's needs
# glibc 2.38), and Debian 13's docker-buildx as a CLI plugin in a config dir of its own, so
# the host's `docker build` keeps its legacy builder.
#
# Everything of its own: socket, data-root, exec-root, pidfile, containerd namespaces, and a
# bridge with its own NAT rule (--iptables=false: its chains would fight the first engine's;
# never --bridge none, which deletes the first engine's docker0).
#
# Idempotent. Prints the environment that reaches it:
#   DOCKER_HOST=unix:///run/imgkit-buildkit/docker.sock DOCKER_CONFIG=/opt/imgkit-buildkit/config
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

ROOT=/opt/imgkit-buildkit
RUN=/run/imgkit-buildkit
SOCKET="unix://$RUN/docker.sock"
BRIDGE=imgkit-bk0
SUBNET=172.31.250.0/24
GATEWAY=172.31.250.1/24
export DOCKER_HOST="$SOCKET" DOCKER_CONFIG="$ROOT/config"

if [ ! -x "$ROOT/usr/sbin/dockerd" ] || [ ! -x "$ROOT/config/cli-plugins/docker-buildx" ]; then
  echo "buildkit-host: fetching docker.io, containerd and docker-buildx from Debian 13 (trixie)"
  trixie=$(mktemp -d)
  bash "$(dirname "$0")/trixie-debs.sh" "$trixie" docker.io containerd docker-buildx
  $SUDO mkdir -p "$ROOT/config/cli-plugins"
  for deb in "$trixie"/docker.io_*.deb "$trixie"/containerd_*.deb "$trixie"/docker-buildx_*.deb; do
    $SUDO dpkg -x "$deb" "$ROOT"
  done
  $SUDO ln -sf "$ROOT/usr/libexec/docker/cli-plugins/docker-buildx" "$ROOT/config/cli-plugins/docker-buildx"
  $SUDO rm -rf "$trixie"
fi

if ! docker info >/dev/null 2>&1; then
  echo "buildkit-host: starting dockerd $("$ROOT/usr/sbin/dockerd" --version | cut -d' ' -f3 | tr -d ,) on $SOCKET"
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    $SUDO ip link add "$BRIDGE" type bridge
    $SUDO ip addr add "$GATEWAY" dev "$BRIDGE"
  fi
  $SUDO ip link set "$BRIDGE" up
  # what --iptables would have added for this bridge alone: NAT out, forwarding both ways
  $SUDO iptables -t nat -C POSTROUTING -s "$SUBNET" ! -o "$BRIDGE" -j MASQUERADE 2>/dev/null ||
    $SUDO iptables -t nat -A POSTROUTING -s "$SUBNET" ! -o "$BRIDGE" -j MASQUERADE
  $SUDO iptables -C FORWARD -i "$BRIDGE" -j ACCEPT 2>/dev/null ||
    $SUDO iptables -I FORWARD -i "$BRIDGE" -j ACCEPT
  $SUDO iptables -C FORWARD -o "$BRIDGE" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT 2>/dev/null ||
    $SUDO iptables -I FORWARD -o "$BRIDGE" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  $SUDO sysctl -qw net.ipv4.ip_forward=1
  $SUDO mkdir -p "$RUN" /var/lib/imgkit-buildkit
  # its own containerd: dockerd 26 would otherwise share the first engine's (and its version)
  $SUDO sh -c "PATH=$ROOT/usr/bin:\$PATH nohup $ROOT/usr/bin/containerd \
      --address $RUN/containerd.sock --root /var/lib/imgkit-buildkit/containerd \
      --state $RUN/containerd >/var/log/imgkit-buildkit-containerd.log 2>&1 &"
  for _ in $(seq 1 30); do [ -S "$RUN/containerd.sock" ] && break; sleep 1; done
  $SUDO sh -c "PATH=$ROOT/usr/sbin:$ROOT/usr/bin:\$PATH nohup $ROOT/usr/sbin/dockerd \
      --host $SOCKET --containerd $RUN/containerd.sock \
      --data-root /var/lib/imgkit-buildkit/docker --exec-root $RUN/exec \
      --pidfile $RUN/dockerd.pid --containerd-namespace imgkit-bk \
      --containerd-plugins-namespace imgkit-bk-plugins --bridge $BRIDGE --iptables=false \
      --ip-masq=false >/var/log/imgkit-buildkit-dockerd.log 2>&1 &"
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 ||
    { echo "buildkit-host: dockerd did not start:"; tail -20 /var/log/imgkit-buildkit-dockerd.log; exit 1; }
fi
echo "buildkit-host: Docker engine $(docker info --format '{{.ServerVersion}}') with buildx $(docker buildx version | cut -d' ' -f2) is running"
echo "buildkit-host: DOCKER_HOST=$SOCKET DOCKER_CONFIG=$DOCKER_CONFIG"
