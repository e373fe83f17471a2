#!/usr/bin/env bash
# scripts/llama-instrument-for-host.sh GGML_SRC OUT [CMAKE_ARGS...] — the prebuilt llama.cpp of
# ../shared/tools/llama.cpp/ made runnable on a host without the instructions it was built for,
# or capped to an ISA level to compare with `cke-bench --isa` on the same host.
#
# Why. The prebuilt llama.cpp is compiled with GGML_NATIVE on an AVX-512 host; only its CPU
# backend (libggml-cpu) holds AVX-512 code, and on an AVX2-only host it dies with SIGILL in
# ggml_cpu_init. This rebuilds ggml's three libraries (base, cpu, the registry) from a ggml
# source tree of the same version (0.15.3: ggml-org/ggml 2faff767, "sync : llama.cpp",
# 2026-07-09) for the host's own features, with llama.cpp's defaults (llamafile's tinyBLAS
# on, CPU repacking on, OpenMP), and puts them beside the prebuilt libllama and tools.
#
# It is a measuring instrument, like the prebuilt one: nothing builds or tests with it, and
# it downloads nothing (bring the ggml tree). Check it before you measure with it: on
# stories260K, `OUT/run refgen ...` gave prefill logits within 6e-6 of ../shared/reference
# (the AVX2 build sums in 8 lanes where the reference's AVX-512 build sums in 16).
#
#   OUT/run llama-bench -m model.gguf -p 128 -n 32 -t 2 -r 3
#   LLAMA_BENCH="OUT/run llama-bench" bench/compare.sh model.gguf
#
# CMAKE_ARGS replace -DGGML_NATIVE=ON, e.g. an AVX2 build on an AVX-512 host (ggml's x86
# levels are cumulative options; AVX-VNNI and AVX-512 stay off):
#   ... GGML_SRC OUT -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
#       -DGGML_F16C=ON -DGGML_BMI2=ON
#   CKE_BENCH="build/bin/cke-bench --isa avx2" LLAMA_BENCH="OUT/run llama-bench" bench/compare.sh ...
set -euo pipefail
src="$(cd "${1:?usage: llama-instrument-for-host.sh GGML_SRC OUT}" && pwd)"
out="${2:?usage: llama-instrument-for-host.sh GGML_SRC OUT}"
shift 2
isa=("$@")
[ ${#isa[@]} -gt 0 ] || isa=(-DGGML_NATIVE=ON)
root="$(cd "$(dirname "$0")/.." && pwd)"
prebuilt="$root/../shared/tools/llama.cpp/lib"
[ -d "$prebuilt" ] || { echo "no $prebuilt" >&2; exit 1; }
grep -q 'GGML_VERSION_MINOR 15' "$src/CMakeLists.txt" ||
  { echo "$src is not ggml 0.15.x: the prebuilt libllama needs that ABI" >&2; exit 1; }

mkdir -p "$out/lib"
cmake -S "$src" -B "$out/ggml-build" -DCMAKE_BUILD_TYPE=Release "${isa[@]}" \
  -DGGML_LLAMAFILE=ON -DGGML_CPU_REPACK=ON -DGGML_OPENMP=ON -DGGML_BUILD_TESTS=OFF \
  -DGGML_BUILD_EXAMPLES=OFF >"$out/ggml-configure.log" 2>&1
cmake --build "$out/ggml-build" -j"$(nproc)" >"$out/ggml-build.log" 2>&1

# The prebuilt tree's version links (libggml-cpu.so.0 -> libggml-cpu.so.0.15.3) are remade
# here, relative, so that they reach the libraries built above; everything else is linked to
# the prebuilt file.
bash "$root/scripts/llama-links.sh" "$prebuilt" "$out/lib"
for n in libggml-base libggml-cpu libggml; do
  rm -f "$out/lib/$n.so.0.15.3"
  cp "$out/ggml-build/src/$n.so.0.15.3" "$out/lib/"
done
lib="$(cd "$out/lib" && pwd)"
cat >"$out/run" <<EOF
#!/usr/bin/env bash
# Runs a prebuilt llama.cpp tool on ggml built for this host: run TOOL [ARGS...]
set -euo pipefail
tool="\${1:?usage: run TOOL [ARGS...]}"; shift
export LD_LIBRARY_PATH="$lib"
exec "$lib/\$tool" "\$@"
EOF
chmod +x "$out/run"
echo "$out/run: llama.cpp tools on ggml built for this host"
