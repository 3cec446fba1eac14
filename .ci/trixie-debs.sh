#!/usr/bin/env bash
# Download Debian 13 (trixie) .debs into a folder, with apt and a sources list and lists
# directory of their own: the host's sources stay Debian 12's.
# Usage: trixie-debs.sh DEST PACKAGE...
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
dest=$1; shift
work=$(mktemp -d)
mkdir -p "$work/lists/partial" "$work/archives/partial" "$dest"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$work/sources.list"
apt_trixie=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
            -o APT::Sandbox::User=root)
$SUDO apt-get "${apt_trixie[@]}" update -q
(cd "$dest" && $SUDO apt-get "${apt_trixie[@]}" download "$@")
$SUDO rm -rf "$work"
