#!/usr/bin/env bash
# Installs the Debian 12 packages dtrain needs (tools/packages.txt) and builds the release preset.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! dpkg -s $(cat tools/packages.txt) >/dev/null 2>&1; then
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $(cat tools/packages.txt)
fi
cmake --preset release >/dev/null
cmake --build --preset release
