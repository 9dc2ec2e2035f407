"""Take the docs' screenshots of the demo with the judges in your cache.

    python docs/screenshots.py [--port 8790]

Starts `debatelab serve`, drives Debian's chromium with Playwright, writes docs/img/*.png.
Needs the MNIST gold and sparse judges (`debatelab run`) and the K = 6 pixel judge
(`debatelab train --kind pixel --pixels 6`) in the cache.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent / "img"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "debatelab", "serve", "--port", str(args.port)]
    )
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/api/info")
                break
            except OSError:
                time.sleep(0.1)
        OUT.mkdir(exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1380, "height": 640})
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            draw_seven(page)
            page.wait_for_selector("#gold-pred[data-cls]")
            page.screenshot(path=str(OUT / "classify.png"))
            page.evaluate(
                "api('/api/sample?index=0').then((s) => { paintImage(draw, s.image, 28);"
                " return classify(s.image, false, s.label); })"
            )
            page.wait_for_function("app.truth === 7")
            page.click("#tab-debate")
            page.fill("#rollouts", "300")
            page.click("#start")
            page.wait_for_selector("#winner", timeout=300_000)
            page.screenshot(path=str(OUT / "debate-pixels.png"))
            page.select_option("#game", "cells")
            page.select_option("#rule", "last_b")
            page.click("#start")
            page.wait_for_selector("#winner", timeout=120_000)
            page.screenshot(path=str(OUT / "debate-cells.png"))
            page.click("#tab-about")
            page.screenshot(path=str(OUT / "about.png"))
            browser.close()
    finally:
        server.terminate()
        server.wait()
    print(f"screenshots in {OUT}")


def draw_seven(page) -> None:
    box = page.locator("#draw").bounding_box()

    def at(fx, fy):
        return box["x"] + box["width"] * fx, box["y"] + box["height"] * fy

    for stroke in ([(0.25, 0.22), (0.75, 0.22)], [(0.75, 0.22), (0.45, 0.85)]):
        (x0, y0), (x1, y1) = at(*stroke[0]), at(*stroke[1])
        page.mouse.move(x0, y0)
        page.mouse.down()
        for i in range(1, 16):
            page.mouse.move(x0 + (x1 - x0) * i / 15, y0 + (y1 - y0) * i / 15)
        page.mouse.up()


if __name__ == "__main__":
    main()
