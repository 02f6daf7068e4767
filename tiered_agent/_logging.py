"""structlog configuration: readable console lines when interactive, JSON lines when asked."""

from __future__ import annotations

import contextlib
import logging
import sys

import structlog

from ._text import terminal_safe
from ._trace import redact

__all__ = ["configure_logging", "redact_sdk_records"]

# SDK loggers whose records the CLI says itself, once and in one sentence, unless --log-level debug
_QUIET_LOGGERS = (
    "opentelemetry.exporter.otlp",  # the OTLP exporters: a warning per retry (telemetry._watch)
    "opentelemetry.sdk._shared_internal",  # the batch span processor: export exceptions
    "opentelemetry.sdk.metrics._internal.export",  # the periodic metric reader: export exceptions
    "mcp.client",  # the MCP client transports: what a server's failure becomes (mcp._client)
)


def _redact(logger: object, method: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    """Log lines pass through the one ``redact``: no key or token reaches the console."""
    redacted: structlog.typing.EventDict = redact(event)
    return redacted


def _printable(logger: object, method: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    """Console lines show a value's control characters and bidi overrides as escapes
    (:func:`~._text.terminal_safe`): text a log or a tool wrote (a run id, a path, an error
    message) never drives the terminal."""
    for key, value in event.items():
        if isinstance(value, str):
            event[key] = terminal_safe(value)
    return event


def configure_logging(*, json: bool = False, level: str = "warning") -> None:
    """Route structlog (and stdlib logging) to stderr, human-readable or as JSON lines, redacted."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderers: list[structlog.typing.Processor]
    if json:  # JSON escapes control characters itself
        renderers = [structlog.processors.JSONRenderer()]
    else:
        renderers = [_printable, structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            _redact,
            *renderers,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr, force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_sdk_records_redacted if numeric <= logging.DEBUG else _sdk_records_on_one_line)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if numeric <= logging.DEBUG else logging.CRITICAL)


def redact_sdk_records() -> None:
    """Every MCP SDK logger the process has made so far redacts its own records and keeps their
    exception to one line (:func:`_sdk_records_redacted`), whoever handles them: a library user who
    never configured logging gets them through Python's last-resort handler, which printed a
    server's stdout line (a secret's first characters in it) with a traceback. Called when an MCP
    server starts (its SDK modules imported by then); adding the filter again is a no-op."""
    for name in list(logging.root.manager.loggerDict):
        if name == "mcp" or name.startswith("mcp."):
            logging.getLogger(name).addFilter(_sdk_records_redacted)


def _sdk_records_on_one_line(record: logging.LogRecord) -> bool:
    """The MCP SDK logs tracebacks for server mistakes (a banner on stdout) the run reports itself:
    keep its records to their message unless ``--log-level debug``."""
    if record.name == "mcp" or record.name.startswith("mcp."):
        record.exc_info = None
        record.exc_text = None
    return True


_MAX_SDK_DETAIL = 300  # characters of an MCP SDK error's redacted detail kept at debug level


def _sdk_records_redacted(record: logging.LogRecord) -> bool:
    """At ``--log-level debug``, a standard-library record reaches the console redacted like
    structlog's, and an MCP SDK record's exception as one line. Such an exception quotes what a
    server wrote (pydantic's message keeps the two ends of a long stdout line, which the
    redaction can no longer recognize as a secret), so its detail is redacted whole, then cut."""
    message = redact(record.getMessage())
    if record.exc_info and (record.name == "mcp" or record.name.startswith("mcp.")):
        message = f"{message}: {_exception_line(record.exc_info[1])}"
        record.exc_info = None
        record.exc_text = None
    record.msg, record.args = terminal_safe(message), None
    return True


def _exception_line(exc: BaseException | None) -> str:
    """``Type: detail``, the detail redacted before it is cut; for a pydantic error, the input it
    refused (whole) and why."""
    if exc is None:
        return ""
    errors = getattr(exc, "errors", None)
    detail = str(exc)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            detail = f"{first.get('msg')}: {first.get('input')!r}"
    text = " ".join(redact(detail).split())
    cut = text if len(text) <= _MAX_SDK_DETAIL else text[: _MAX_SDK_DETAIL - 1] + "…"
    return f"{type(exc).__name__}: {cut}"
