#!/usr/bin/env bash
# Make this machine able to build: Docker engine (Debian's docker.io), debootstrap (for the
# base image when no registry is reachable) and a running dockerd. That is all `make build`
# needs; the test tools come with `make test` (.ci/setup-test-tools.sh).
# Idempotent: does nothing that is already done. Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-host: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  echo "setup-host: starting dockerd"
  $SUDO sh -c 'nohup dockerd >/var/log/imgkit-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "setup-host: dockerd did not start:"; tail -20 /var/log/imgkit-dockerd.log; exit 1; }
fi
echo "setup-host: Docker engine $(docker info --format '{{.ServerVersion}}') is running"
