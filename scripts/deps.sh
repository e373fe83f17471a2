#!/usr/bin/env bash
# Installs the Debian 12 packages CKE builds with (idempotent: does nothing when present).
set -euo pipefail
PKGS=(cmake make g++ clang pkg-config git
      libasmjit-dev libcpuinfo-dev libyaml-cpp-dev libtbb-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libclang-rt-14-dev
      libcpp-httplib-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "[cke] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
