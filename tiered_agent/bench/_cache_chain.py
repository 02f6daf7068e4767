"""The simulated provider caches of one run's policies, simulated once while they send the same requests.

A provider cache's answer to a request depends on the request and on every request before it (the
run's prefix: its time, route and lifetime rules are the step's, the same for every policy). Policies
that have sent the same sequence of requests so far therefore get the same answer for the same next
request. Many do: until a policy first rewrites something, its prompt is the run's recorded messages
(``full``'s always is; ``codex``, ``anthropic-clear`` and ``adk-code`` send them unchanged on most steps
of most runs).

:class:`CacheChains` (one per run) keeps, for each sequence of requests sent so far (a *chain*: the
chain before it and the key of its last request), what that request was billed and a copy of the
simulator's state after it. :class:`CacheTrack` is one policy's cache: while it sends requests a chain
holds, it reads their bills; at the first request none holds, it continues from a copy of the chain's
state (exactly what its own simulator would hold) and simulates from then on. A request whose caller
gives no key (it holds messages of the policy's own, which no other policy sends) leaves the chains
for good. The state copies are bounded (:data:`MAX_SHARED_SLOTS`): past the bound, new requests are
simulated by each policy (the same bills, at the old cost).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from .._messages import Message
from ._caching import CacheSimulator, CacheUse

__all__ = ["MAX_SHARED_SLOTS", "CacheChains", "CacheTrack"]

# The kept states' requests may hold this many messages in all, per run (a kept state holds ~8 lists
# as long as its request: at most ~8M references, ~64 MB). The longest run of ../shared holds ~0.1M
# per chain of requests (the sum of its prompts' lengths), and a run's policies follow 2-3 chains.
MAX_SHARED_SLOTS = 1_000_000


class _Sent(NamedTuple):
    """A chain's last request: its number, its bill, and the simulator's state after it (never sent
    to: copied to continue from it)."""

    chain: int
    use: CacheUse
    rewrote: bool
    state: CacheSimulator


class CacheChains:
    """Every chain of requests a run's policies sent while sending the same ones (see the module)."""

    def __init__(self, max_slots: int = MAX_SHARED_SLOTS) -> None:
        self._sent: dict[tuple[Hashable, ...], _Sent] = {}
        self._slots = max_slots  # what the state copies may still hold

    def get(self, key: tuple[Hashable, ...]) -> _Sent | None:
        return self._sent.get(key)

    def add(
        self, key: tuple[Hashable, ...], use: CacheUse, simulator: CacheSimulator, size: int
    ) -> _Sent | None:
        """Record the request ``key`` (its chain first) that ``simulator`` just billed ``use`` (``size``
        segments); None when the bound is reached (nothing recorded)."""
        if size > self._slots:
            return None
        self._slots -= size
        sent = self._sent[key] = _Sent(len(self._sent) + 1, use, simulator.rewrote, simulator.copy())
        return sent


class CacheTrack:
    """One policy's provider cache across a run: :meth:`CacheSimulator.request`, billed once per run for
    the requests that other policies sent after the same requests (:class:`CacheChains`)."""

    def __init__(self, simulator: CacheSimulator, chains: CacheChains) -> None:
        self._simulator: CacheSimulator | None = simulator  # None: behind, at ``_at``'s state
        self._encoder = simulator.encoder
        self._chains = chains
        self._at: _Sent | None = None  # the chain it follows (None: no request yet, or its own)
        self._own = False  # it left the chains (a request without a key)
        self.rewrote = False  # the last request changed the previous one before its end

    def request(
        self,
        key: Hashable | None,
        messages: Sequence[Message],
        schemas: Sequence[Mapping[str, Any]] = (),
        route: str | None = None,
        *,
        at: float | None = None,
        long_ttl: bool = False,
        new_turn_after_reasoning: bool = False,
        stable: tuple[int, ...] = (),
        partition: str | None = None,
        min_tokens: int | None = None,
    ) -> CacheUse:
        """As :meth:`CacheSimulator.request`; ``key``: the request's messages as other policies' requests
        would have the same key only for the same messages (None: messages of the policy's own)."""
        chained: tuple[Hashable, ...] | None = None
        if key is not None and not self._own:
            tools = id(self._encoder.tools(schemas))  # one array per distinct schema list, for the run
            chained = (
                self._at.chain if self._at else 0,
                key,
                tools,
                route,
                at,
                long_ttl,
                new_turn_after_reasoning,
                stable,
                partition,
                min_tokens,
            )
            found = self._chains.get(chained)
            if found is not None:
                self._at, self._simulator, self.rewrote = found, None, found.rewrote
                return found.use
        simulator = self._simulator if self._simulator is not None else self._behind()
        use = simulator.request(
            messages,
            schemas,
            route,
            at=at,
            long_ttl=long_ttl,
            new_turn_after_reasoning=new_turn_after_reasoning,
            stable=stable,
            partition=partition,
            min_tokens=min_tokens,
        )
        self._simulator, self.rewrote = simulator, simulator.rewrote
        if chained is None:
            self._own, self._at = True, None
        else:
            self._at = self._chains.add(chained, use, simulator, len(messages))
            self._own = self._at is None
        return use

    def _behind(self) -> CacheSimulator:
        """The simulator in the state of the chain followed so far (its own copy)."""
        if self._at is None:
            raise RuntimeError("a cache track without a simulator follows no chain")
        self._simulator = self._at.state.copy()
        return self._simulator
