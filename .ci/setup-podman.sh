#!/usr/bin/env bash
# Podman for the runtime tests (tests/test_podman.py), rootful and rootless, each serving
# its Docker-compatible API the way imgkit connects to it:
#   rootful:  /run/podman/podman.sock, as root
#   rootless: /run/user/UID/podman/podman.sock, as the user imgkit-rootless
# Podman's API honours CDI device requests only from 5.5; Debian 12 has 4.3, Debian 13 5.4,
# and Debian testing's 5.8 needs glibc 2.38 (Debian 12 has 2.36). So Podman 5.7.0 is built
# from its Go module, pinned, once per machine (about two minutes on two cores), against
# Debian 12's libraries, with Debian 12's conmon, netavark and runc. Debian 12's crun 1.8
# refuses 5.7's runtime specs, so the services run runc, with a containers.conf of their
# own (the host's /etc/containers stays as it is): runc, the host's own limits on open files
# and processes (Podman asks for more than a container host may grant), slirp4netns for
# rootless networking (Debian 12's pasta predates what 5.7 asks of it).
# `make test` runs this beside the first tests; tests/helpers/podman.py waits while
# $TOOLS/podman.status says building, and skips (fails in CI) when it says failed.
# Idempotent: builds nothing that is there and starts no service that answers. Needs root.
set -euo pipefail
VERSION=v5.7.0
TOOLS="${IMGKIT_TOOLS:-$HOME/.cache/imgkit-tools}"
STATUS="$TOOLS/podman.status"
# where both services read it: the rootless user cannot enter root's home (the cache)
PREFIX=/opt/imgkit-podman
BIN="$PREFIX/bin/podman"
CONF="$PREFIX/containers.conf"
USER_NAME=imgkit-rootless
mkdir -p "$TOOLS" "$TOOLS/podman" "$PREFIX/bin"
echo building > "$STATUS"
trap '[ "$(cat "$STATUS")" = done ] || echo failed > "$STATUS"' EXIT
[ "$(id -u)" -eq 0 ] || { echo "setup-podman: needs root"; exit 1; }

missing=()
for pkg in conmon netavark aardvark-dns uidmap slirp4netns golang-github-containers-common \
           catatonit runc libseccomp-dev libsqlite3-dev pkg-config gcc; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-podman: installing ${missing[*]}"
  # one apt at a time: setup-test-tools.sh may be installing beside this
  flock /run/imgkit-apt.lock apt-get update -q
  DEBIAN_FRONTEND=noninteractive flock /run/imgkit-apt.lock apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
fi

if ! { [ -x "$BIN" ] && [[ "$("$BIN" --version 2>/dev/null)" == "podman version ${VERSION#v}" ]]; }; then
  command -v go >/dev/null 2>&1 || { echo "setup-podman: no Go"; exit 1; }
  started=$(date +%s)
  scratch=$(mktemp -d "$TOOLS/go-XXXXXX")
  trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"; [ "$(cat "$STATUS")" = done ] || echo failed > "$STATUS"' EXIT
  export GOPATH="$scratch/gopath" GOMODCACHE="$scratch/mod" GOCACHE="$scratch/cache" GOFLAGS="-mod=mod -trimpath"
  # `go install MODULE@VERSION` asks the proxy for the module's version list, which it
  # refuses for Podman: fetch the exact version, then build in a copy of it
  src=$(go mod download -json "github.com/containers/podman/v5@$VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  cp -r "$src" "$scratch/src" && chmod -R u+w "$scratch/src"
  (cd "$scratch/src" && CGO_ENABLED=1 go build -o "$BIN.new" \
     -tags "seccomp libsqlite3 containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper" \
     ./cmd/podman) > "$TOOLS/podman-build.log" 2>&1 ||
    { echo "setup-podman: building Podman failed:"; tail -20 "$TOOLS/podman-build.log"; exit 1; }
  mv "$BIN.new" "$BIN"
  echo "setup-podman: Podman ${VERSION#v} built in $(( $(date +%s) - started )) s ($BIN)"
fi

cat > "$CONF" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=$(ulimit -Hu):$(ulimit -Hu)"]

[network]
default_rootless_network_cmd = "slirp4netns"

[engine]
runtime = "runc"
EOF

answers() { timeout 5 "$BIN" --url "unix://$1" version >/dev/null 2>&1; }
serve() {   # serve SOCKET LOG [runuser args]: start a service unless one answers there
  local socket=$1 log=$2; shift 2
  answers "$socket" && return 0
  # from /: the service outlives this checkout, and conmon cannot start a container from a
  # working directory that was removed ("Failed to get working directory")
  (cd / && "$@" env CONTAINERS_CONF="$CONF" PODMAN_IGNORE_CGROUPSV1_WARNING=1 \
     PATH="$PREFIX/bin:$PATH" nohup "$BIN" system service --time=0 "unix://$socket" > "$log" 2>&1 &)
  for _ in $(seq 1 50); do answers "$socket" && return 0; sleep 0.2; done
  echo "setup-podman: the service at $socket did not start:"; tail -20 "$log"; return 1
}

mkdir -p /run/podman
serve /run/podman/podman.sock /var/log/imgkit-podman.log

# rootless: a user of its own with subordinate ids (useradd gives them) and a runtime dir
id "$USER_NAME" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$USER_NAME"
uid=$(id -u "$USER_NAME")
runtime_dir=/run/user/$uid
install -d -m 0700 -o "$USER_NAME" -g "$USER_NAME" "$runtime_dir" "$runtime_dir/podman"
serve "$runtime_dir/podman/podman.sock" "/var/log/imgkit-podman-rootless.log" \
  runuser -u "$USER_NAME" -- env HOME="$(getent passwd "$USER_NAME" | cut -d: -f6)" XDG_RUNTIME_DIR="$runtime_dir"
echo done > "$STATUS"
echo "setup-podman: Podman ${VERSION#v} serving, rootful (/run/podman/podman.sock) and rootless ($runtime_dir/podman/podman.sock, as $USER_NAME)"
