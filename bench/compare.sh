#!/usr/bin/env bash
# bench/compare.sh MODEL... — CKE against llama.cpp on the same files, in the same minutes.
#
# Per round and model: llama-bench, cke-bench, llama-bench again (interleaved, so a noisy
# neighbour hurts both), and the ratio CKE / llama.cpp per test against the mean of the two
# llama.cpp runs. With ROUNDS > 1 the rounds go over all models in turn and the table gives,
# per test, the median ratio and the range of the rounds (on a shared host memory bandwidth
# moves by up to 2x between minutes: one round is one minute). llama.cpp is a measuring
# instrument only: nothing builds or tests with it.
#
#   LLAMA_BENCH   command that runs llama-bench (default: ../shared/tools/llama.cpp/run
#                 llama-bench, relative to the repository)
#                 (on a host the prebuilt build cannot run, SIGILL: scripts/llama-instrument-for-host.sh
#                 makes OUT/run; LLAMA_BENCH="OUT/run llama-bench")
#   CKE_BENCH     cke-bench binary (default: build/bin/cke-bench)
#   ARGS          test arguments for both (default: -p 128 -n 32 -t 2 -r 3)
#                 (long contexts as llama.cpp's default cache: ARGS="-p 512 -n 32 -d 2048
#                 -t 2 -r 2 -ctk f16 -ctv f16"; a prompt then its generation: ARGS="-p 0 -n 0
#                 -pg 512,128 -t 2 -r 2"; tests are named as llama-bench's plus the thread
#                 count, pp512@d2048,t2, pp512+tg128,t2)
#   ROUNDS        rounds over all models (default 1)
# Both tables are read by their headers' threads, test and t/s columns, so flags that add
# columns to llama-bench's table (-fa, -b, -ctk f32, ...) are fine
# (tests/bench/compare_test.sh checks the parsing against canned tables).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cke=${CKE_BENCH:-"$root/build/bin/cke-bench"}
args=${ARGS:-"-p 128 -n 32 -t 2 -r 3"}
rounds=${ROUNDS:-1}
[ $# -ge 1 ] || { echo "usage: bench/compare.sh MODEL.gguf..." >&2; exit 2; }
[ -x "${cke%% *}" ] || { echo "compare.sh: no $cke (build first)" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/cke-compare.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# The prebuilt tree's version links may arrive as small files naming their target (a copy
# that does not keep links): then it runs from a linked copy in $tmp.
if [ -z "${LLAMA_BENCH:-}" ]; then
  pre="$root/../shared/tools/llama.cpp/lib"
  if [ -f "$pre/libllama.so.0" ] && ! [ -L "$pre/libllama.so.0" ]; then
    bash "$root/scripts/llama-links.sh" "$pre" "$tmp/llama.cpp/lib"
    printf '#!/usr/bin/env bash\nexport LD_LIBRARY_PATH="%s"\nexec "%s/$1" "${@:2}"\n' \
      "$tmp/llama.cpp/lib" "$tmp/llama.cpp/lib" >"$tmp/llama.cpp/run"
    chmod +x "$tmp/llama.cpp/run"
    LLAMA_BENCH="$tmp/llama.cpp/run llama-bench"
  fi
fi
llama=${LLAMA_BENCH:-"$root/../shared/tools/llama.cpp/run llama-bench"}

# test,t<threads> -> t/s from a markdown table, its threads, test and t/s columns found by
# their header (llama-bench adds columns for flags off their defaults: -fa, -ctk, -b, ...):
# "tg32,t1" and "tg32,t2" apart when -t lists both.
rows() { awk -F'|' '
  $2 ~ /^ *model *$/ { for (i = 2; i < NF; ++i) { n = $i; gsub(/ /, "", n); col[n] = i } next }
  ("test" in col) && NF > 5 && $(col["test"]) ~ /(pp|tg)[0-9]+/ {
    tc = col["test"]; hc = col["threads"]; split($(col["t/s"]), v, "±")
    gsub(/ /, "", $tc); gsub(/ /, "", $hc); gsub(/ /, "", v[1])
    print $tc ",t" $hc, v[1] }' <<<"$1"; }

# One line per (round, model, test): model test llama_tps cke_tps ratio.
for ((r = 1; r <= rounds; ++r)); do
  for m in "$@"; do
    # shellcheck disable=SC2086
    l1=$($llama -m "$m" $args 2>/dev/null)
    # shellcheck disable=SC2086
    c=$($cke -m "$m" $args 2>/dev/null)
    # shellcheck disable=SC2086
    l2=$($llama -m "$m" $args 2>/dev/null)
    join <(rows "$l1" | sort) <(rows "$l2" | sort) | awk '{print $1, ($2 + $3) / 2}' |
      sort >"$tmp/llama"
    rows "$c" | sort >"$tmp/cke"
    join "$tmp/llama" "$tmp/cke" |
      awk -v m="$(basename "$m")" '{ printf "%s %s %.2f %.2f %.3f\n", m, $1, $2, $3, $3 / $2 }' \
        >>"$tmp/all"
  done
done

if ((rounds == 1)); then
  printf '| model | test | llama.cpp t/s | CKE t/s | CKE / llama.cpp |\n|---|---|---:|---:|---:|\n'
  awk '{ printf "| %s | %s | %s | %s | %.2f |\n", $1, $2, $3, $4, $5 }' "$tmp/all"
  exit 0
fi
printf '| model | test | llama.cpp t/s (rounds) | CKE t/s (rounds) | CKE / llama.cpp: median (range) |\n'
printf '|---|---|---:|---:|---:|\n'
for m in "$@"; do
  b="$(basename "$m")"
  for t in $(awk -v m="$b" '$1 == m {print $2}' "$tmp/all" | sort -u); do
    awk -v m="$b" -v t="$t" '$1 == m && $2 == t' "$tmp/all" | sort -k5 -n | awk '
      { l[NR] = $3; c[NR] = $4; q[NR] = $5; m = $1; t = $2 }
      END {
        med = (NR % 2) ? q[(NR + 1) / 2] : (q[NR / 2] + q[NR / 2 + 1]) / 2
        ls = l[1]; cs = c[1]
        for (i = 2; i <= NR; ++i) { ls = ls " " l[i]; cs = cs " " c[i] }
        printf "| %s | %s | %s | %s | %.2f (%.2f-%.2f) |\n", m, t, ls, cs, med, q[1], q[NR] }'
  done
done
