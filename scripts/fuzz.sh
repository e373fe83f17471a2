#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan; tests/fuzz/) and runs each for SECONDS
# (default 60) on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/; the repo
# is never written). Fails on any crash, sanitizer report, timeout or out-of-memory; the
# input that did it is kept in <build>/fuzz-artifacts/. See docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS]
#   env: CKE_FUZZ_BUILD_DIR (default build-fuzz/), CKE_FUZZ_JOBS (targets run at once,
#        default nproc), CKE_FUZZ_TARGETS (space-separated subset), CKE_SHARED (vocabs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-60}"
bdir="${CKE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${CKE_FUZZ_JOBS:-$(nproc)}"
read -r -a targets <<<"${CKE_FUZZ_TARGETS:-fuzz_gguf fuzz_kernel_map fuzz_contract fuzz_circuit fuzz_chat_template fuzz_tokenizer fuzz_openai_request}"

# Inputs longer than this are not tried: each loader's real inputs fit with room to spare,
# and shorter inputs keep the rate high.
declare -A max_len=(
  [fuzz_gguf]=65536 [fuzz_kernel_map]=16384 [fuzz_contract]=8192 [fuzz_circuit]=16384
  [fuzz_chat_template]=4096 [fuzz_tokenizer]=2048 [fuzz_openai_request]=4096)

bash "$root/scripts/deps.sh"
# -O1 as OSS-Fuzz builds: half the compile time of -O3 for most of the speed.
cmake -S "$root" -B "$bdir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCKE_BUILD_FUZZ=ON -DCKE_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 >/dev/null
build_targets=("${targets[@]}")
[[ " ${targets[*]} " == *" fuzz_gguf "* ]] && build_targets+=(gguf_fuzz_seeds)
cmake --build "$bdir" -j "$(nproc)" --target "${build_targets[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/cke-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
artifacts="$bdir/fuzz-artifacts"
mkdir -p "$artifacts"

run_one() {
  local t="$1" name="${1#fuzz_}"
  local corpus="$work/$name"
  mkdir -p "$corpus"
  if [ "$t" = fuzz_gguf ]; then
    "$bdir/tests/fuzz/gguf_fuzz_seeds" "$corpus" >/dev/null
  else
    cp "$root/tests/fuzz/corpus/$name/"* "$corpus/"
  fi
  local rc=0
  "$bdir/tests/fuzz/$t" "$corpus" -max_total_time="$secs" -max_len="${max_len[$t]}" \
    -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" >"$work/$t.log" 2>&1 || rc=$?
  local runs
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")"
  if [ "$rc" -ne 0 ]; then
    echo "[fuzz] $t: FAILED (exit $rc) after ${runs:-?} runs; input kept in $artifacts/"
    grep -E "ERROR|FUZZ_CHECK|runtime error|SUMMARY|Test unit written" "$work/$t.log" | head -20 || true
    tail -40 "$work/$t.log" >"$artifacts/$t.log.tail"
    return 1
  fi
  echo "[fuzz] $t: ok, ${runs:-?} runs in ${secs}s, $(find "$corpus" -type f | wc -l) corpus inputs"
}

failed=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if ((failed)); then
  echo "[fuzz] FAILED (reproduce: <build>/tests/fuzz/<target> <artifact>)"
  exit 1
fi
echo "[fuzz] all targets ok"
