"""Sub-agents' reports: the outputs aging keeps whole (``Age(keep_tools=..., keep_max_chars=...)``).

A tool that runs a sub-agent (Claude Code's ``Task``, named ``Agent`` since
Claude Code 2.1.63) returns the sub-agent's report: short next to what the
sub-agent read, dense, and what the agent goes on to build on. Aged like a
file read, it loses exactly what the agent came back for. A report over
``max_chars`` ages like any other output (the default, 50,000, is what
``tiered``'s ``Truncate`` lets through whole when it arrives: nothing longer
was ever shown whole). On the shared Claude Code sessions the few long
reports (13-37k characters) held most of what the agent later used: a 12,000
cap gave back 1.3 of the 1.8 points of dollars keeping reports costs, and
almost all of what it gained (salient misses 2.9% -> 4.9%, 5.1% without).

A person's later message (a ``user`` message after the task: the human steering
a Claude Code or Codex session, or a harness's own note) is kept whole too when
it has at most ``user_max_chars`` characters (``Age(keep_user_chars=...)``):
it is the task's specification as it changes, and the agents' own compaction
keeps it (Codex's and Claude Code's summaries carry every user message). A later
message that repeats word for word a user message of an earlier iteration is a harness's
boilerplate, not a person's words (mini-swe-agent's format reminder, sent again whenever the model
answers with 0 or 2+ actions): it ages like an output. What "earlier" covers is what the decision
is given (``earlier``: the user messages of the task and of the older iterations of the batch it
ages with; of the older iterations of the chunk it is condensed with), so it is fixed when its
iteration ages, and the same on resume and in replay. Off
in ``tiered``: with 2,000 every ruler of every family fell 0.1-0.3 points, but
tokens saved fell 0.3 (swe-shell 0.6: mini-swe-agent's repeated 459-char
format reminder is a ``user`` message too) and dollars 0.1-0.4.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Set
from dataclasses import dataclass

from ..._messages import Message, ToolCall

__all__ = ["NO_REPORTS", "Reports", "earlier_users", "user_texts"]


@dataclass(frozen=True, slots=True)
class Reports:
    """Outputs of ``tools`` of at most ``max_chars`` characters: kept whole when they age."""

    tools: frozenset[str] = frozenset()
    max_chars: int = 0
    user_max_chars: int = 0  # a later user message of at most this many characters: kept whole

    def keeps_user(self, message: Message, earlier: Set[str] = frozenset()) -> bool:
        """Whether ``message`` is a person's later message aging keeps whole (``earlier``: the texts
        of the earlier user messages; one it repeats word for word is not)."""
        later = message.role == "user" and message.iteration > 0
        return later and 0 < len(message.text) <= self.user_max_chars and message.text not in earlier

    def keeps(self, call: ToolCall | None, output: Message) -> bool:
        """Whether ``output`` (the result of ``call``) is a report aging keeps whole."""
        return call is not None and call.name in self.tools and len(output.text) <= self.max_chars

    def of(self, messages: tuple[Message, ...], earlier: Set[str] = frozenset()) -> tuple[Message, ...]:
        """The reports among one iteration's messages (``earlier``: :meth:`keeps_user`'s)."""
        called = {c.id for m in messages for c in m.tool_calls if c.name in self.tools}
        users = self.user_max_chars > 0 and any(m.role == "user" for m in messages)
        if not called and not users:  # the common case: no report tool ran, no person wrote
            return ()
        return tuple(
            m
            for m in messages
            if (m.role == "tool" and m.tool_call_id in called and len(m.text) <= self.max_chars)
            or self.keeps_user(m, earlier)
        )


def user_texts(messages: Iterable[Message]) -> frozenset[str]:
    """The texts of the user messages among ``messages``."""
    return frozenset(m.text for m in messages if m.role == "user")


def earlier_users(chunk: Iterable[tuple[Message, ...]], reports: Reports) -> Iterator[frozenset[str]]:
    """For each iteration of ``chunk`` (its messages, oldest first), the texts of the user messages
    of the older ones (:meth:`Reports.keeps_user`'s ``earlier``; empty when none is kept whole)."""
    earlier: frozenset[str] = frozenset()
    for messages in chunk:
        yield earlier
        if reports.user_max_chars:
            earlier |= user_texts(messages)


NO_REPORTS = Reports()  # nothing kept whole
