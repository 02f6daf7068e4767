"""A context policy: a name and an ordered sequence of small steps, plus the settings of its run.

Compose your own from :mod:`tiered_agent.context.steps`::

    from tiered_agent import Agent, Policy
    from tiered_agent.context.steps import Dedup, Elide, Summarize, Truncate

    steps = [Dedup(), Summarize(every=10, keep=2), Elide(min_chars=400), Truncate(max_chars=4000)]
    lean = Policy("lean", steps)
    agent = Agent("openai/gpt-4o-mini", context=lean)

The steps that reshape the prompt apply in the order given, each to what the
earlier ones left (:func:`~.pipeline._build.build_prompt`); the others act at the tool
dispatch (``Dedup``) or decide when the run summarizes (``Summarize``,
``Compact``). A policy is plain data: :meth:`Policy.to_dict` and
:meth:`Policy.from_dict` round-trip it (the bench JSON and the trace hold it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .._errors import ConfigurationError
from ._step import Step

__all__ = ["Policy"]

S = TypeVar("S", bound=Step)


@dataclass(frozen=True, slots=True)
class Policy:
    """A named, ordered sequence of steps; validated on construction.

    Run settings: ``summary_model`` writes the summaries (a litellm model; None:
    the deterministic digest) within ``summary_max_tokens`` and
    ``summary_timeout_s``; the run refuses a prompt over ``hard_limit`` of the
    context window (``context_window`` overrides what litellm knows);
    ``retrieval`` registers ``context_retrieve`` (pages of
    ``retrieve_page_tokens``) whenever a step can hide part of the history;
    with ``retrieval_schema="when_shown"`` its schema is sent only from the
    first prompt that names a retrieval call on (until then the prompt is the
    full history's, schema included: nothing to retrieve, nothing to pay for).
    """

    name: str
    steps: tuple[Step, ...] = ()
    summary_model: str | None = None
    summary_max_tokens: int = 500
    summary_timeout_s: float = 60.0
    hard_limit: float = 0.95
    context_window: int | None = None
    retrieval: bool = True
    retrieve_page_tokens: int = 4000
    retrieval_schema: Literal["always", "when_shown"] = "always"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))  # a list is welcome too
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"a policy needs a non-empty name, got {self.name!r}")
        _check_steps(self.name, self.steps)
        _check_settings(self)
        for step in self.steps:
            step.check(self)  # what a step needs of the policy around it

    # ------------------------------------------------------------------ queries
    def find(self, kind: type[S]) -> S | None:
        """The policy's step of this type, or None."""
        return next((step for step in self.steps if isinstance(step, kind)), None)

    @property
    def summarizes(self) -> bool:
        """Whether the run keeps a summarizer (rolling summaries or compaction)."""
        return any(step.summarizes for step in self.steps)

    @property
    def retrieval_active(self) -> bool:
        """``context_retrieve`` is registered whenever a step can hide part of the history."""
        return self.retrieval and any(step.hides for step in self.steps)

    # ------------------------------------------------------------------ variants
    def replace(self, **changes: Any) -> Policy:
        return dataclasses.replace(self, **changes)

    def without(self, *kinds: str | type[Step]) -> Policy:
        """The policy minus its steps of these kinds (names like ``"dedup"`` or step types)."""
        names = {k if isinstance(k, str) else k.kind for k in kinds}
        return self.replace(steps=tuple(s for s in self.steps if s.kind not in names))

    # ------------------------------------------------------------------ data
    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "steps": [{"step": "truncate", "max_chars": 8000, ...}, ...], <settings>}``."""
        settings = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return settings | {"steps": [step.to_dict() for step in self.steps]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """The policy :meth:`to_dict` wrote; a clear :class:`ConfigurationError` for anything else."""
        from .steps import step_from_dict

        fields = dict(data)
        steps = [step_from_dict(step) for step in fields.pop("steps", ())]
        try:
            return cls(steps=tuple(steps), **fields)
        except TypeError as exc:
            raise ConfigurationError(f"invalid policy fields: {exc}") from None


def _check_steps(name: str, steps: Iterable[object]) -> None:
    kinds: list[str] = []
    for step in steps:
        if not isinstance(step, Step):
            raise ConfigurationError(
                f"policy {name!r}: {step!r} is not a step (see tiered_agent.context.steps)"
            )
        if step.kind in kinds:
            raise ConfigurationError(f"policy {name!r} has two {step.kind!r} steps; give it one")
        kinds.append(step.kind)


def _check_settings(policy: Policy) -> None:
    window = policy.context_window
    if window is not None and (not isinstance(window, int) or window < 1):
        raise ConfigurationError(f"Policy.context_window must be a positive integer or None, got {window!r}")
    if not 0 < policy.hard_limit <= 1:
        raise ConfigurationError("Policy.hard_limit must be in (0, 1]")
    for name in ("summary_max_tokens", "retrieve_page_tokens"):
        if getattr(policy, name) < 1:
            raise ConfigurationError(f"Policy.{name} must be >= 1")
    if policy.summary_timeout_s <= 0:
        raise ConfigurationError("Policy.summary_timeout_s must be > 0")
    if policy.retrieval_schema not in ("always", "when_shown"):
        raise ConfigurationError(
            f"Policy.retrieval_schema must be 'always' or 'when_shown', got {policy.retrieval_schema!r}"
        )
