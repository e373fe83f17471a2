#!/usr/bin/env bash
# The official `openai` npm package against cke-server: completions, chat, streaming.
# Skips (exit 77) when node/npm are missing, the model is absent or `npm install openai`
# fails (it needs the npm registry).
# usage: openai_node_test.sh CKE_SERVER_BIN MODEL SOURCE_DIR
set -uo pipefail
bin="$1" model="$2" src="$3"
skip() { echo "SKIP: $*"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || skip "node or npm not installed"
[ -f "$model" ] || skip "shared test data absent: $model"
work="$(mktemp -d)"
log="$work/server.log"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
( cd "$work" && npm init -y >/dev/null 2>&1 &&
  timeout 180 npm install --no-audit --no-fund --silent openai >/dev/null 2>&1 ) ||
  skip "npm install openai failed (no registry access?)"

"$bin" -m "$model" --port 0 -t 1 -c 512 --chat-template chatml --api-key node-test 2>"$log" &
pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log")"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "cke-server did not start"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$log"; echo "cke-server did not listen"; exit 1; }

cp "$src/tests/server/openai_client.mjs" "$work/"
( cd "$work" && CKE_PORT="$port" node openai_client.mjs )
rc=$?
kill -TERM "$pid"
wait "$pid"
src_rc=$?
pid=""
[ $rc -eq 0 ] || exit $rc
[ $src_rc -eq 0 ] || { echo "cke-server exited $src_rc after SIGTERM"; exit 1; }
echo "1 passed, 0 failed"
