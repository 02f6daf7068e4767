"""What the aging of a run reads again, read once per run (speed round 22, docs/bench-speed.md).

* ``"novel"`` reasoning: an old iteration's reasoning is shortened again at every epoch (its aged
  form, what it goes on showing), each time with another ``seen``; its sentences and their
  references do not depend on ``seen``, so a run's memo keeps them (``_novel_reading``). The
  result is what the plain shortening gives (a property test against the definition as first
  written, in and out of a run's scope), and the text is split once per run.
* What the shortened text (or the text kept as it is) shows is its sentences' references, read from
  the same memo (round 26): neither text is scanned again (each is sentences joined by whitespace
  and ``[...]``, which no reference holds), nor is a text naming nothing, which the memo of ``refs``
  does not keep.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context import _memo
from tiered_agent.context.aging import _reasoning
from tiered_agent.context.aging._reasoning import MORE, refs, shorten_reasoning, split_sentences

_REASONING = (
    "I will read the config first. The loader lives in src/app/config.py and reads SETTINGS_PATH. "
    "Then run tests/test_config.py again. Nothing else to check."
)


def _plain_novel(text: str, seen: set[str]) -> str:
    """``shorten_reasoning(text, "novel", seen)`` as first written (before round 22)."""
    if not text.strip():
        seen.update(refs(text))
        return text
    sentences = split_sentences(text)
    first = sentences[0]
    if len(first) > 300:
        cut = first[:300].rsplit(" ", 1)[0]
        first = (cut or first[:300]).rstrip() + " " + MORE
    kept = [first, *(s for s in sentences[1:] if not seen.issuperset(refs(s)))]
    if kept == sentences:
        seen.update(refs(text))
        return text
    shown = " ".join(kept)
    shown = shown if shown.endswith(MORE) else f"{shown} {MORE}"
    result = shown if len(shown) < len(text) else text
    seen.update(refs(result))
    return result


def test_novel_reasoning_is_split_once_per_run(monkeypatch: object) -> None:
    calls: list[str] = []
    plain = _reasoning._sentences

    def counted(text: str):  # type: ignore[no-untyped-def]
        calls.append(text)
        return plain(text)

    monkeypatch.setattr(_reasoning, "_sentences", counted)  # type: ignore[attr-defined]
    with _memo.scope(_memo.MemoTables()):
        a = shorten_reasoning(_REASONING, "novel", set())
        b = shorten_reasoning(_REASONING, "novel", {"src/app/config.py", "SETTINGS_PATH"})
        c = shorten_reasoning(_REASONING, "novel", {"tests/test_config.py"})
    assert calls == [_REASONING]  # read once, whatever ``seen``
    assert a == (  # the last sentence names nothing: left out
        "I will read the config first. The loader lives in src/app/config.py and reads SETTINGS_PATH. "
        "Then run tests/test_config.py again. [...]"
    )
    assert b == "I will read the config first. Then run tests/test_config.py again. [...]"
    assert c == (
        "I will read the config first. The loader lives in src/app/config.py and reads SETTINGS_PATH. [...]"
    )
    outside = [shorten_reasoning(_REASONING, "novel", set()) for _ in range(2)]  # no run: nothing kept
    assert outside == [a, a] and len(calls) == 3


_word = st.sampled_from(["the", "a", "src/x.py", "y_2", "fooBar", "THOUGHT:", "1.", "b)", "done"])
_end = st.sampled_from([" ", ". ", "! ", "\n", "\n\n", ".\n", "? ", ".\t", "\t", ". \xa0", "\u2003", ".\r\n"])
_text = st.lists(st.tuples(_word, _end), max_size=14).map(lambda p: "".join(w + e for w, e in p))
_seen = st.sets(st.sampled_from(["src/x.py", "y_2", "fooBar"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(_text, st.lists(_seen, min_size=1, max_size=3), st.booleans())
def test_novel_reasoning_equals_the_plain_shortening(text: str, seens: list[set[str]], scoped: bool) -> None:
    tables = _memo.MemoTables() if scoped else None
    for seen in seens:
        mine, theirs = set(seen), set(seen)
        if tables is not None:
            with _memo.scope(tables):
                got = shorten_reasoning(text, "novel", mine)
        else:
            got = shorten_reasoning(text, "novel", mine)
        assert got == _plain_novel(text, theirs)
        assert mine == theirs


def _count_scans(monkeypatch: object) -> list[str]:
    """The texts ``refs`` scans from now on, in order (``refs`` itself still answers)."""
    scanned: list[str] = []
    plain = _reasoning.refs

    def counted(text: str):  # type: ignore[no-untyped-def]
        scanned.append(text)
        return plain(text)

    monkeypatch.setattr(_reasoning, "refs", counted)  # type: ignore[attr-defined]
    return scanned


def test_the_shortened_text_is_not_scanned_again(monkeypatch: object) -> None:
    scanned = _count_scans(monkeypatch)
    with _memo.scope(_memo.MemoTables()):
        seen: set[str] = set()
        shown = shorten_reasoning(_REASONING, "novel", seen)
        again = shorten_reasoning(_REASONING, "novel", {"src/app/config.py"})
    assert shown.endswith(MORE) and again.endswith(MORE)
    assert shown not in scanned and again not in scanned  # fails before round 26: each was scanned
    assert seen == {"src/app/config.py", "SETTINGS_PATH", "tests/test_config.py"}
    assert len(scanned) == 4  # the first sentence and the three after it, once per run


_long = st.text(st.sampled_from("ab_/.1 "), min_size=280, max_size=340).map(lambda t: t.replace(". ", "._"))


@settings(max_examples=200, deadline=None)
@given(_long, _text, _seen)
def test_a_cut_first_sentence_shows_what_the_plain_shortening_shows(
    first: str, rest: str, seen: set[str]
) -> None:
    text = f"{first}. {rest}"
    mine, theirs = set(seen), set(seen)
    with _memo.scope(_memo.MemoTables()):
        got = shorten_reasoning(text, "novel", mine)
    assert got == _plain_novel(text, theirs)
    assert mine == theirs


def test_a_text_naming_nothing_is_scanned_once_per_run(monkeypatch: object) -> None:
    scanned = _count_scans(monkeypatch)
    text = "Looking around the repository before changing anything"
    with _memo.scope(_memo.MemoTables()):
        shown = [shorten_reasoning(text, "novel", set()) for _ in range(3)]
    assert shown == [text] * 3  # one sentence: kept as it is
    assert scanned == [
        text
    ]  # fails before round 26: scanned at every shortening (refs keeps no empty answer)
