"""The salient and word rulers filter the strings a prompt holds in C: the same strings as the
plain loop (speed round 15, docs/bench-speed.md)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._rulers import RawTexts, RawView, RecordedTexts
from tiered_agent.bench._series import SparseSeries

# ----------------------------------------------------------------------------- the rulers


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["alpha_one", "beta.two", "gamma/3", "delta4", "eps_5"]), min_size=1, max_size=8
    ),
    st.lists(st.integers(0, 7), max_size=8),
    st.lists(st.sampled_from(["alpha_one", "delta4", "zeta_9", "beta.two"]), max_size=5),
)
def test_absent_is_the_plain_filter(texts: list[str], kept: list[int], strings: list[str]) -> None:
    """The strings a prompt (some recorded messages, by identity) does not hold are those whose holders
    it holds none of, less those its foreign texts hold: as the plain loop found them."""
    messages = tuple(Message("tool" if k else "user", f"{t} end", iteration=k) for k, t in enumerate(texts))
    run = RecordedRun("r15", "test", "tiered-agent", messages)
    recorded = RecordedTexts(run)
    prompt = [messages[k] for k in sorted(set(kept)) if k < len(messages)]
    prompt.append(Message("user", "zeta_9 is here", iteration=len(messages)))
    view = RawView(prompt, recorded, SparseSeries(RawTexts(recorded.ids).foreign, recorded.ids))
    held = {id(m) for m in prompt}
    foreign = "\n".join(m.text for m in prompt if m not in messages)
    expected = tuple(
        s
        for s in strings
        if not any(id(messages[i]) in held for i, t in enumerate(texts) if s in f"{t} end")
        and s not in foreign
    )
    assert recorded.absent(tuple(strings), view) == expected
