#!/usr/bin/env bash
# `cmake --install` end to end: install the build into a temporary prefix and move it (an
# install is relocatable), then
#   - the installed cke-run reads its kernel maps and circuits from <prefix>/share/cke (the
#     X-Ray trace names the files) and generates the build's text;
#   - examples/simple.c (C API, cke::cke) and examples/simple.cpp (C++ API, cke::cke_chat)
#     build against the install with find_package(cke CONFIG), simple.c with pkg-config
#     (cke.pc) too, and all print what the build's cke-example-simple prints;
#   - built with CKE_SHARED: cke::cke and cke.pc are lib/libcke.so, which exports exactly the
#     functions cke.h declares (nm -D, compared both ways) and reads its data beside itself.
# usage: install_test.sh BUILD_DIR SOURCE_DIR MODEL SHARED(1|0)
set -uo pipefail
build="$1" src="$2" model="$3" shared="$4"
[ -f "$model" ] || { echo "SKIP: shared test data absent: $model"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
t0=$SECONDS

cmake --install "$build" --prefix "$work/first" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install"; }
mv "$work/first" "$work/prefix"
p="$work/prefix"
for f in bin/cke-run bin/cke-server lib/libcke_runtime.a include/cke/runtime/capi/cke.h \
         include/cke/runtime/chat/generate_session.h lib/cmake/cke/cke-config.cmake \
         lib/pkgconfig/cke.pc share/cke/kernel_maps/contracts share/cke/circuits/llama.yaml \
         share/cke/circuits/chat_templates/chatml.yaml; do
  [ -e "$p/$f" ] || fail "not installed: $f"
done
if [ "$shared" = 1 ]; then
  [ -e "$p/lib/libcke.so" ] || fail "not installed: lib/libcke.so"
else
  [ -e "$p/lib/libcke.so" ] && fail "lib/libcke.so installed without CKE_SHARED"
fi

want="$("$build/bin/cke-run" -m "$model" -p "Once upon a time" -n 16 --temp 0 -t 1 2>/dev/null)"
got="$("$p/bin/cke-run" -m "$model" -p "Once upon a time" -n 16 --temp 0 -t 1 \
       --xray "$work/xray.json" 2>/dev/null)"
[ "$got" = "$want" ] || fail "installed cke-run printed '$got', the build's '$want'"
grep -q "\"$p/share/cke/circuits/llama.yaml\"" "$work/xray.json" ||
  fail "the installed cke-run did not read its circuit from $p/share/cke"
grep -q "\"$src/kernel_maps" "$work/xray.json" &&
  fail "the installed cke-run read kernel maps from the source tree"

want="$("$build/bin/cke-example-simple" "$model" "Once upon a time" 16 2>/dev/null)"
[ -n "$want" ] || fail "the build's cke-example-simple printed nothing"
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
find_package(cke CONFIG REQUIRED)
add_executable(simple "$src/examples/simple.c")
target_link_libraries(simple PRIVATE cke::cke)
set_target_properties(simple PROPERTIES LINKER_LANGUAGE CXX)
add_executable(simple_cpp "$src/examples/simple.cpp")
target_link_libraries(simple_cpp PRIVATE cke::cke_chat)
CMAKE
cmake -S "$work/consumer" -B "$work/consumer/b" -DCMAKE_PREFIX_PATH="$p" \
  -DCMAKE_BUILD_TYPE=Release >"$work/c.log" 2>&1 && cmake --build "$work/consumer/b" >>"$work/c.log" 2>&1 ||
  { cat "$work/c.log"; fail "find_package(cke) consumer did not build"; }
for exe in simple simple_cpp; do
  got="$("$work/consumer/b/$exe" "$model" "Once upon a time" 16 2>"$work/$exe.err")" ||
    { cat "$work/$exe.err"; fail "find_package consumer $exe failed"; }
  [ "$got" = "$want" ] || fail "find_package consumer $exe printed '$got', cke-example-simple '$want'"
done

flags="$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs cke)" || fail "pkg-config cke"
rpath=""
[ "$shared" = 1 ] && rpath="-Wl,-rpath,$p/lib"  # a prefix outside the loader's paths
cc "$src/examples/simple.c" $flags $rpath -o "$work/simple_pc" >"$work/pc.log" 2>&1 ||
  { cat "$work/pc.log"; fail "pkg-config consumer did not build"; }
got="$("$work/simple_pc" "$model" "Once upon a time" 16 2>/dev/null)"
[ "$got" = "$want" ] || fail "pkg-config consumer printed '$got', cke-example-simple '$want'"

if [ "$shared" = 1 ]; then
  for exe in "$work/consumer/b/simple" "$work/simple_pc"; do
    readelf -d "$exe" | grep -q 'NEEDED.*\[libcke\.so' || fail "$exe does not load libcke.so"
  done
  # The exports: every function cke.h declares (with CKE_API or without), and nothing else.
  grep -oE '^(CKE_API )?[A-Za-z_][A-Za-z0-9_ *]*[ *]cke_[a-z0-9_]+\(' "$p/include/cke/runtime/capi/cke.h" |
    grep -oE 'cke_[a-z0-9_]+\($' | tr -d '(' | sort -u >"$work/declared"
  [ "$(wc -l <"$work/declared")" -ge 10 ] || fail "found too few declarations in cke.h"
  nm -D --defined-only "$p/lib/libcke.so" | awk '{print $3}' |
    grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort -u >"$work/exported"
  if ! cmp -s "$work/declared" "$work/exported"; then
    echo "declared in cke.h only:"; comm -23 "$work/declared" "$work/exported"
    echo "exported by libcke.so only:"; comm -13 "$work/declared" "$work/exported" | head -20
    fail "libcke.so exports other symbols than cke.h declares"
  fi
  echo "libcke.so exports the $(wc -l <"$work/declared") functions of cke.h and nothing else"
  # Its data is the prefix's: without the prefix's llama circuit it cannot load the model
  # (it would if it read the source tree).
  rm "$p/share/cke/circuits/llama.yaml"
  "$work/consumer/b/simple" "$model" "Once upon a time" 4 >/dev/null 2>"$work/nodata.err" &&
    fail "libcke.so loaded a llama model without $p/share/cke/circuits/llama.yaml"
  grep -q "$p/share/cke" "$work/nodata.err" ||
    { cat "$work/nodata.err"; fail "libcke.so did not look for its circuits in $p/share/cke"; }
fi
echo "test_install ($([ "$shared" = 1 ] && echo shared || echo static)): $((SECONDS - t0)) s"
echo "1 passed, 0 failed"
