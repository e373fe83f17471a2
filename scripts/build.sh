#!/usr/bin/env bash
# Configures and builds CKE (Release) into build/ (or $CKE_BUILD_DIR). Extra args go to CMake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bdir="${CKE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$bdir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$bdir" -j "$(nproc)"
