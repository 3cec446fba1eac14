#!/usr/bin/env bash
# QEMU benchmark: the emulated work the arm64 tests wait for most (the python layer's
# `apt-get update`, `apt-get install python3 python3-venv` and `python3 -m venv`, in a
# container of the arm64 Debian base) under Debian 12's qemu-user-static and the
# qemu-user of Debian 13 and Debian testing, rounds alternating (these machines drift).
# Each QEMU is registered in turn as the arm64 handler, with the F flag as
# .ci/setup-test-tools.sh does; the host's own handler is registered again at the end.
# Prints seconds per run. Needs root, the engine, the arm64 base (`imgkit/debian:bookworm-arm64`,
# which the arm64 tests make) and the network (apt in the container).
#
#   bash bench/qemu_versions.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
base=imgkit/debian:bookworm-arm64
docker image inspect "$base" >/dev/null 2>&1 || { echo "no $base: run the arm64 tests first"; exit 1; }
work=$(mktemp -d)
declare -A QEMU=([12]=/usr/libexec/qemu-binfmt/aarch64-binfmt-P)
declare -A VERSION=([12]=$(/usr/bin/qemu-aarch64-static --version | head -1 | cut -d' ' -f3))
for suite in trixie forky; do
  bash .ci/debian-debs.sh "$suite" "$work/$suite" qemu-user >/dev/null
  dpkg-deb -x "$work/$suite"/qemu-user_*.deb "$work/$suite/x"
  # QEMU keeps argv[0] as given (binfmt's P flag) when its own name ends in -binfmt-P
  cp "$work/$suite/x/usr/bin/qemu-aarch64" "$work/$suite/aarch64-binfmt-P"
  QEMU[$suite]=$work/$suite/aarch64-binfmt-P
  VERSION[$suite]=$("$work/$suite/x/usr/bin/qemu-aarch64" --version | head -1 | cut -d' ' -f3)
done

register() {
  echo -1 > /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || true
  printf ':qemu-aarch64:M:0:%s:%s:%s:PF' \
    '\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00' \
    '\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' \
    "$1" > /proc/sys/fs/binfmt_misc/register
}
trap 'register "${QEMU[12]}"; rm -rf "$work"' EXIT

WORK='apt-get update -q && apt-get install -y -q --no-install-recommends python3 python3-venv && python3 -m venv /v'
for round in $(seq "$rounds"); do
  for which in 12 trixie forky; do
    register "${QEMU[$which]}"
    start=$(date +%s.%N)
    docker run --rm --platform linux/arm64 -e DEBIAN_FRONTEND=noninteractive "$base" sh -c "$WORK" >/dev/null
    end=$(date +%s.%N)
    printf 'round %s  QEMU %-8s %6.1f s\n' "$round" "${VERSION[$which]}" "$(echo "$end - $start" | bc)"
  done
done
