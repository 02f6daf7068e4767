"""The line and own-writing rulers read a term's holders and windows only up to the step asked about:
the answers are those of an index that read the whole run first, whatever order the steps ask in."""

from __future__ import annotations

import random

import orjson
import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent.bench._evidence import EvidenceIndex, PromptView, TextMemo
from tiered_agent.bench._recorded import RecordedRun

TERMS = ("utils.py", "HAT017", "4417", "DataDocumenter", "src/app.py")
WORDS = ("error", "line", "value", "x", "=", ":", "the", "flight_number", "(", ")", "# note")


def _line(rng: random.Random) -> str:
    words = [rng.choice(WORDS + TERMS) for _ in range(rng.randint(1, 14))]
    return " " * rng.randint(0, 3) + " ".join(words)


def _output(rng: random.Random) -> str:
    if rng.random() < 0.2:  # a JSON document: its fields are evidence too
        return orjson.dumps({"flight_number": rng.choice(TERMS), "note": _line(rng)}).decode()
    return "\n".join(_line(rng) for _ in range(rng.randint(1, 6)))


def _run(rng: random.Random, iterations: int) -> RecordedRun:
    messages = [Message("system", "You are an agent."), Message("user", "Fix the bug.")]
    for k in range(1, iterations + 1):
        call = ToolCall(f"c{k}", "bash", orjson.dumps({"command": _line(rng)}).decode())
        messages.append(Message("assistant", _line(rng), (call,), iteration=k))
        messages.append(Message("tool", _output(rng), tool_call_id=f"c{k}", name="bash", iteration=k))
    return RecordedRun("r", "t", "tiered-agent", tuple(messages))


def _prompt(rng: random.Random, run: RecordedRun) -> list[Message]:
    """Foreign messages holding lines (or cut lines) of the run's messages, and some recorded ones."""
    out: list[Message] = []
    for _ in range(rng.randint(1, 4)):
        source = rng.choice(run.messages).text or _line(rng)
        lines = source.split("\n")
        text = rng.choice(lines)
        if rng.random() < 0.5 and len(text) > 4:
            start = rng.randint(0, len(text) // 2)
            text = text[start : start + rng.randint(4, 60)]
        out.append(Message(rng.choice(("tool", "user", "assistant")), f"{_line(rng)}\n{text}"))
    out.extend(m for m in run.messages if rng.random() < 0.1)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_answers_do_not_depend_on_the_steps_asked_before(seed: int) -> None:
    rng = random.Random(seed)
    run = _run(rng, 30)
    shared = EvidenceIndex(run)
    memo = TextMemo()
    every = len(shared.messages)
    answers = []
    for _ in range(150):
        term, observed = rng.choice(TERMS), rng.random() < 0.5
        cutoff = shared.cutoff(rng.randint(1, 31))
        prompt = _prompt(rng, run)
        whole = EvidenceIndex(run)  # reads every holder and window of the term first, as one query
        whole.shown(term, PromptView([Message("user", term)], TextMemo()), every, observed=True)
        whole.shown(term, PromptView([Message("user", term)], TextMemo()), every, observed=False)
        expected = whole.shown(term, PromptView(prompt, TextMemo()), cutoff, observed=observed)
        assert shared.shown(term, PromptView(prompt, memo), cutoff, observed=observed) is expected
        answers.append(expected)
        ids = frozenset(f"c{k}" for k in range(1, 31) if rng.random() < 0.3)
        args = {"observed": observed, "ids": ids, "ranges": ((3, 9),)}
        assert shared.source(term, cutoff, **args) == whole.source(term, cutoff, **args)
    assert 10 < sum(answers) < 140  # the premise: both answers are asked about


def test_each_ruler_builds_only_its_own_windows() -> None:
    """A term is needed by one ruler for the whole run (where it first occurred tells which), so the
    line ruler's search builds the windows on observation lines only, the own-writing ruler's the
    windows on any line only; either answer is the same as with both built."""
    run = RecordedRun(
        "r",
        "t",
        "tiered-agent",
        (
            Message("user", "Fix it."),
            Message("assistant", "look at src/app.py line 4", iteration=1),
            Message("tool", "error in src/app.py: line 4", tool_call_id="c1", iteration=1),
            Message("assistant", "done", iteration=2),
        ),
    )
    index = EvidenceIndex(run)
    cutoff = index.cutoff(2)
    foreign = [Message("user", "note: error in src/app.py: line 4")]
    assert index.shown("src/app.py", PromptView(foreign, TextMemo()), cutoff, observed=True)
    term = index._terms["src/app.py"]
    assert term.observed == {(9, 0): {"error in src/app.py": 1}, (0, 8): {"src/app.py: line 4": 1}}
    assert not term.written  # the own-writing ruler's windows were not built
    own = [Message("user", "look at src/app.py line 4")]
    assert index.shown("src/app.py", PromptView(own, TextMemo()), cutoff, observed=False)
    assert not index.shown("src/app.py", PromptView(own, TextMemo()), cutoff, observed=True)
    assert set(term.written) == {(8, 0), (9, 0), (0, 8)} and len(term.observed) == 2  # observed unchanged
