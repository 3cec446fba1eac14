#!/usr/bin/env bash
# Make this machine able to build and test: Docker engine (Debian's docker.io), debootstrap
# (for the base image when no registry is reachable), QEMU's user-mode emulation (arm64
# images on an x86-64 machine), a running dockerd, and for publishing
# a registry (Debian's docker-registry, distribution 2.8), skopeo (copies by digest),
# cosign (signed verdicts) and gitlab-ci-local (a real GitLab runner for the pipeline).
# Idempotent: does nothing that is already done. Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
command -v rsync >/dev/null 2>&1 || missing+=(rsync)          # gitlab-ci-local copies jobs with it
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ -x /usr/bin/qemu-aarch64-static ] || missing+=(qemu-user-static)   # arm64 images, emulated
command -v update-binfmts >/dev/null 2>&1 || missing+=(binfmt-support)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-host: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# QEMU's handler for arm64 programs, registered with the F flag (the interpreter is opened
# now, so containers of arm64 images run it too); a container host may not mount binfmt_misc.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
fi
$SUDO update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
if grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
  echo "setup-host: arm64 programs run under QEMU ($(dpkg-query -W -f='${Version}' qemu-user-static))"
else
  echo "setup-host: QEMU's arm64 handler is not registered with the F flag: arm64 tests will fail"
  exit 1
fi

# cosign (signs and verifies verdicts): Debian 12 has none; Debian 13's 2.5.0 needs only
# libc6 >= 2.34. Fetched with apt from a sources list of its own (the host's stays Debian 12).
if ! command -v cosign >/dev/null 2>&1; then
  echo "setup-host: installing cosign from Debian 13 (trixie)"
  debs=$(mktemp -d)
  bash "$(dirname "$0")/trixie-debs.sh" "$debs" cosign
  $SUDO dpkg -i "$debs"/cosign_*.deb
  rm -rf "$debs"
fi
echo "setup-host: cosign $(dpkg-query -W -f='${Version}' cosign 2>/dev/null || cosign version 2>&1 | grep -m1 GitVersion)"

# A real GitLab runner for the generated pipeline: gitlab-ci-local 4.60.1 (later releases
# need Node 22; this runs on Node 18 and 20).
if ! command -v gitlab-ci-local >/dev/null 2>&1; then
  echo "setup-host: installing gitlab-ci-local 4.60.1"
  $SUDO npm install --global --no-audit --no-fund --loglevel=error gitlab-ci-local@4.60.1
fi
echo "setup-host: gitlab-ci-local $(gitlab-ci-local --version)"

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
