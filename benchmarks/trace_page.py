"""The trace page on a long run: 150 iterations of 1 MB tool outputs (a ~150 MB trace).

Measures the page's size, the time to build it, and, in Debian's chromium (if
installed), the time until the page is ready, to expand every iteration, and
the JS heap afterwards. The run is synthetic (tests/long_trace.py).

    python benchmarks/trace_page.py [--iterations 150] [--output-chars 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from long_trace import write_long_trace  # noqa: E402 - from tests/

from tiered_agent.inspect import build_run, load_trace, render_page  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def in_browser(page: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        tab.goto(page.as_uri())
        tab.wait_for_selector("body[data-ready='1']")
        ready = time.perf_counter() - started
        started = time.perf_counter()
        tab.click("#expand-all")
        tab.wait_for_function("document.querySelectorAll('.msg').length > 300")
        expand = time.perf_counter() - started
        heap = tab.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
        nodes = tab.evaluate("document.getElementsByTagName('*').length")
        browser.close()
    return {"ready_s": ready, "expand_all_s": expand, "heap_mb": heap / 1e6, "dom_nodes": nodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--output-chars", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="Write the trace and the page here instead of a temp dir.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        trace = write_long_trace(
            folder / "long.jsonl", iterations=args.iterations, output_chars=args.output_chars
        )
        started = time.perf_counter()
        page_text = render_page(build_run(load_trace(trace)))
        build = time.perf_counter() - started
        page = folder / "long.html"
        page.write_text(page_text, encoding="utf-8")
        print(f"trace: {trace.stat().st_size / 1e6:,.1f} MB, {args.iterations} iterations")
        print(f"page:  {page.stat().st_size / 1e6:,.2f} MB, built in {build:.2f} s (read, views, render)")
        if CHROMIUM.exists():
            got = in_browser(page)
            print(
                f"chromium: ready in {got['ready_s']:.2f} s, expand all in {got['expand_all_s']:.2f} s, "
                f"{got['dom_nodes']:,.0f} DOM nodes, JS heap {got['heap_mb']:.1f} MB"
            )
        else:
            print(f"chromium: not installed ({CHROMIUM}); browser timings skipped")


if __name__ == "__main__":
    main()
