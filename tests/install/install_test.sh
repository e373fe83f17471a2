#!/usr/bin/env bash
# `cmake --install` end to end: install the build into a temporary prefix and move it (an
# install is relocatable), then
#   - the installed cke-run reads its kernel maps and circuits from <prefix>/share/cke (the
#     X-Ray trace names the files) and generates the build's text;
#   - examples/simple.c builds against the install with find_package(cke CONFIG) -> cke::cke
#     and with pkg-config (cke.pc), and both print what the build's cke-example-simple prints.
# usage: install_test.sh BUILD_DIR SOURCE_DIR MODEL
set -uo pipefail
build="$1" src="$2" model="$3"
[ -f "$model" ] || { echo "SKIP: shared test data absent: $model"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

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

want="$("$build/bin/cke-run" -m "$model" -p "Once upon a time" -n 16 --temp 0 -t 1 2>/dev/null)"
got="$("$p/bin/cke-run" -m "$model" -p "Once upon a time" -n 16 --temp 0 -t 1 \
       --xray "$work/xray.json" 2>/dev/null)"
[ "$got" = "$want" ] || fail "installed cke-run printed '$got', the build's '$want'"
grep -q "\"$p/share/cke/circuits/llama.yaml\"" "$work/xray.json" ||
  fail "the installed cke-run did not read its circuit from $p/share/cke"
grep -q "\"$src/kernel_maps" "$work/xray.json" &&
  fail "the installed cke-run read kernel maps from the source tree"

want="$("$build/bin/cke-example-simple" "$model" "Once upon a time" 16 2>/dev/null)"
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
find_package(cke CONFIG REQUIRED)
add_executable(simple "$src/examples/simple.c")
target_link_libraries(simple PRIVATE cke::cke)
set_target_properties(simple PROPERTIES LINKER_LANGUAGE CXX)
CMAKE
cmake -S "$work/consumer" -B "$work/consumer/b" -DCMAKE_PREFIX_PATH="$p" \
  -DCMAKE_BUILD_TYPE=Release >"$work/c.log" 2>&1 && cmake --build "$work/consumer/b" >>"$work/c.log" 2>&1 ||
  { cat "$work/c.log"; fail "find_package(cke) consumer did not build"; }
got="$("$work/consumer/b/simple" "$model" "Once upon a time" 16 2>/dev/null)"
[ "$got" = "$want" ] || fail "find_package consumer printed '$got', cke-example-simple '$want'"

flags="$(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs cke)" || fail "pkg-config cke"
cc "$src/examples/simple.c" $flags -o "$work/simple_pc" >"$work/pc.log" 2>&1 ||
  { cat "$work/pc.log"; fail "pkg-config consumer did not build"; }
got="$("$work/simple_pc" "$model" "Once upon a time" 16 2>/dev/null)"
[ "$got" = "$want" ] || fail "pkg-config consumer printed '$got', cke-example-simple '$want'"
echo "1 passed, 0 failed"
