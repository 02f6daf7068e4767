"""``benchmarks/prompt_tiers.py``: a policy's prompt tokens by tier add up to what the bench counts."""

from __future__ import annotations

from types import ModuleType

import anyio
from bench_scripts import ROOT, load_script

from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._calibration import fit
from tiered_agent.bench._importers import load_file
from tiered_agent.bench._replay import ReplaySettings, bench_plan, policy_config, replay_prompts

RUN = ROOT / "traces" / "mini-swe-agent" / "django__django-16560.jsonl"


def _script() -> ModuleType:
    return load_script("prompt_tiers")


def test_the_parts_add_up_to_the_prompt_and_full_is_the_bench_s() -> None:
    tiers = _script()
    settings = ReplaySettings()
    found = tiers.tiers([RUN], policy_config("tiered"), settings)
    assert set(found) == {"swe-shell", "all"} and found["all"] == found["swe-shell"]
    parts = found["all"]
    run = load_file(RUN)[0]
    plan = bench_plan(run, settings, fit([run], TokenCounter(settings.tokenizer)))

    async def totals() -> tuple[int, int]:
        prompts = [p async for p in replay_prompts(run, policy_config("tiered"), settings, plan)]
        return sum(p.prompt_tokens for p in prompts), sum(p.counterfactual_tokens for p in prompts)

    prompt, full = anyio.run(totals)
    assert sum(v for k, v in parts.items() if k != "full") == prompt
    assert parts["full"] == full and prompt < full
    # a 145-call run: the default condenses and ages, and sends the newest iteration as recorded
    assert parts["condensed"] > 0 and parts["aged, shortened"] > 0 and parts["fixed"] > 0
    assert parts["window newest, as recorded"] > 0 and parts["overhead"] > 0


def test_a_message_is_filed_by_its_iteration_s_tier_and_form() -> None:
    tiers = _script()
    from tiered_agent._messages import Message

    recorded = {
        (0, "system", None): {"sys"},
        (3, "tool", "c3"): {"long output"},
        (9, "assistant", None): {"hi"},
    }
    part = tiers.part_of
    assert part(Message("system", "sys", iteration=0), recorded, 5, 2, 9) == "fixed"
    assert part(Message("user", "[files]", iteration=0), recorded, 5, 2, 9) == "other"
    tool = Message("tool", "long", iteration=3, tool_call_id="c3")
    assert part(tool, recorded, 5, 2, 9) == "aged, shortened"
    assert part(tool, recorded, 5, 3, 9) == "condensed"
    assert part(Message("tool", "long output", iteration=3, tool_call_id="c3"), recorded, 2, 0, 9) == (
        "window older, as recorded"
    )
    assert part(Message("assistant", "hi", iteration=9), recorded, 5, 2, 9) == "window newest, as recorded"
