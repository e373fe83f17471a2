#!/usr/bin/env bash
# cke-server from the shell, as docs/server.md shows it: curl against /health, /v1/models,
# a completion, a streamed chat completion ending in [DONE], and the 401 of --api-key.
# Skips (exit 77) without curl or the model.
# usage: curl_test.sh CKE_SERVER_BIN MODEL
set -uo pipefail
bin="$1" model="$2"
skip() { echo "SKIP: $*"; exit 77; }
command -v curl >/dev/null || skip "curl not installed"
[ -f "$model" ] || skip "shared test data absent: $model"
log="$(mktemp)"
"$bin" -m "$model" --port 0 -t 1 -c 256 --chat-template chatml --api-key k 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log")"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$log"; echo "cke-server did not listen"; exit 1; }
url="http://127.0.0.1:$port"
pass=0 fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$3" == *"$2"* ]]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: expected '$2' in: $3"; fi
}
auth=(-H "Authorization: Bearer k" -H "Content-Type: application/json")
check health '"status":"ok"' "$(curl -s "$url/health")"
check models '"id":"stories260K"' "$(curl -s "${auth[@]}" "$url/v1/models")"
check completion '"finish_reason":"length"' "$(curl -s "${auth[@]}" "$url/v1/completions" \
  -d '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}')"
stream="$(curl -sN "${auth[@]}" "$url/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true}')"
check stream-role '"role":"assistant"' "$stream"
check stream-done 'data: [DONE]' "$(printf '%s' "$stream" | tail -n 1)"
check unauthorized '401' "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/models")"
kill -TERM "$pid"
wait "$pid"
check sigterm-exit 'exit 0.' "exit $?."
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
