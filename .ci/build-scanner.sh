#!/usr/bin/env bash
# The scanners behind `imgkit scan`, built from their Go modules: pinned, once per machine
# (each skipped when its pinned binary is there):
# - osv-scanner v2.6.0 (the default scanner). It needs Go 1.27: the go command fetches that
#   toolchain from the Go module proxy (GOTOOLCHAIN; about 76 MB) beside the machine's Go 1.26.
#   Two to three minutes of compiling on two cores.
# - trivy v0.74.0 (`--scanner trivy`), built as its own release builds it (GOEXPERIMENT=jsonv2,
#   no cgo, its version stamped in). Its modules are about 2.7 GB, its compile the longest.
# - trivy-fixture (.ci/trivy-fixture): writes trivy's BoltDB from fixture files, as trivy's own
#   tests do; the trivy tests make their offline database with it.
# `make test` runs this beside the tests that need no scanner (tests/helpers/scanner.py waits).
# Writes $TOOLS/bin/NAME and $TOOLS/NAME.status: building, done or failed. The modules, the
# toolchain and the compiler's cache go to a throwaway folder, removed afterwards: only the
# binaries are kept. Left in ~/go they filled CI's disk before the suite's largest image was built.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TOOLS="${IMGKIT_TOOLS:-$HOME/.cache/imgkit-tools}"
mkdir -p "$TOOLS/bin"
OSV=v2.6.0
TRIVY=v0.74.0
FIXTURE=1                       # trivy-fixture's own version: raise it when main.go changes

# has NAME WANTED: whether $TOOLS/bin/NAME says WANTED in its --version (read whole, not piped
# into grep -q: under pipefail, grep closing the pipe early would fail the check)
has() { [ -x "$TOOLS/bin/$1" ] && [[ "$("$TOOLS/bin/$1" --version 2>/dev/null)" == *"$2"* ]]; }

# build NAME -- GO_ARGS...: go install (or build) into $TOOLS/bin with a throwaway module cache
build() {
  local name=$1; shift 2
  local started scratch status=0
  started=$(date +%s)
  scratch=$(mktemp -d "$TOOLS/go-XXXXXX")   # on disk: /tmp may be memory
  echo building > "$TOOLS/$name.status"
  GOBIN="$TOOLS/bin" GOFLAGS="-trimpath -modcacherw" GOPATH="$scratch/gopath" \
    GOMODCACHE="$scratch/mod" GOCACHE="$scratch/cache" "$@" > "$TOOLS/$name.log" 2>&1 || status=$?
  rm -rf "$scratch"
  if [ "$status" -eq 0 ]; then
    echo done > "$TOOLS/$name.status"
    echo "build-scanner: $name built in $(( $(date +%s) - started )) s ($TOOLS/bin/$name)"
  else
    echo failed > "$TOOLS/$name.status"
    echo "build-scanner: building $name failed:"; tail -20 "$TOOLS/$name.log"
    return 1
  fi
}

command -v go >/dev/null 2>&1 || {
  for n in osv-scanner trivy trivy-fixture; do echo failed > "$TOOLS/$n.status"; done
  echo "build-scanner: no Go"; exit 1; }
failed=0
if has osv-scanner "version: ${OSV#v}"; then
  echo done > "$TOOLS/osv-scanner.status"; echo "build-scanner: osv-scanner ${OSV#v} is there"
else
  build osv-scanner -- env GOTOOLCHAIN=go1.27.3 go install \
    "github.com/google/osv-scanner/v2/cmd/osv-scanner@$OSV" || failed=1
fi
if has trivy-fixture "trivy-fixture $FIXTURE"; then
  echo done > "$TOOLS/trivy-fixture.status"; echo "build-scanner: trivy-fixture $FIXTURE is there"
else
  (cd "$HERE/trivy-fixture" && build trivy-fixture -- go build \
     -ldflags "-X main.version=$FIXTURE" -o "$TOOLS/bin/trivy-fixture" .) || failed=1
fi
if has trivy "Version: ${TRIVY#v}"; then
  echo done > "$TOOLS/trivy.status"; echo "build-scanner: trivy ${TRIVY#v} is there"
else
  build trivy -- env CGO_ENABLED=0 GOEXPERIMENT=jsonv2 go install \
    -ldflags "-s -w -X github.com/aquasecurity/trivy/pkg/version/app.ver=${TRIVY#v}" \
    "github.com/aquasecurity/trivy/cmd/trivy@$TRIVY" || failed=1
fi
exit $failed
