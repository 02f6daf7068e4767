"""What the command line's OTLP exports met, said once.

The CLI's OTLP exporters send through a :class:`requests.Session` that reports every refused,
timed-out or rejected request here (the exporters themselves log each retry; the CLI keeps
those SDK records out of the console unless ``--log-level debug``). The first failure becomes
one warning sentence naming the collector and the cause; a collector that takes spans but
answers 404/405 to metrics (a traces-only endpoint such as Arize Phoenix, reached through
``OTEL_EXPORTER_OTLP_ENDPOINT``) gets a sentence saying how to stop exporting metrics. Imported
only when the CLI exports (the ``otel`` extra brings ``requests``).
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any
from urllib.parse import urlsplit

import requests
import structlog

from ._environment import Signal

__all__ = ["ExportWatch"]

log = structlog.get_logger(__name__)

_ERRNO = re.compile(r"\[Errno -?\d+\] ([^\"')\]]+)")
_METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"


class ExportWatch:
    """The CLI run's export failures: counted, and the first one said as one warning."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failures = 0
        self.warning: str | None = None  # the one sentence said, once said

    def session(self, signal: Signal) -> requests.Session:
        """A session for ``signal``'s OTLP exporter that reports its failures here."""
        return _WatchedSession(self, signal)

    def failed(self, sentence: str) -> None:
        """Count one failure; say ``sentence`` if it is the first."""
        with self._lock:
            self.failures += 1
            if self.warning is not None:
                return
            self.warning = sentence
        log.warning("telemetry.export_failed", detail=sentence)

    def gave_up(self, endpoint: str | None, budget_s: float) -> None:
        """The exports still running at exit did not finish within ``budget_s``: they are dropped."""
        where = f" to {endpoint}" if endpoint else ""
        self.failed(
            f"OpenTelemetry export{where} did not finish within {budget_s:g} s at exit (the collector "
            "does not answer); the spans and metrics still queued are dropped"
        )


class _WatchedSession(requests.Session):
    """A session whose refused, timed-out and rejected requests are reported to an :class:`ExportWatch`."""

    def __init__(self, watch: ExportWatch, signal: Signal) -> None:
        super().__init__()
        self._watch = watch
        self._signal = signal

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override, unused-ignore]
        target = url.decode() if isinstance(url, bytes) else url
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as exc:
            self._watch.failed(_unreachable(target, exc))
            raise
        if response.status_code >= 400:
            self._watch.failed(_rejected(self._signal, target, response.status_code))
        return response


def collector(url: str) -> str:
    """The collector's address without credentials, path or query: ``http://host:4318``."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def _unreachable(url: str, exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        cause = "no answer in time"
    else:
        found = _ERRNO.search(str(exc))
        cause = found.group(1).strip().lower() if found else type(exc).__name__
    return (
        f"OpenTelemetry export to {collector(url)} failed ({cause}); the run goes on, but its spans "
        "and metrics are not delivered"
    )


def _rejected(signal: Signal, url: str, status: int) -> str:
    path = urlsplit(url).path
    if signal == "metrics" and status in (404, 405) and not os.environ.get(_METRICS_ENDPOINT, "").strip():
        return (
            f"the OpenTelemetry collector at {collector(url)} does not take metrics (HTTP {status} on "
            f"{path}), so it probably takes traces only (as Arize Phoenix does): set "
            f"OTEL_METRICS_EXPORTER=none, or {_METRICS_ENDPOINT} to a collector that takes metrics"
        )
    return (
        f"OpenTelemetry export of {signal} to {collector(url)}{path} failed: HTTP {status}; the run goes "
        f"on, but its {signal} are not delivered"
    )
