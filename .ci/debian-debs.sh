#!/usr/bin/env bash
# Download one Debian suite's .debs into a folder, with apt and a sources list and lists
# directory of their own: the host's sources stay as they are.
# Usage: debian-debs.sh SUITE DEST PACKAGE[=VERSION]...   (SUITE: trixie, forky, ...)
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
suite=$1; dest=$2; shift 2
work=$(mktemp -d)
trap '$SUDO rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$dest"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
  > "$work/sources.list"
apt_suite=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
           -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
           -o APT::Sandbox::User=root)
$SUDO apt-get "${apt_suite[@]}" update -q
(cd "$dest" && $SUDO apt-get "${apt_suite[@]}" download "$@")
