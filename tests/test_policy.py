"""Policy as data: validation, presets as step lists, the flat ContextConfig convenience, serialization."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tiered_agent import Agent, ContextConfig, Policy
from tiered_agent._errors import ConfigurationError
from tiered_agent.bench._replay import available_policies, policy_config
from tiered_agent.context._presets import PRESETS, as_policy, preset
from tiered_agent.context.steps import (
    STEP_TYPES,
    Age,
    Clear,
    Compact,
    Dedup,
    Elide,
    Mask,
    Summarize,
    Truncate,
    Window,
    step_from_dict,
)
from tiered_agent.testing import FunctionModel

# The presets as they were written before policies were step lists: the flat convenience must
# build exactly the same steps (the golden check proves those steps build the same prompts).
# ``tiered`` has aged since (an Age step, which the flat knobs do not describe): its flat form is
# the previous default, kept here as the reference it replaced.
_FULL: dict[str, Any] = dict(
    max_output_chars=None,
    dedup=False,
    window_iterations=None,
    summary_every=None,
    compact_at=None,
    retrieval=False,
)
FLAT_PRESETS = {
    "tiered": ContextConfig(
        name="tiered", max_output_chars=8000, window_iterations=1, window_keep_actions=True, summary_every=25
    ),
    "kb-labs-adr": ContextConfig(name="kb-labs-adr", truncation_mode="head", compact_at=None),
    "full": ContextConfig("full", **_FULL),
    "masking": ContextConfig("masking", **_FULL | {"mask_keep_outputs": 10}),
    "anthropic-clear": ContextConfig(
        "anthropic-clear", **_FULL | {"clear_trigger_tokens": 100_000, "clear_keep_outputs": 3}
    ),
    "codex": ContextConfig(
        "codex",
        **_FULL
        | {
            "max_output_chars": 10 * 1024,
            "max_output_lines": 256,
            "compact_at": 0.90,
            "compact_keep_iterations": 0,
        },
    ),
    "adk-code": ContextConfig(
        "adk-code",
        **_FULL
        | {
            "max_output_chars": 10 * 1024,
            "max_output_lines": 256,
            "compact_at": 0.70,
            "compact_keep_iterations": 5,
        },
    ),
    "adk-compaction": ContextConfig("adk-compaction", **_FULL | {"summary_every": 5, "summary_overlap": 2}),
}


@pytest.mark.parametrize("name", [n for n in PRESETS if n != "tiered"])
def test_the_flat_convenience_builds_each_preset(name: str) -> None:
    # one configuration language: ContextConfig(...) is a Policy
    assert isinstance(FLAT_PRESETS[name], Policy) and FLAT_PRESETS[name] == PRESETS[name]


def test_the_previous_default_is_still_one_flat_config_away() -> None:
    steps = FLAT_PRESETS["tiered"].steps
    assert [s.kind for s in steps] == ["dedup", "summarize", "compact", "elide", "truncate"]


def test_presets_are_named_step_lists() -> None:
    assert [s.kind for s in PRESETS["tiered"].steps] == ["dedup", "compact", "age", "truncate", "tidy"]
    assert (
        PRESETS["tiered"].find(Age)
        == Age(
            reasoning="novel",
            fade_after=5,
            fade_keep=4,
            fade_cold=True,
            shown_by="outputs",
            written_chars=24_000,
            focus_reads=3,
        )
        and PRESETS["tiered"].retrieval_schema == "when_shown"
    )
    assert PRESETS["full"].steps == () and not PRESETS["full"].retrieval_active
    assert all(name == policy.name for name, policy in PRESETS.items())
    assert preset("codex") is PRESETS["codex"]
    with pytest.raises(ConfigurationError, match="unknown context policy 'nope'; choose one of tiered"):
        preset("nope")


def test_as_policy_takes_a_name_or_a_policy() -> None:
    assert as_policy("tiered") is PRESETS["tiered"]
    assert as_policy(FLAT_PRESETS["codex"]) == PRESETS["codex"]
    custom = Policy("mine", [Truncate(max_chars=100)])
    assert as_policy(custom) is custom
    assert Agent(FunctionModel.scripted([]), context=custom).context is custom
    assert Agent(FunctionModel.scripted([]), context=FLAT_PRESETS["full"]).context == PRESETS["full"]


# ----------------------------------------------------------------------------- serialization
@pytest.mark.parametrize("name", available_policies())
def test_every_policy_round_trips_through_json(name: str) -> None:
    policy = policy_config(name)
    data = orjson.loads(orjson.dumps(policy.to_dict()))
    assert Policy.from_dict(data) == policy
    assert data["name"] == name and [s["step"] for s in data["steps"]] == [s.kind for s in policy.steps]


def test_the_serialized_form_is_plain_and_ordered() -> None:
    policy = Policy("p", [Mask(keep=4), Truncate(max_chars=300, mode="head")], retrieval=False)
    assert policy.to_dict() == {
        "name": "p",
        "steps": [
            {"step": "mask", "keep": 4},
            {
                "step": "truncate",
                "max_chars": 300,
                "max_lines": None,
                "mode": "head",
                "defer_max_chars": None,
            },
        ],
        "summary_model": None,
        "summary_max_tokens": 500,
        "summary_timeout_s": 60.0,
        "hard_limit": 0.95,
        "context_window": None,
        "retrieval": False,
        "retrieve_page_tokens": 4000,
        "retrieval_schema": "always",
    }
    assert set(STEP_TYPES) == {
        "tidy",
        "age",
        "dedup",
        "summarize",
        "compact",
        "elide",
        "window",
        "mask",
        "truncate",
        "clear",
    }


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"step": "shrink"}, "unknown context step 'shrink'; choose one of dedup"),
        ({"step": "mask", "kep": 3}, "invalid fields for step 'mask'"),
        ({"step": "mask", "keep": 0}, "Mask.keep must be >= 1, got 0"),
    ],
)
def test_bad_step_data_is_one_clear_sentence(data: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigurationError, match=error):
        step_from_dict(data)


def test_bad_policy_data_is_one_clear_sentence() -> None:
    with pytest.raises(ConfigurationError, match="invalid policy fields"):
        Policy.from_dict({"name": "x", "steps": [], "windoww": 3})


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: Policy("", []), "non-empty name"),
        (lambda: Policy("p", [Dedup(), Dedup(cache_size=8)]), "two 'dedup' steps"),
        (lambda: Policy("p", ["truncate"]), "'truncate' is not a step"),  # type: ignore[list-item]
        (lambda: Policy("p", [Window(3), Summarize()]), "Window drops what a summary would cover"),
        (lambda: Policy("p", [Compact(at=0.9)], hard_limit=0.9), "Compact.at must be below"),
        (lambda: Policy("p", [], hard_limit=1.5), r"hard_limit must be in \(0, 1\]"),
        (lambda: Policy("p", [], context_window=0), "context_window must be a positive integer"),
        (lambda: Summarize(every=5, overlap=5), "overlap must be >= 0 and smaller than every"),
        (lambda: Compact(at=1.0), r"Compact.at must be in \(0, 1\)"),
        (lambda: Clear(trigger_tokens=0), "Clear.trigger_tokens must be a positive integer"),
        (lambda: Elide(min_chars=-1), "Elide.min_chars must be >= 0"),
        (lambda: Window(iterations=0), "Window.iterations must be a positive integer"),
        (lambda: Dedup(cache_size=0), "Dedup.cache_size must be >= 1"),
        (lambda: Age(keep_novel=-1), "Age.keep_novel must be >= 0"),
    ],
)
def test_mistakes_are_refused_on_construction(make: object, error: str) -> None:
    assert callable(make)
    with pytest.raises(ConfigurationError, match=error):
        make()


def test_steps_are_frozen_values() -> None:
    step = Truncate(max_chars=100)
    with pytest.raises(AttributeError):
        step.max_chars = 5  # type: ignore[misc]
    assert step == Truncate(100) and hash(step) == hash(Truncate(100))
    policy = Policy("p", [step])
    assert isinstance(policy.steps, tuple)


def test_find_without_and_what_hides() -> None:
    tiered = PRESETS["tiered"]
    assert tiered.find(Compact) == Compact(at=0.70, keep=5)
    assert tiered.find(Mask) is None and tiered.find(Summarize) is None
    lean = tiered.without("dedup", Compact)
    assert [s.kind for s in lean.steps] == ["age", "truncate", "tidy"]
    assert tiered.summarizes and not lean.summarizes and not Policy("p", [Truncate()]).summarizes
    # context_retrieve comes with a step that can hide something, and only if retrieval is on
    assert not Policy("p", [Dedup(), Elide()]).retrieval_active
    assert Policy("p", [Dedup(), Truncate()]).retrieval_active
    assert not Policy("p", [Truncate()], retrieval=False).retrieval_active
