"""Shortcuts in the rulers and the replay's series give what the plain computation gives
(speed round 14, docs/bench-speed.md), and take the shortcut:

- the word ruler's index of first appearances walks each message's words, not every word seen before
  (``frozenset - dict.keys()`` walked the whole dict: quadratic in a run's vocabulary);
- the search of a term's holders begins where the term first occurs, when that is known;
- a term of letters only is told specific or not by string methods, without a pattern;
- a policy's prompt (a tuple) is compared with the next one as it is, not copied per step;
- a run memo of a function of one argument looks the argument up as it is, and a miss raises nothing.
"""

from __future__ import annotations

import random
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent.bench import _evidence, _terms
from tiered_agent.bench._evidence import EvidenceIndex
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._rulers import WordIndex
from tiered_agent.bench._series import Stretches
from tiered_agent.bench._terms import is_specific
from tiered_agent.bench._vocabulary import words_of

# ----------------------------------------------------------------------------- the word ruler's index


def _words_run(messages: int, words: int, rng: random.Random | None = None) -> RecordedRun:
    """A run whose every message names ``words`` words seen nowhere before (the worst case for the
    old index), or, with ``rng``, words drawn from a small pool (repeats and first sightings)."""
    out = [Message("user", "Fix the parser.", iteration=0)]
    for k in range(1, messages + 1):
        if rng is None:
            text = " ".join(f"word{k}x{j}" for j in range(words))
        else:
            text = " ".join(f"name{rng.randint(0, 40)}" for _ in range(rng.randint(0, 8)))
        role = "assistant" if k % 2 else "tool"
        call = (ToolCall(f"c{k}", "bash", orjson.dumps({"command": text}).decode()),) if k % 2 else ()
        out.append(
            Message(role, text, call, tool_call_id=None if k % 2 else f"c{k - 1}", iteration=(k + 1) // 2)
        )
    return RecordedRun("w", "t", "tiered-agent", tuple(out))


def _plain_salient(run: RecordedRun, iteration: int) -> tuple[str, ...]:
    """The word ruler's salient words, from the definition (first appearance, first observation)."""
    from tiered_agent.bench._metrics import message_text

    always = "\n".join(message_text(m) for m in run.messages if m.iteration == 0)
    later = [m for m in run.messages if m.iteration >= 1]
    first_any: dict[str, int] = {}
    first_observed: dict[str, int] = {}
    action: tuple[int, frozenset[str]] | None = None
    for position, message in enumerate(later):
        words = words_of(message_text(message))
        for word in words:
            first_any.setdefault(word, position)
            if message.role in ("tool", "user"):
                first_observed.setdefault(word, position)
        if message.role == "assistant" and message.iteration == iteration and action is None:
            action = (position, words)
    if action is None:
        return ()
    position, words = action
    return tuple(
        sorted(
            w
            for w in words
            if first_any[w] < position and first_observed.get(w) == first_any[w] and w not in always
        )
    )


@pytest.mark.parametrize("seed", range(5))
def test_word_index_finds_the_salient_words_of_the_definition(seed: int) -> None:
    run = _words_run(60, 0, random.Random(seed))
    index = WordIndex(run)
    for iteration in range(1, 32):
        assert index.salient(iteration) == _plain_salient(run, iteration)


def _build_seconds(run: RecordedRun) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        WordIndex(run)
        best = min(best, time.process_time() - started)
    return best


def test_word_index_grows_linearly_with_the_run() -> None:
    """Eight times the messages (each with new words) cost about eight times as much, not 64 times (the
    old ``words - first.keys()`` walked every word seen before, at every message)."""
    small, large = _words_run(300, 30), _words_run(2400, 30)
    ratio = _build_seconds(large) / _build_seconds(small)
    assert ratio < 24, ratio


# ----------------------------------------------------------------------------- the evidence search
def _evidence_run(rng: random.Random, iterations: int) -> RecordedRun:
    pool = ("utils.py", "HAT017", "4417", "src/app.py", "x_utils.py", "HAT0171", "the", "error", "=")
    messages = [Message("user", "Fix it.", iteration=0)]
    for k in range(1, iterations + 1):
        line = " ".join(rng.choice(pool) for _ in range(rng.randint(1, 6)))
        call = ToolCall(f"c{k}", "bash", orjson.dumps({"command": line}).decode())
        messages.append(Message("assistant", line, (call,), iteration=k))
        out = "\n".join(" ".join(rng.choice(pool) for _ in range(rng.randint(0, 5))) for _ in range(3))
        messages.append(Message("tool", out, tool_call_id=f"c{k}", iteration=k))
    return RecordedRun("e", "t", "tiered-agent", tuple(messages))


@pytest.mark.parametrize("seed", range(8))
def test_holders_are_the_same_whether_the_first_occurrence_is_known(seed: int) -> None:
    """Sources found after ``needed`` (which finds each term's first occurrence) equal those of an
    index that never looked for it, at every cutoff, asked in any order."""
    rng = random.Random(seed)
    run = _evidence_run(rng, 25)
    informed, plain = EvidenceIndex(run), EvidenceIndex(run)
    for iteration in range(1, 26):
        informed.needed(iteration)
    cutoffs = [informed.cutoff(k) for k in range(1, 27)]
    rng.shuffle(cutoffs)
    for cutoff in cutoffs:
        for term in ("utils.py", "HAT017", "4417", "src/app.py", "x_utils.py", "nowhere.py"):
            a, b = informed._term(term, cutoff), plain._term(term, cutoff)
            assert (a.sources, a.observed_sources, a.source_ids) == (
                b.sources,
                b.observed_sources,
                b.source_ids,
            )


def test_the_search_of_holders_begins_at_the_first_occurrence(monkeypatch: pytest.MonkeyPatch) -> None:
    """A term first seen in a late message is searched from there, not from the run's start."""
    messages = [Message("user", "Fix it.", iteration=0)]
    for k in range(1, 21):
        text = "nothing to see here\n" * 50 + ("see HAT017 here" if k >= 15 else "")
        messages.append(Message("assistant", f"look {k}", iteration=k))
        messages.append(Message("user", text, iteration=k))
    run = RecordedRun("f", "t", "tiered-agent", tuple(messages))
    index = EvidenceIndex(run)
    assert index._first_index("HAT017") is not None
    starts: list[int] = []
    plain = _evidence.first_occurrence

    def recording(text: str, term: str, start: int = 0, end: int | None = None) -> int:
        starts.append(start)
        return plain(text, term, start, end)

    monkeypatch.setattr(_evidence, "first_occurrence", recording)
    found = index._term("HAT017", index.cutoff(20))
    first = index._first["HAT017"]
    assert first is not None and found.sources[0] == first
    assert starts[0] == index._starts[first]  # no search of the messages before it
    assert index._term("absent.py", index.cutoff(20)).sources == []


def test_a_term_first_seen_at_or_after_the_cutoff_has_no_holder_and_no_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = _evidence_run(random.Random(3), 10)
    index = EvidenceIndex(run)
    assert index._first_index("nowhere.py") is None
    searched: list[str] = []
    monkeypatch.setattr(_evidence, "first_occurrence", lambda text, term, *a: searched.append(term) or -1)
    assert index._term("nowhere.py", index.cutoff(10)).sources == []
    assert searched == []


# ----------------------------------------------------------------------------- terms, stretches
def _specific_plain(term: str) -> bool:
    """:func:`is_specific` as the definition reads (bab8d9b's code, without the letters-only path)."""
    import re

    if len(term) < 3:
        return False
    code = re.search(r"[\d_./]", term) is not None
    if (code or "-" in term) and re.fullmatch(r"[^\W\d_](?:[./\-][^\W\d_])+", term):
        return False
    if code:
        return True
    parts = term.split("-")
    return not all(p.isalpha() and (p[1:] == p[1:].lower() or p == p.upper()) for p in parts)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="abcXYZéÉßİı_.-/19٣", max_size=9))
def test_is_specific_is_the_definition(term: str) -> None:
    assert is_specific(term) == _specific_plain(term)


def test_a_term_of_letters_is_told_without_a_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most terms are letters only: told by string methods (no code character, no initials, one part)."""

    class NoSearch:
        def search(self, text: str) -> None:
            raise AssertionError("searched")

    monkeypatch.setattr(_terms, "_CODE_CHARS", NoSearch())
    assert [
        is_specific(t) for t in ("error", "Error", "ERROR", "DataDocumenter", "localtime", "HTTPServer")
    ] == [
        False,
        False,
        False,
        True,
        False,
        True,
    ]


def test_stretches_keep_a_tuple_prompt_as_it_is() -> None:
    """The prompt a policy sent (a tuple) is compared with the next one as it is, not copied per step."""
    a, b, c = Message("user", "a"), Message("user", "b"), Message("user", "c")
    stretches = Stretches({id(a): 0, id(b): 1, id(c): 2})
    prompt = (a, c)
    assert stretches(prompt) == (0, 2, 0, 2)
    assert stretches._items is prompt
    assert stretches((a, c, b)) == (0, 2, 1, 0, 2, 1)
    assert stretches([a, b]) == (0, 1) and isinstance(stretches._items, tuple)


# ----------------------------------------------------------------------------- the run memos
def test_a_one_argument_memo_builds_no_key_and_answers_as_the_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A memo of a function of one argument looks its argument up as it is (no key built per call);
    a call by keyword or a wrong call is the plain function's; a refused result is computed again."""
    from tiered_agent.context import _memo

    computed: list[object] = []

    @_memo.run_memo(2)
    def double(x: int) -> int:
        computed.append(x)
        return 2 * x

    @_memo.run_memo(8, keep=bool)
    def odd(x: int) -> tuple[int, ...]:
        computed.append(("odd", x))
        return (x,) if x % 2 else ()

    def no_key(*args: object) -> object:
        raise AssertionError("a key was built")

    monkeypatch.setattr(_memo, "_key", no_key)
    with _memo.scope(_memo.MemoTables()):
        assert [double(3), double(3), double(x=3), double(4), double(5), double(3)] == [6, 6, 6, 8, 10, 6]
        assert [odd(1), odd(1), odd(2), odd(2)] == [(1,), (1,), (), ()]
        with pytest.raises(TypeError):
            double(1, 2)  # type: ignore[call-arg]
    # 3 once, by keyword again, 4, 5 (3 evicted: two entries at most), 3 again; odd(2) refused twice
    assert computed == [3, 3, 4, 5, 3, ("odd", 1), ("odd", 2), ("odd", 2)]
