#!/usr/bin/env bash
# A Docker engine, its CLI, containerd and buildx from Debian, unpacked into DEST (for Debian
# 12, whose own engine is 20.10; .ci/setup-host.sh runs it with Debian 12's runc): Debian
# testing's (forky) engine 28.5.2 and buildx 0.29.1, the release the tests ran on, or, once
# testing has moved on from it, Debian 13's engine 26.1.5 and buildx 0.13.1 (the tests ran
# on that before). Both need glibc >= 2.34 (Debian 12 has 2.36); newer runc needs 2.38, so
# none is unpacked. Usage: unpack-engine.sh DEST
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
dest=$1
here=$(dirname "$0")
NEWER=(docker.io=28.5.2+dfsg4-5 docker-cli=28.5.2+dfsg4-5 containerd=2.1.9+ds1-5
       docker-buildx=0.29.1+ds1-4)
STABLE=(docker.io docker-cli containerd docker-buildx)
debs=$(mktemp -d)
trap '$SUDO rm -rf "$debs"' EXIT
echo "unpack-engine: fetching Debian testing's engine 28.5.2 and buildx 0.29.1"
if ! bash "$here/debian-debs.sh" forky "$debs" "${NEWER[@]}"; then
  echo "unpack-engine: Debian testing has moved on from them; fetching Debian 13's engine 26 and buildx 0.13"
  rm -f "$debs"/*.deb
  bash "$here/debian-debs.sh" trixie "$debs" "${STABLE[@]}"
fi
$SUDO mkdir -p "$dest"
for deb in "$debs"/*.deb; do $SUDO dpkg -x "$deb" "$dest"; done
