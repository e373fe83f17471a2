#!/usr/bin/env python3
"""Aggregate decode tokens/s of a cke-server under N concurrent clients (docs/server.md).

  bench/server_clients.py --server build/bin/cke-server -m model.gguf --clients 1,2,4 \\
      [--tokens 64] [-t 2] [--eos 2] [-- extra cke-server flags]

For each N: starts `cke-server --parallel N`, waits for /health, sends one warm-up request,
then N clients at once, each a greedy /v1/completions of --tokens tokens (EOS banned through
logit_bias, so every client generates exactly that many) after a short prompt of its own.
Reports per N: the wall time from the first request to the last response, the tokens
generated, and tokens/s over all clients. Uses only the Python standard library.
"""
import argparse
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request

PROMPTS = ["Once upon a time", "The little dog", "In the morning", "She opened the door",
           "A long way from home", "The old man said", "It was raining", "They ran to"]


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.loads(r.read())


def wait_health(port, proc, timeout=600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("cke-server exited")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("cke-server did not come up")


def run(args, n, port):
    cmd = [args.server, "-m", args.model, "--parallel", str(n), "-t", str(args.threads),
           "-c", str(args.ctx), "--port", str(port)] + args.extra
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_health(port, proc)
        body = lambda p: {"prompt": p, "max_tokens": args.tokens, "temperature": 0,
                          "logit_bias": {str(args.eos): -100}}
        post(port, body(PROMPTS[0]) | {"max_tokens": 4})  # warm-up
        results = [None] * n
        def client(i):
            results[i] = post(port, body(PROMPTS[i % len(PROMPTS)]))
        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
        tokens = sum(r["usage"]["completion_tokens"] for r in results)
        return wall, tokens
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-c", "--ctx", type=int, default=256)
    ap.add_argument("--eos", type=int, default=2)
    ap.add_argument("--port", type=int, default=18900 + os.getpid() % 1000)
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
    print(f"{'clients':>7} {'wall s':>8} {'tokens':>6} {'tok/s':>8}  {args.server}")
    for n in [int(x) for x in args.clients.split(",")]:
        wall, tokens = run(args, n, args.port)
        print(f"{n:>7} {wall:>8.2f} {tokens:>6} {tokens / wall:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
