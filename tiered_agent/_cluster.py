"""Ray for the bench's replay and for batches: ``--ray [ADDRESS]``, the connection, its lifetime.

``local`` starts a Ray instance on this machine for the command and stops it afterwards (no
dashboard); ``auto`` joins the cluster Ray finds (``RAY_ADDRESS``, or the one ``ray start`` ran
here); ``HOST:PORT`` joins the cluster whose head listens there; ``ray://HOST:PORT`` goes through
Ray Client. Ray reads its own environment when it is imported (``RAY_AUTH_MODE=token`` with
``RAY_AUTH_TOKEN`` or a token file, for clusters started that way), and it is imported only here,
only when ``--ray`` is given: the extra ``ray`` installs it (``pip install 'tiered-agent[ray]'``).

Every node must be able to import the same tiered-agent (install it on the nodes, or start them
with it on ``PYTHONPATH``). Provider keys are never shipped to the nodes: a batch on a cluster
reads them from each node's own environment.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from ._errors import ConfigurationError, TieredAgentError
from ._workers import configure_worker_logging

__all__ = [
    "RAY_INSTALL_HINT",
    "RayAddress",
    "RaySession",
    "RayWorkerLost",
    "import_ray",
    "map_on_ray",
    "node_id",
    "ray_session",
    "require_ray",
]

log = structlog.get_logger(__name__)

RAY_INSTALL_HINT = "pip install 'tiered-agent[ray]'"
_HOST_PORT = re.compile(r"(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):(\d{1,5})")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain")
T = TypeVar("T")


class RayWorkerLost(TieredAgentError):
    """Ray lost the work (a worker or a node died, an object was lost) and could not redo it."""


@dataclass(frozen=True, slots=True)
class RayAddress:
    """Where to run: ``local``, ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT`` (validated)."""

    address: str

    def __post_init__(self) -> None:
        if self.address in ("local", "auto"):
            return
        match = _HOST_PORT.fullmatch(self.address)
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise ConfigurationError(
                f"--ray takes 'local', 'auto', HOST:PORT or ray://HOST:PORT, not {self.address!r} "
                "(to pass paths after it, write --ray=local)"
            )

    @property
    def local(self) -> bool:
        return self.address == "local"

    @property
    def host(self) -> str | None:
        match = _HOST_PORT.fullmatch(self.address)
        return match.group(1).strip("[]") if match else None

    @property
    def loopback(self) -> bool:
        """Whether the cluster is on this machine's loopback (then the driver joins it on 127.0.0.1)."""
        host = self.host
        if host is None:
            return False
        if host in _LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def __str__(self) -> str:
        return self.address


@dataclass(frozen=True, slots=True)
class RaySession:
    """A connected Ray: its CPUs and nodes when the command started."""

    address: RayAddress
    cpus: int
    nodes: int


def require_ray() -> None:
    """Fail in one sentence, before any work, when Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise ConfigurationError(f"--ray needs Ray, which is not installed: {RAY_INSTALL_HINT}")


def import_ray() -> Any:
    """The ``ray`` module (imported on first use only)."""
    require_ray()
    return importlib.import_module("ray")


def node_id() -> str:
    """The Ray node this code runs on (in a Ray task or actor)."""
    ray = import_ray()
    return str(ray.get_runtime_context().get_node_id())


@contextmanager
def ray_session(address: RayAddress, *, log_level: int = logging.WARNING) -> Iterator[RaySession]:
    """Connect to Ray for the duration of the block (start it, for ``local``), then disconnect.

    When this process is already connected (an application called ``ray.init`` itself), that
    connection is used and left open."""
    ray = import_ray()
    owned = not ray.is_initialized()
    if owned:
        _connect(ray, address, log_level)
    try:
        resources = ray.cluster_resources()
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        session = RaySession(address, cpus=max(1, int(resources.get("CPU", 1))), nodes=nodes)
        log.info("ray.connected", address=str(address), cpus=session.cpus, nodes=nodes, reused=not owned)
        yield session
    finally:
        if owned:
            ray.shutdown()


def _connect(ray: Any, address: RayAddress, log_level: int) -> None:
    options: dict[str, Any] = {
        "logging_level": max(log_level, logging.WARNING) if log_level > logging.DEBUG else logging.DEBUG,
        "log_to_driver": True,  # the workers' warnings reach this console
    }
    if address.local:
        options["include_dashboard"] = False
    elif address.loopback and not address.address.startswith("ray://"):
        options["_node_ip_address"] = "127.0.0.1"  # joins a cluster on this machine's loopback only
    try:
        ray.init(address=address.address, **options)
    except (ConnectionError, RuntimeError, ValueError, OSError) as exc:
        where = "start a local Ray" if address.local else f"connect to the Ray cluster at {address}"
        raise ConfigurationError(f"cannot {where}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def map_on_ray(
    function: Callable[..., T],
    items: Iterable[tuple[Any, ...]],
    *,
    shared: tuple[Any, ...] = (),
    in_flight: int,
    log_level: int = logging.WARNING,
) -> Iterator[tuple[T, str]]:
    """``function(*shared, *item)`` for each item in Ray tasks (one CPU each), at most ``in_flight``
    at a time; yields each result with the node that computed it, as soon as it is done.

    ``shared`` is stored once in Ray's object store, not sent with every task. ``function`` must be
    importable by the workers (a module-level function of an installed package). Needs a
    connection (:func:`ray_session`)."""
    ray = import_ray()
    remote = ray.remote(num_cpus=1)(_call_on_node)
    stored = ray.put(shared)
    queue = iter(items)
    pending: list[Any] = []
    placements: Counter[str] = Counter()

    def submit() -> None:
        for item in queue:
            pending.append(remote.remote(log_level, function, stored, item))
            return

    for _ in range(max(1, in_flight)):
        submit()
    while pending:
        ready, _ = ray.wait(pending, num_returns=1)
        for ref in ready:
            pending.remove(ref)
            result, node = _get(ray, ref)
            placements[node] += 1
            submit()
            yield result, node
    unit = getattr(function, "__qualname__", type(function).__name__)  # which map (a bench runs two)
    log.info(
        "ray.tasks_done", unit=unit, tasks=sum(placements.values()), nodes=dict(sorted(placements.items()))
    )


def _get(ray: Any, ref: Any) -> tuple[Any, str]:
    try:
        value: tuple[Any, str] = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:  # the function raised: re-raise what it raised
        raise exc.as_instanceof_cause() from None
    except ray.exceptions.RayError as exc:
        raise RayWorkerLost(f"Ray lost a task (a worker or a node died?): {_first_line(exc)}") from exc
    return value


def _call_on_node(
    level: int, function: Callable[..., T], shared: tuple[Any, ...], item: tuple[Any, ...]
) -> tuple[T, str]:
    """One Ray task: logging like the driver's, then the work; returns it with this node's id."""
    configure_worker_logging(level)
    return function(*shared, *item), node_id()
