#!/usr/bin/env bash
# scripts/llama-links.sh SRC_LIB OUT_LIB — links every file of the prebuilt llama.cpp's lib/
# into OUT_LIB. Its version links (libllama.so.0 -> libllama.so.0.0.0) may arrive as small
# files naming their target (a copy that does not keep links; the loader then fails with "file
# too short"): those are remade as relative links, everything else links to the prebuilt file.
set -euo pipefail
src="${1:?usage: llama-links.sh SRC_LIB OUT_LIB}"
out="${2:?usage: llama-links.sh SRC_LIB OUT_LIB}"
mkdir -p "$out"
for f in "$src"/*; do
  n="$(basename "$f")"
  if [ -L "$f" ]; then
    ln -sfn "$(readlink "$f")" "$out/$n"
  elif [ "$(stat -c %s "$f")" -lt 64 ] && ! [ -x "$f" ]; then
    ln -sfn "$(cat "$f")" "$out/$n"
  else
    ln -sfn "$f" "$out/$n"
  fi
done
