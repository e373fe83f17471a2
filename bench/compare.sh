#!/usr/bin/env bash
# bench/compare.sh MODEL... — CKE against llama.cpp on the same files, in the same minutes.
#
# For every model: llama-bench, cke-bench, llama-bench again (interleaved, so a noisy
# neighbour hurts both), then the ratio CKE / llama.cpp per test, against the mean of the
# two llama.cpp runs. llama.cpp is a measuring instrument only: nothing builds or tests
# with it.
#
#   LLAMA_BENCH   command that runs llama-bench (default: ../shared/tools/llama.cpp/run
#                 llama-bench, relative to the repository)
#   CKE_BENCH     cke-bench binary (default: build/bin/cke-bench)
#   ARGS          test arguments for both (default: -p 128 -n 32 -t 2 -r 3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llama=${LLAMA_BENCH:-"$root/../shared/tools/llama.cpp/run llama-bench"}
cke=${CKE_BENCH:-"$root/build/bin/cke-bench"}
args=${ARGS:-"-p 128 -n 32 -t 2 -r 3"}
[ $# -ge 1 ] || { echo "usage: bench/compare.sh MODEL.gguf..." >&2; exit 2; }
[ -x "${cke%% *}" ] || { echo "compare.sh: no $cke (build first)" >&2; exit 1; }

# test -> t/s from a markdown table whose test and t/s columns are given (1-based, after
# the leading '|').
rows() { awk -F'|' -v tc="$2" -v vc="$3" 'NF > 5 && $tc ~ /(pp|tg)[0-9]+/ {
  gsub(/ /, "", $tc); split($vc, v, "±"); gsub(/ /, "", v[1]); print $tc, v[1] }' <<<"$1"; }

printf '| model | test | llama.cpp t/s | CKE t/s | CKE / llama.cpp |\n|---|---|---:|---:|---:|\n'
for m in "$@"; do
  # shellcheck disable=SC2086
  l1=$($llama -m "$m" $args 2>/dev/null)
  # shellcheck disable=SC2086
  c=$($cke -m "$m" $args 2>/dev/null)
  # shellcheck disable=SC2086
  l2=$($llama -m "$m" $args 2>/dev/null)
  join <(rows "$l1" 7 8 | sort) <(rows "$l2" 7 8 | sort) | awk '{print $1, ($2 + $3) / 2}' |
    sort >/tmp/cke_compare_llama.$$
  rows "$c" 7 8 | sort >/tmp/cke_compare_cke.$$
  join /tmp/cke_compare_llama.$$ /tmp/cke_compare_cke.$$ |
    awk -v m="$(basename "$m")" '{ printf "| %s | %s | %.2f | %.2f | %.2f |\n", m, $1, $2, $3, $3 / $2 }'
  rm -f /tmp/cke_compare_llama.$$ /tmp/cke_compare_cke.$$
done
