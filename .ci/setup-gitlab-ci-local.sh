#!/usr/bin/env bash
# gitlab-ci-local 4.60.1, a real GitLab runner for the generated pipeline (later releases need
# Node 22; this runs on Node 18 and 20), from npm. Its native module (re2) is compiled by the
# install: about three minutes on a fresh 2-core machine, so `make test` runs this beside the
# first tests (tests/helpers/background.py waits while $TOOLS/gitlab-ci-local.status says
# building). Needs npm, g++ and make (.ci/setup-test-tools.sh installs them) and root (or
# sudo). Idempotent: installs nothing that is there.
set -euo pipefail
VERSION=4.60.1
TOOLS="${IMGKIT_TOOLS:-$HOME/.cache/imgkit-tools}"
STATUS="$TOOLS/gitlab-ci-local.status"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
mkdir -p "$TOOLS"
echo building > "$STATUS"
trap '[ "$(cat "$STATUS")" = done ] || echo failed > "$STATUS"' EXIT
if ! [[ "$(gitlab-ci-local --version 2>/dev/null)" == "$VERSION" ]]; then
  started=$(date +%s)
  $SUDO npm install --global --no-audit --no-fund --loglevel=error "gitlab-ci-local@$VERSION"
  echo "setup-gitlab-ci-local: installed in $(( $(date +%s) - started )) s"
fi
echo "setup-gitlab-ci-local: gitlab-ci-local $(gitlab-ci-local --version)"
echo done > "$STATUS"
