#!/usr/bin/env bash
# The main job: install dependencies, build, and run a model end to end.
# Uses ../shared/models/stories260K.gguf when present; otherwise synthesizes a random-weight
# model with cke-gguf (and says so).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/deps.sh"
bash "$root/scripts/build.sh"
bin="${CKE_BUILD_DIR:-$root/build}/bin"
model="$root/../shared/models/stories260K.gguf"
if [ ! -f "$model" ]; then
  echo "[cke] ../shared is absent: synthesizing a tiny RANDOM-WEIGHT model (output is gibberish)"
  model="${CKE_BUILD_DIR:-$root/build}/synth-tiny.gguf"
  [ -f "$model" ] || "$bin/cke-gguf" synth --arch llama --preset tiny --type q8_0 --seed 1 -o "$model"
fi
if [ -x "$bin/cke-run" ]; then
  "$bin/cke-run" -m "$model" -p "Once upon a time" -n 32 --temp 0
else
  "$bin/cke-gguf" info "$model"
fi
