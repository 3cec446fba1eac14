#!/usr/bin/env bash
# osv-scanner, the advisory scanner behind `imgkit scan`, built from its Go module: pinned,
# once per machine (skipped when the pinned binary is there). v2.6.0 needs Go 1.27: the go
# command fetches that toolchain from the Go module proxy (GOTOOLCHAIN; about 76 MB) beside
# the machine's own Go 1.26. Two to three minutes of compiling on two cores, so `make test`
# runs it beside the tests that need no scanner (tests/helpers/scanner.py waits for it).
# Writes $TOOLS/bin/osv-scanner, and $TOOLS/osv-scanner.status: building, done or failed.
# The modules, the toolchain and the compiler's cache (about 3 GB) go to a throwaway folder,
# removed afterwards: only the binary is kept. Left in ~/go they filled CI's disk before
# the suite's largest image was built.
set -euo pipefail
VERSION=v2.6.0
TOOLS="${IMGKIT_TOOLS:-$HOME/.cache/imgkit-tools}"
BIN="$TOOLS/bin/osv-scanner"
STATUS="$TOOLS/osv-scanner.status"
mkdir -p "$TOOLS/bin"
# (the version read whole, not piped into grep -q: under pipefail, grep closing the pipe
# early would fail the check and rebuild a scanner that is there)
if [ -x "$BIN" ] && [[ "$("$BIN" --version 2>/dev/null)" == *"version: ${VERSION#v}"* ]]; then
  echo done > "$STATUS"
  echo "build-scanner: osv-scanner ${VERSION#v} is there ($BIN)"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo failed > "$STATUS"; echo "build-scanner: no Go"; exit 1; }
echo building > "$STATUS"
started=$(date +%s)
scratch=$(mktemp -d "$TOOLS/go-XXXXXX")   # on disk: /tmp may be memory
# the module cache is written read-only: make it removable first
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
if GOTOOLCHAIN=go1.27.3 GOBIN="$TOOLS/bin" GOFLAGS=-trimpath GOPATH="$scratch/gopath" \
     GOMODCACHE="$scratch/mod" GOCACHE="$scratch/cache" go install "github.com/google/osv-scanner/v2/cmd/osv-scanner@$VERSION" > "$TOOLS/osv-scanner.log" 2>&1; then
  echo done > "$STATUS"
  echo "build-scanner: osv-scanner ${VERSION#v} built in $(( $(date +%s) - started )) s ($BIN)"
else
  echo failed > "$STATUS"
  echo "build-scanner: building osv-scanner failed:"; tail -20 "$TOOLS/osv-scanner.log"
  exit 1
fi
