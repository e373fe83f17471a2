#!/usr/bin/env bash
# compare_test.sh COMPARE_SH — runs bench/compare.sh with stand-ins for llama-bench and
# cke-bench that print canned markdown tables, and checks its rows against the ratios
# computed here: the columns are found by their header (the llama-bench table carries the
# extra n_batch and fa columns it prints for flags off their defaults), the two llama.cpp
# runs of a round are averaged, tests are told apart by thread count and depth, and ROUNDS
# gives the median and range.
set -uo pipefail
compare="${1:?usage: compare_test.sh COMPARE_SH}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# llama-bench: its first call in a round prints 100-based numbers, its second 120-based
# (a counter file), so the mean is 110-based.
cat >"$work/llama-bench" <<'SH'
#!/usr/bin/env bash
n=$(cat "$(dirname "$0")/calls" 2>/dev/null || echo 0); echo $((n + 1)) >"$(dirname "$0")/calls"
b=$((n % 2 == 0 ? 100 : 120))
cat <<T
| model                          |       size |     params | backend    | threads | n_batch |  fa |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------: | --: | --------------: | -------------------: |
| llama 1B Q8_0                  |   1.09 GiB |     1.10 B | CPU        |       1 |     512 |   0 |           pp128 |        $b.00 ± 1.50 |
| llama 1B Q8_0                  |   1.09 GiB |     1.10 B | CPU        |       2 |     512 |   0 |           pp128 |        $((2 * b)).00 ± 2.00 |
| llama 1B Q8_0                  |   1.09 GiB |     1.10 B | CPU        |       2 |     512 |   0 |   tg32 @ d2048 |         $((b / 10)).00 ± 0.10 |

build: 81ff7abe (1)
T
SH
# cke-bench: its own columns (isa, load and compile times), the same tests.
cat >"$work/cke-bench" <<'SH'
#!/usr/bin/env bash
cat <<T
| model | size | params | isa | threads | test | t/s | load ms | compile ms | repack ms |
|---|---:|---:|---|---:|---|---:|---:|---:|---:|
| Q8_0.gguf | 1.09 GiB | 1.10 B | probed | 1 | pp128 | 231.00 ± 3.00 | 2.0 | 50.0 | 300.0 |
| Q8_0.gguf | 1.09 GiB | 1.10 B | probed | 2 | pp128 | 440.00 ± 5.00 | 2.0 | 50.0 | 300.0 |
| Q8_0.gguf | 1.09 GiB | 1.10 B | probed | 2 | tg32 @ d2048 | 16.50 ± 0.20 | 2.0 | 50.0 | 300.0 |
T
SH
chmod +x "$work/llama-bench" "$work/cke-bench"
touch "$work/Q8_0.gguf"

fail=0
check() {  # check NAME WANT GOT
  if [ "$2" == "$3" ]; then
    echo "ok   $1"
  else
    printf 'FAIL %s\n  want: %s\n  got:  %s\n' "$1" "$2" "$3"
    fail=1
  fi
}

out=$(LLAMA_BENCH="$work/llama-bench" CKE_BENCH="$work/cke-bench" bash "$compare" "$work/Q8_0.gguf")
echo "$out"
# 231 / 110 = 2.10, 440 / 220 = 2.00, 16.5 / 11 = 1.50
check "pp128 at 1 thread" "| Q8_0.gguf | pp128,t1 | 110.00 | 231.00 | 2.10 |" "$(grep 'pp128,t1 ' <<<"$out")"
check "pp128 at 2 threads" "| Q8_0.gguf | pp128,t2 | 220.00 | 440.00 | 2.00 |" "$(grep 'pp128,t2 ' <<<"$out")"
check "tg32 at depth 2048" "| Q8_0.gguf | tg32@d2048,t2 | 11.00 | 16.50 | 1.50 |" "$(grep 'tg32@d2048,t2 ' <<<"$out")"
check "three rows" "3" "$(grep -c '^| Q8_0' <<<"$out")"

# Three rounds: every round's llama.cpp mean is 110-based again (the calls alternate), so
# each ratio is the same and the median and range are it.
rm -f "$work/calls"
out=$(ROUNDS=3 LLAMA_BENCH="$work/llama-bench" CKE_BENCH="$work/cke-bench" bash "$compare" "$work/Q8_0.gguf")
echo "$out"
check "rounds: pp128 at 2 threads" "| Q8_0.gguf | pp128,t2 | 220.00 220.00 220.00 | 440.00 440.00 440.00 | 2.00 (2.00-2.00) |" \
  "$(grep 'pp128,t2 ' <<<"$out")"
exit $fail
