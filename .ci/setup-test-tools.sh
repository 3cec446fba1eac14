#!/usr/bin/env bash
# What the tests need beyond the engine (.ci/setup-host.sh): QEMU's user-mode emulation
# (arm64 images on an x86-64 machine), a registry (Debian's docker-registry, distribution
# 2.8), skopeo (copies by digest), Prometheus, promtool and a Pushgateway (verdicts as
# metrics), Chromium and its driver (the site's pages), cosign (signed verdicts), and what
# gitlab-ci-local's install needs (npm, g++; .ci/setup-gitlab-ci-local.sh installs it, beside
# the first tests under `make test`). `make test` runs it; `make build` does not.
# Idempotent: does nothing that is already done. Needs root (or sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
command -v rsync >/dev/null 2>&1 || missing+=(rsync)          # gitlab-ci-local copies jobs with it
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
command -v g++ >/dev/null 2>&1 || missing+=(g++ make)          # gitlab-ci-local's native module (re2)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)          # metrics: lint, rules, scrape
command -v prometheus-pushgateway >/dev/null 2>&1 || missing+=(prometheus-pushgateway)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)               # the site, as a person sees it
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ -x /usr/bin/qemu-aarch64-static ] || missing+=(qemu-user-static)   # arm64 images, emulated
command -v update-binfmts >/dev/null 2>&1 || missing+=(binfmt-support)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)     # reproduce --on ssh://: a test's own sshd
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-test-tools: installing ${missing[*]}"
  # one apt at a time: .ci/setup-podman.sh may be installing beside this
  $SUDO flock /run/imgkit-apt.lock apt-get update -q
  # no service started by a package (openssh-server's would listen on port 22; the test
  # runs an sshd of its own on 127.0.0.1 and stops it): Debian's policy-rc.d, where the
  # machine has none already (container images do), and removed again
  own_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  installed=0
  DEBIAN_FRONTEND=noninteractive $SUDO flock /run/imgkit-apt.lock apt-get install -y -q \
    --no-install-recommends "${missing[@]}" || installed=$?
  [ -z "$own_policy" ] || $SUDO rm -f /usr/sbin/policy-rc.d
  [ "$installed" -eq 0 ] || exit "$installed"
fi

# QEMU's handler for arm64 programs, registered with the F flag (the interpreter is opened
# now, so containers of arm64 images run it too); a container host may not mount binfmt_misc.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
fi
$SUDO update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
if grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
  echo "setup-test-tools: arm64 programs run under QEMU ($(dpkg-query -W -f='${Version}' qemu-user-static))"
else
  echo "setup-test-tools: QEMU's arm64 handler is not registered with the F flag: arm64 tests will fail"
  exit 1
fi

# cosign (signs and verifies verdicts): Debian 12 has none; Debian 13's 2.5.0 needs only
# libc6 >= 2.34. Fetched with apt from a sources list of its own (the host's stays Debian 12).
if ! command -v cosign >/dev/null 2>&1; then
  echo "setup-test-tools: installing cosign from Debian 13 (trixie)"
  debs=$(mktemp -d)
  bash "$(dirname "$0")/debian-debs.sh" trixie "$debs" cosign
  DEBIAN_FRONTEND=noninteractive $SUDO flock /run/imgkit-apt.lock apt-get install -y -q \
    --no-install-recommends "$(ls "$debs"/cosign_*.deb)"
  rm -rf "$debs"
fi
echo "setup-test-tools: cosign $(dpkg-query -W -f='${Version}' cosign 2>/dev/null || cosign version 2>&1 | grep -m1 GitVersion)"
