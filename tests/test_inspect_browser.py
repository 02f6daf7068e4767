"""The trace page in a real headless browser: Debian's chromium driven by Playwright's Python API.

Opens the page of a real recorded run (the scripted agent of ``inspect_runs``), expands
iterations, follows links, and checks that the hidden-output marks and the chart are visible,
that tool output holding ``</script>`` stays text, and that the page made no network request.
Saves a screenshot (the test's tmp dir, and ``bench-out/trace-screenshot.png`` for people).
Skips when chromium or playwright is absent; ``.ci/run`` installs both.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_runs import INJECTION, record_run
from long_trace import write_long_trace

from tiered_agent.inspect import build_run, load_trace, render_page

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
SCREENSHOT_COPY = Path(__file__).resolve().parents[1] / "bench-out" / "trace-screenshot.png"

if not CHROMIUM.exists():
    pytest.skip(
        f"Debian's chromium is not installed ({CHROMIUM} missing): `apt-get install -y chromium` "
        "(.ci/run does it)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
expect = sync_api.expect  # waits (up to 5 s) for what a click renders: a loaded machine renders late


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    trace = record_run(base)
    target = base / "run.html"
    target.write_text(render_page(build_run(load_trace(trace))), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def browser(page_file: Path) -> Iterator[Any]:
    # After page_file: the recorded run uses anyio.run, which cannot start inside Playwright's loop.
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield browser
        browser.close()


class Opened:
    """A page opened from a file, with every request and console error recorded."""

    def __init__(self, browser: Any, path: Path, **context: Any) -> None:
        self.requests: list[str] = []
        self.problems: list[str] = []
        self.context = browser.new_context(**({"viewport": {"width": 1280, "height": 900}} | context))
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on(
            "console", lambda m: self.problems.append(m.text) if m.type in ("error", "warning") else None
        )
        self.page.on("pageerror", lambda exc: self.problems.append(str(exc)))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=20_000)

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def open(self, iteration: int) -> Any:
        details = self.page.locator(f"details.it[data-it='{iteration}']")
        details.locator("> summary").click()
        return details

    def close(self) -> None:
        self.context.close()


def test_page_shows_chart_iterations_and_hidden_outputs(
    browser: Any, page_file: Path, tmp_path: Path
) -> None:
    opened = Opened(browser, page_file)
    page = opened.page
    try:
        chart = page.locator("svg.chart:visible")
        assert chart.count() == 1 and "chart-wide" in (chart.get_attribute("class") or "")
        assert chart.bounding_box()["height"] > 150
        assert page.locator("svg.chart-wide:not([hidden]) polyline.sent").is_visible()
        assert page.locator("svg.chart-wide:not([hidden]) .hit").count() == 7
        headline = page.locator(".headline").inner_text()
        assert "% saved" in headline and "prompt tokens sent vs" in headline
        assert page.locator("details.it").count() == 8  # the task and 7 iterations
        assert page.locator("details.it .msg").count() == 0  # nothing rendered before it is opened

        first = opened.open(1)
        mark = first.locator(".mark-truncated")
        expect(mark).to_be_visible()
        text = mark.inner_text()
        assert "the model saw 400 of 11,589 chars" in text
        assert 'context_retrieve(tool_call_id="call_read")' in text
        assert first.locator(".msg").count() == 2  # the assistant's call and its output only

        fifth = opened.open(5)
        spilled = fifth.locator(".mark-spilled")
        expect(spilled).to_be_visible()
        assert "call_log.out" in spilled.inner_text()
        preview = fifth.locator(".msg[data-call-id='call_log'] pre")
        before = len(preview.inner_text())
        fifth.locator(".msg[data-call-id='call_log'] button.more").click()
        page.wait_for_function(  # the longer preview, once rendered
            "n => document.querySelector(\"details.it[data-it='5'] .msg[data-call-id='call_log'] pre\")"
            ".textContent.length > n",
            arg=2_200,
        )
        assert before < 2_200 < len(preview.inner_text())  # show more: 4x as much

        third = opened.open(3)  # the output holding </script> and an <img onerror>: shown as text
        assert INJECTION in third.locator(".msg[data-call-id='call_notes'] pre").inner_text()
        assert page.evaluate("window.__pwned") is None and page.locator("img").count() == 0
        expect(third.locator(".msg.is-error .mark-error")).to_be_visible()

        second = opened.open(2)  # the retrieval links to what it recovered
        second.locator(".mark-retrieval button.ref").click()
        flashed = page.locator("details.it[data-it='1'] .msg[data-call-id='call_read']")
        expect(flashed).to_have_class(re.compile(r"flash$"))

        page.locator("svg.chart-wide:not([hidden]) .hit[data-it='6']").click()  # the chart opens iterations
        expect(page.locator("details.it[data-it='6']")).to_have_attribute("open", re.compile(".*"))
        page.locator("button[data-scale='linear']").click()
        expect(page.locator("svg.chart-linear.chart-wide")).to_be_visible()
        expect(page.locator("svg.chart-log.chart-wide")).to_be_hidden()

        page.locator("button[data-filter='error']").click()
        expect(page.locator("details.it:visible")).to_have_count(1)
        visible = [d.get_attribute("data-it") for d in page.locator("details.it:visible").all()]
        assert visible == ["3"]
        page.locator("button[data-filter='all']").click()
        page.locator("button[data-scale='log']").click()
        page.locator("details.it[data-it='6'] > summary").click()  # close what the picture does not need
        page.locator("details.it[data-it='3'] > summary").click()
        page.locator("details.it[data-it='2'] > summary").click()
        page.evaluate("window.scrollTo(0, 0)")

        shot = tmp_path / "trace-screenshot.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        SCREENSHOT_COPY.parent.mkdir(exist_ok=True)
        shutil.copy(shot, SCREENSHOT_COPY)

        assert opened.requests == [page_file.as_uri()]  # the page itself, nothing else
        assert opened.problems == []  # no script error, no CSP violation
    finally:
        opened.close()


def test_long_run_page_renders_lazily_with_capped_previews(browser: Any, tmp_path: Path) -> None:
    trace = write_long_trace(tmp_path / "long.jsonl")
    target = tmp_path / "long.html"
    target.write_text(render_page(build_run(load_trace(trace))), encoding="utf-8")
    opened = Opened(browser, target)
    page = opened.page
    try:
        assert page.locator("details.it").count() == 151
        assert page.locator("details.it .msg").count() == 0
        page.locator("#expand-all").click()
        assert page.locator("details.it .msg").count() == 2 + 2 * 150
        longest = page.evaluate(
            "Math.max(...[...document.querySelectorAll('.msg pre')].map(p => p.textContent.length))"
        )
        assert longest < 2_200  # 2,000 chars and the gap note, out of 1,000,000
        output = page.locator("details.it[data-it='150'] .msg.role-tool")
        assert "truncated in the prompt" not in output.inner_text()  # the last output was never cut
        hundred = page.locator("details.it[data-it='100'] .msg.role-tool")
        assert "the model saw 8,000 of 1,000,000 chars" in hundred.inner_text()
        for _ in range(3):
            button = hundred.locator("button.more")
            if button.is_visible():
                button.click()
        assert "not embedded in this page" in hundred.locator("pre").inner_text()
        assert opened.requests == [target.as_uri()] and opened.problems == []
    finally:
        opened.close()


PHONE_SHOT = Path("/tmp/trace-page-phone.png")
SMALLEST_TEXT = """() => Math.min(...[...document.querySelectorAll('svg.chart text')]
    .filter((t) => t.getClientRects().length)
    .map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a))"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def test_page_fits_a_390_px_phone_with_readable_chart_text(
    browser: Any, page_file: Path, tmp_path: Path
) -> None:
    phone = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True}
    opened = Opened(browser, page_file, **phone)
    page = opened.page
    try:
        assert page.evaluate("document.documentElement.clientWidth") == 390
        chart = page.locator("svg.chart:visible")
        assert chart.count() == 1 and "chart-narrow" in (chart.get_attribute("class") or "")
        assert page.evaluate(SMALLEST_TEXT) >= 10  # px on the screen: the axis labels and title
        assert chart.bounding_box()["height"] > 200
        assert page.evaluate(OVERFLOW) == 0
        page.locator("#expand-all").click()  # every message, mark and call, long lines included
        expect(page.locator("details.it[data-it='5'] .mark-spilled")).to_be_visible()
        assert page.evaluate(OVERFLOW) == 0
        page.locator("button[data-scale='linear']").click()
        expect(page.locator("svg.chart-linear.chart-narrow")).to_be_visible()
        assert page.evaluate(SMALLEST_TEXT) >= 10 and page.evaluate(OVERFLOW) == 0
        page.locator("svg.chart-narrow:not([hidden]) .hit[data-it='3']").click()  # narrow hits work too
        expect(page.locator("details.it[data-it='3']")).to_have_attribute("open", re.compile(".*"))
        page.locator("#collapse-all").click()
        page.evaluate("window.scrollTo(0, 0)")
        shot = tmp_path / "phone.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        shutil.copy(shot, PHONE_SHOT)
        assert opened.requests == [page_file.as_uri()] and opened.problems == []
    finally:
        opened.close()
