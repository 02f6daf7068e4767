"""Shared test setup: asyncio backend for anyio, offline litellm, and a network guard.

Any attempt to connect to, or resolve, a non-loopback address fails the test.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from fake_openai_server import FakeOpenAIServer
from hypothesis import settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
for _key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "TIERED_AGENT_MODEL"):
    os.environ.pop(_key, None)

# Property tests draw the same examples on every run (the suite is deterministic; CI must not fail on
# a lucky draw). HYPOTHESIS_PROFILE=explore draws new ones, as a developer hunting for bugs wants.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class NetworkAccessError(AssertionError):
    """Raised when a test tries to reach a host that is not loopback."""


def _is_loopback(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host)
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check_address(address: Any) -> None:
    if isinstance(address, tuple) and address and not _is_loopback(address[0]):
        raise NetworkAccessError(f"test tried to reach non-loopback address {address!r}")


@pytest.fixture(autouse=True)
def _network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            raise NetworkAccessError(f"test tried to resolve non-loopback host {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """Every test starts from structlog's defaults: a test that configured logging (the CLI does)
    must not filter what the next one captures."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server on 127.0.0.1 (tests/fake_openai_server.py)."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
