#!/usr/bin/env bash
# The test command: install dependencies, build, run the whole suite with ctest.
# CKE_SANITIZE=1 builds and runs it under ASan+UBSan instead (build-asan/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
if [ "${CKE_SANITIZE:-0}" = 1 ]; then
  export CKE_BUILD_DIR="${CKE_BUILD_DIR:-$root/build-asan}"
  bash "$root/scripts/build.sh" -DCKE_SANITIZE=ON -DCKE_BUILD_BENCH=OFF
else
  bash "$root/scripts/build.sh"
fi
cd "${CKE_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
