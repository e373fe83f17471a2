#!/usr/bin/env bash
# The test command: install dependencies, build, run the whole suite with ctest.
# CKE_SANITIZE=1 builds and runs it under ASan+UBSan instead (build-asan/).
# Then, unless CKE_CI_EXTRA=0, scripts/fuzz.sh: every fuzz target (clang, ASan+UBSan) for
# CKE_CI_FUZZ_SECONDS (default 20, so that the whole run stays well under 20 minutes on 2
# cores) s. With CKE_CI_ASAN=1 also the unit tests under
# ASan+UBSan at -O1 (build-asan-unit/ or $CKE_ASAN_BUILD_DIR), without the slow model-level
# parity and emitted-C tests (Reference/*), the suites that compare generated machine code
# with the scalar references bit for bit over many shapes (JitLinear, JitLinearId, JitEmbed,
# JitOps, JitActQuant: ASan instruments neither the machine code nor the emitted C) and the
# `audit` ratchet (it counts the parity tests of a full run). That stage is a second build
# of the tree (11 minutes on 2 cores) and is not in CI's default run, which it would take
# to 30 minutes; run it before landing memory-touching work (docs/fuzzing.md).
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

if [ "${CKE_CI_EXTRA:-1}" != 0 ]; then
  t0=$SECONDS
  bash "$root/scripts/fuzz.sh" "${CKE_CI_FUZZ_SECONDS:-20}"
  echo "[cke] fuzz: $((SECONDS - t0)) s"
fi
if [ "${CKE_CI_ASAN:-0}" = 1 ] && [ "${CKE_SANITIZE:-0}" != 1 ]; then
  t0=$SECONDS
  asan_dir="${CKE_ASAN_BUILD_DIR:-$root/build-asan-unit}"
  CKE_BUILD_DIR="$asan_dir" bash "$root/scripts/build.sh" -DCKE_SANITIZE=ON \
    -DCKE_BUILD_BENCH=OFF -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG"
  cd "$asan_dir"
  ctest --output-on-failure -j "$(nproc)" --timeout 900 \
    -E '^Reference/|^Jit(Linear|LinearId|Embed|Ops|ActQuant)\.|^audit$'
  echo "[cke] unit tests under ASan+UBSan: $((SECONDS - t0)) s"
fi
