"""The demo server under concurrent load: latency of each kind of request and failures.

    python benchmarks/bench_serve.py [--concurrency 50] [--rounds 2] [--port 8791]

Starts `debatelab serve` on the judges in your cache (gold, sparse and the K = 6 pixel judge:
`debatelab run`, `debatelab train --kind pixel --pixels 6`) and fires `--concurrency` requests
at once, a mix of classify, cell-grid moves (each a new image: its all-mask probabilities and
game solve are not cached yet), pixel-game MCTS moves (100 rollouts) and bad requests.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen([sys.executable, "-m", "debatelab", "serve", "--port",
                               str(args.port)], stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        for _ in range(600):
            try:
                info = httpx.get(url + "/api/info").json()
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert info["models"]["gold"] and info["models"]["sparse"] and 6 in info["models"]["pixel"]
        samples = [httpx.get(url + "/api/sample", params={"index": i}).json()
                   for i in range(args.concurrency * args.rounds)]  # fmt: skip

        def request(i):
            s = samples[i]
            kind = ["classify", "cells", "pixels", "bad"][i % 4]
            body = {"image": s["image"]}
            if kind == "cells":
                body.update(label=s["label"], protocol="debate4", rule="asym", play=True)
            elif kind == "pixels":
                body.update(honest=s["label"], liar=(s["label"] + 1) % 10, pixels=6,
                            rollouts=100, play=True)  # fmt: skip
            elif kind == "bad":
                body = {"image": s["image"][:100]}
            t = time.perf_counter()
            r = httpx.post(f"{url}/api/{'classify' if kind == 'bad' else kind}", json=body,
                           timeout=300)  # fmt: skip
            return kind, r.status_code, time.perf_counter() - t

        for round_ in range(args.rounds):
            ids = range(round_ * args.concurrency, (round_ + 1) * args.concurrency)
            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.concurrency) as pool:
                results = list(pool.map(request, ids))
            wall = time.perf_counter() - t0
            print(f"round {round_ + 1}: {args.concurrency} concurrent requests in {wall:.2f} s")
            for kind in ("classify", "cells", "pixels", "bad"):
                rows = [(c, t) for k, c, t in results if k == kind]
                codes = sorted({c for c, _ in rows})
                times = [t for _, t in rows]
                print(f"  {kind:8s} n={len(rows):3d} status {codes}  median "
                      f"{statistics.median(times):.2f} s  max {max(times):.2f} s")  # fmt: skip
        alive = httpx.get(url + "/api/info").status_code
        print(f"server still answers: HTTP {alive}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
