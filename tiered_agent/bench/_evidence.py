"""The line ruler and the own-writing ruler: what each recorded action needed, and whether a prompt
showed it together with the line that held it.

Definitions (terms, specific, occurs, normalized: ``_terms.py``; all of it in docs/rulers.md):

- The strings *needed* by the action of iteration ``k`` are its specific terms
  (:func:`~._terms.action_text`) whose first occurrence in the run, counting
  only messages of iterations 1 and later, lies in an earlier iteration, and
  that occur nowhere in what the model always sees (system prompt, task, tool
  schemas). A term first seen in an observation (a tool result or a user
  message) is *observed*: the line ruler counts it. A term the agent wrote
  first (its content, commands, edits, file contents, scripts, patches) is
  *own*: the own-writing ruler counts it.
- Every line of an earlier message that holds the term is *evidence*: for the
  line ruler only lines of observations, for the own-writing ruler lines of any
  message. The evidence around one occurrence is a *window*: the term with up
  to :data:`CONTEXT_CHARS` characters of its line before it, and another with
  up to as many after it. A side with fewer than :data:`MIN_CONTEXT` characters
  of context is anchored to its line boundary; a side with none is not a
  window, and a line that is the term alone has the window ``line == term``.
  For an observation that is a JSON document, a field whose value holds the
  term is evidence too: the key and the value up to the term, the key right
  before the value (``"flight_number": "HAT017"``, ``flights[0].flight_number:
  HAT017``).
- The term is *shown* when the prompt holds one of those windows verbatim
  (normalized) around an occurrence of the term. For the line ruler only
  messages that are not the agent's own count (tool results, user messages,
  notes and summaries a policy wrote): a mention in the agent's reasoning or
  commands, or in a note's summary line (``3. ... → bash: sed -n '1909,2000p'
  ...``), is not the line. For the own-writing ruler every message counts.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from itertools import compress, islice
from operator import itemgetter
from typing import Any

import orjson

from .._messages import Message
from ._recorded import RecordedRun
from ._series import Joined, SparseSeries
from ._terms import (
    first_occurrence,
    is_specific,
    joined,
    message_text,
    normalize,
    occurrences,
    occurrences_backward,
    terms,
)

__all__ = ["CONTEXT_CHARS", "MIN_CONTEXT", "EvidenceIndex", "Needed", "PromptView", "TextMemo"]

CONTEXT_CHARS = 40  # characters of a line kept on each side of a term in a window
MIN_CONTEXT = 8  # below this much context, a side must reach its line boundary

Windows = dict[tuple[int, int], dict[str, int]]  # (chars before the term, after) -> window -> first index


@dataclass(frozen=True, slots=True)
class Needed:
    """The strings one action needed, split by where they came from (sorted)."""

    observed: tuple[str, ...] = ()  # first seen in an observation: the line ruler
    own: tuple[str, ...] = ()  # first written by the agent: the own-writing ruler


class _Term:
    """Where one term occurs in a run: its windows and the messages that hold it, found only as far
    as a step asked (evidence must come before the step: the messages after it are read when a later
    step asks)."""

    __slots__ = (
        "keyed",
        "keys",
        "observed",
        "observed_ids",
        "observed_sources",
        "observed_windowed",
        "source_ids",
        "sources",
        "upto",
        "windowed",
        "written",
    )

    def __init__(self) -> None:
        self.upto = 0  # the messages before this index have been searched for it
        self.observed_sources: list[int] = []  # observation messages holding it, ascending
        self.sources: list[int] = []  # every message holding it, ascending
        self.observed_ids: list[int] = []  # the ids of those messages (the run's objects), in that order
        self.source_ids: list[int] = []
        # filled when first searched for (most terms stand in the prompt in an unchanged message), for
        # the first ``observed_windowed`` observed sources, the first ``windowed`` sources and the first
        # ``keyed`` observed sources; each ruler's windows only when that ruler searches (a term is
        # needed by one of them: where it first occurred tells which, for the whole run):
        self.observed_windowed = 0
        self.windowed = 0
        self.keyed = 0
        self.observed: Windows = {}  # windows on observation lines (the line ruler's)
        self.written: Windows = {}  # windows on any line (the own-writing ruler's)
        self.keys: dict[tuple[str, str], int] = {}  # JSON (key, value up to the term) -> first index


def _add(windows: Windows, key: tuple[int, int], window: str, index: int) -> None:
    found = windows.setdefault(key, {})
    if window not in found:
        found[window] = index


def _windows(text: str, at: int, size: int) -> list[tuple[tuple[int, int], str]]:
    """The windows of the occurrence of a term of ``size`` chars at ``at`` of normalized ``text``."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at + size)
    end = len(text) if end < 0 else end
    before, after = min(CONTEXT_CHARS, at - start), min(CONTEXT_CHARS, end - at - size)
    term = text[at : at + size]
    out: list[tuple[tuple[int, int], str]] = []
    if before == 0 and after == 0:
        out.append(((1, 1), f"\n{term}\n"))
    if before >= MIN_CONTEXT:
        out.append(((before, 0), text[at - before : at + size]))
    elif before > 0:
        out.append(((before + 1, 0), "\n" + text[start : at + size]))
    if after >= MIN_CONTEXT:
        out.append(((0, after), text[at : at + size + after]))
    elif after > 0:
        out.append(((0, after + 1), text[at:end] + "\n"))
    return out


def _window_at(windows: Windows, text: str, at: int, size: int, cutoff: int) -> bool:
    """Whether one of ``windows`` (from a message before ``cutoff``) surrounds ``text[at:at+size]``."""
    for (before, after), known in windows.items():
        if at < before or at + size + after > len(text):
            continue
        first = known.get(text[at - before : at + size + after])
        if first is not None and first < cutoff:
            return True
    return False


def _newest_first(ids: list[int], before: int) -> Iterable[int]:
    """``ids[:before]``, last first, without a copy."""
    return reversed(ids) if before == len(ids) else islice(reversed(ids), len(ids) - before, None)


def _json_fields(text: str) -> list[tuple[str, str]]:
    """``(key, normalized value)`` of every scalar field of a JSON object or array (list items take
    the key of the field holding the list); empty for anything else."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return []
    try:
        data = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return []
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((str(k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((key, v) for v in reversed(value))
        elif value is not None:
            scalar = value if isinstance(value, str) else orjson.dumps(value).decode()
            out.append((key, normalize(scalar)))
    return out


def _multiline_strings(text: str) -> list[str]:
    """The string values of a JSON document that span lines (a tool that wraps its output in JSON,
    ``{"output": "line 1\\nline 2", ...}``, holds its real lines there), in document order."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or "\\n" not in stripped:
        return []
    try:
        data = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return []
    out: list[str] = []
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, str) and "\n" in value:
            out.append(value)
    return out


def _evidence_text(message: Message) -> str:
    """A message as evidence (normalized): what it says, and for an observation that is a JSON
    document, the lines of its multi-line string values too (their lines are the output's lines)."""
    text = normalize(message_text(message))
    if message.role == "assistant":
        return text
    decoded = _multiline_strings(message.text)
    return "\n".join([text, *(normalize(value) for value in decoded)]) if decoded else text


class EvidenceIndex:
    """Needed strings and their evidence, per step of one recorded run (policy-independent)."""

    def __init__(self, run: RecordedRun) -> None:
        always = [normalize(message_text(m)) for m in run.messages if m.iteration == 0]
        if run.tools:
            always.append(normalize(orjson.dumps(list(run.tools)).decode()))
        self._always = "\n".join(always)
        self.messages = [m for m in run.messages if m.iteration >= 1]
        texts = [_evidence_text(m) for m in self.messages]
        self._corpus, self._starts = joined(texts)
        self._observed = [m.role != "assistant" for m in self.messages]
        self._action_at: dict[int, int] = {}
        for index, message in enumerate(self.messages):
            if message.role == "assistant":
                self._action_at.setdefault(message.iteration, index)
        self._terms: dict[str, _Term] = {}
        self._first: dict[str, int | None] = {}
        self._in_always: dict[str, bool] = {}
        self._specific: dict[str, bool] = {}
        self._needed: dict[int, Needed] = {}
        self._fields: dict[int, list[tuple[str, str]]] = {}
        self._patterns: dict[str, re.Pattern[str]] = {}

    # ------------------------------------------------------------------ needed strings
    def _text(self, index: int) -> str:
        start = self._starts[index]
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else len(self._corpus)
        return self._corpus[start:end]

    def _index_at(self, position: int) -> int:
        return bisect_right(self._starts, position) - 1

    def _first_index(self, term: str) -> int | None:
        if term not in self._first:
            at = first_occurrence(self._corpus, term)
            self._first[term] = None if at < 0 else self._index_at(at)
        return self._first[term]

    def _always_has(self, term: str) -> bool:
        if term not in self._in_always:
            self._in_always[term] = first_occurrence(self._always, term) >= 0
        return self._in_always[term]

    def cutoff(self, iteration: int) -> int:
        """Index of the first message of ``iteration`` or later: evidence must come before it."""
        index = self._action_at.get(iteration, len(self.messages))
        while index > 0 and self.messages[index - 1].iteration >= iteration:
            index -= 1
        return index

    def needed(self, iteration: int) -> Needed:
        """The strings the action of ``iteration`` needed (empty when it has no action)."""
        if iteration not in self._needed:
            self._needed[iteration] = self._compute(iteration)
        return self._needed[iteration]

    def _compute(self, iteration: int) -> Needed:
        action = self._action_at.get(iteration)
        if action is None:
            return Needed()
        cutoff = self.cutoff(iteration)
        observed: list[str] = []
        own: list[str] = []
        distinct = set(terms(self._text(action)))
        specific = self._specific  # :func:`is_specific` of every distinct term of the run, once
        for term in distinct.difference(specific):
            specific[term] = is_specific(term)
        for term in sorted(filter(specific.__getitem__, distinct)):
            first = self._first_index(term)
            if first is None or first >= cutoff or self._always_has(term):
                continue
            (observed if self._observed[first] else own).append(term)
        return Needed(tuple(observed), tuple(own))

    # ------------------------------------------------------------------ evidence
    def _term(self, term: str, cutoff: int) -> _Term:
        """The term's holders among the messages before ``cutoff`` (and maybe after: found before)."""
        found = self._terms.get(term)
        if found is None:
            found = self._terms[term] = _Term()
        if found.upto < cutoff:
            self._collect(found, term, cutoff)
        return found

    def _collect(self, found: _Term, term: str, cutoff: int) -> None:
        """Add the messages from ``found.upto`` to ``cutoff`` holding ``term``: its first occurrence in
        each (the search skips to the next)."""
        starts, corpus, messages = self._starts, self._corpus, self.messages
        stop = starts[cutoff] if cutoff < len(starts) else len(corpus)
        begin = found.upto  # < cutoff <= len(starts)
        if not begin and "\n" not in term:  # the search begins where the term first occurs, if known
            first = self._first.get(term, 0)
            begin = cutoff if first is None else min(first, cutoff)
        at = first_occurrence(corpus, term, starts[begin], stop) if begin < cutoff else -1
        while at >= 0:
            index = self._index_at(at)
            found.sources.append(index)
            found.source_ids.append(id(messages[index]))
            if self._observed[index]:
                found.observed_sources.append(index)
                found.observed_ids.append(id(messages[index]))
            if index + 1 >= len(starts):
                break
            at = first_occurrence(corpus, term, starts[index + 1], stop)
        found.upto = cutoff

    def _windows_of(self, found: _Term, term: str, cutoff: int, *, observed: bool) -> Windows:
        """Add to ``found`` the windows (``observed``: on observation lines, else on any line) and the
        JSON fields of its holders before ``cutoff`` not read yet (in order, so each window keeps the
        first holder it came from); return those windows."""
        if observed:
            sources, done, windows = found.observed_sources, found.observed_windowed, found.observed
        else:
            sources, done, windows = found.sources, found.windowed, found.written
        starts, corpus = self._starts, self._corpus
        new = bisect_left(sources, cutoff, done)
        size = len(term)
        for index in sources[done:new]:  # every occurrence in each, in order
            end = starts[index + 1] - 1 if index + 1 < len(starts) else len(corpus)
            for at in occurrences(corpus, term, starts[index], end):
                for key, window in _windows(corpus, at, size):
                    _add(windows, key, window, index)
        if observed:
            found.observed_windowed = max(done, new)
        else:
            found.windowed = max(done, new)
        self._keys_of(found, term, cutoff)
        return windows

    def _keys_of(self, found: _Term, term: str, cutoff: int) -> None:
        """Add to ``found`` the JSON fields of its observed holders before ``cutoff`` not read yet."""
        holders = found.observed_sources
        new = bisect_left(holders, cutoff, found.keyed)
        for index in holders[found.keyed : new]:
            self._json_evidence(found, term, index)
        found.keyed = max(found.keyed, new)

    def _json_evidence(self, found: _Term, term: str, index: int) -> None:
        if index not in self._fields:
            self._fields[index] = _json_fields(self.messages[index].text)
        for key, value in self._fields[index]:
            if term not in value:
                continue
            at = first_occurrence(value, term)
            if at < 0:
                continue
            cut = at > CONTEXT_CHARS  # a long value: its own context stands in for the key
            if not key and not cut:
                continue  # a bare value with nothing around it is no evidence
            prefix = value[max(0, at - CONTEXT_CHARS) : at + len(term)]
            found.keys.setdefault(("" if cut else key, prefix), index)

    # ------------------------------------------------------------------ shown
    def shown(self, term: str, prompt: PromptView, cutoff: int, *, observed: bool) -> bool:
        """Whether ``prompt`` shows ``term`` with evidence from a message before ``cutoff``: evidence on
        observation lines only (``observed``, the line ruler) or on any line.

        A message that holds the term and stands in the prompt unchanged (the same object) shows it
        (all its lines are there); otherwise the part of the prompt the ruler reads is searched,
        newest message first (the run's recorded messages aside: :class:`TextMemo`)."""
        found = self._terms.get(term)
        if found is None or found.upto < cutoff:
            found = self._term(term, cutoff)
        sources, ids = (
            (found.observed_sources, found.observed_ids) if observed else (found.sources, found.source_ids)
        )
        before = bisect_left(sources, cutoff)
        if before and prompt.holds_any(_newest_first(ids, before)):
            return True
        if "\n" not in term and term not in prompt.joined(observed=observed):
            return False  # in none of the texts searched below (each is between two line breaks)
        size = len(term)
        windows: Windows | None = None
        for text in prompt.observed() if observed else prompt.everything():
            if term not in text:
                continue
            if windows is None:
                windows = self._windows_of(found, term, cutoff, observed=observed)
            for at in occurrences_backward(text, term):
                if _window_at(windows, text, at, size, cutoff):
                    return True
                if found.keys and self._keyed(found.keys, text, at, size, cutoff):
                    return True
        return False

    def _keyed(self, keys: dict[tuple[str, str], int], prompt: str, at: int, size: int, cutoff: int) -> bool:
        line_start = prompt.rfind("\n", 0, at) + 1
        for (key, prefix), first in keys.items():
            start = at + size - len(prefix)
            if first >= cutoff or start < line_start or prompt[start : at + size] != prefix:
                continue
            if not key or self._key_pattern(key).search(prompt, line_start, start):
                return True
        return False

    def _key_pattern(self, key: str) -> re.Pattern[str]:
        pattern = self._patterns.get(key)
        if pattern is None:
            pattern = self._patterns[key] = re.compile(
                r"(?<!\w)" + re.escape(key) + r"[\"']?\s*[:=]\s*[\"']?$"
            )
        return pattern

    def source(
        self,
        term: str,
        cutoff: int,
        *,
        observed: bool,
        ids: frozenset[str],
        ranges: Sequence[tuple[int, int]],
    ) -> int | None:
        """The latest message before ``cutoff`` holding ``term`` (an observation for ``observed``) whose
        exact retrieval call is in ``ids`` (output ids) or ``ranges`` (iteration ranges); None if none."""
        found = self._term(term, cutoff)
        for index in reversed(found.observed_sources if observed else found.sources):
            if index >= cutoff:
                continue
            message = self.messages[index]
            if message.role == "tool" and message.tool_call_id in ids:
                return index
            if any(low <= message.iteration <= high for low, high in ranges):
                return index
        return None


class TextMemo:
    """Normalized texts of prompt messages, each between two ``\n`` (so a window anchored at a line
    boundary matches at the message's edges), memoized per message object for one run (the entry keeps
    the message alive, so its ``id`` is not reused).

    ``recorded``: the ids of the run's recorded messages (kept alive by the run). Their text is never
    searched: a recorded message that holds a term is one of the term's sources, which
    :meth:`EvidenceIndex.shown` finds in the prompt by identity, and one that does not hold it
    cannot show it, so :meth:`entry` leaves them out of what the search reads. That holds for a
    prompt whose recorded messages all come before the cutoff asked about, as a replayed prompt's
    history does (a recorded message of the step or later would be a source too late to count,
    yet its line could match an earlier source's window: leave ``recorded`` empty for such
    prompts)."""

    def __init__(self, recorded: frozenset[int] = frozenset()) -> None:
        self._texts: dict[int, tuple[Message, str]] = {}
        self._recorded = recorded

    def text(self, message: Message) -> str:
        entry = self._texts.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, f"\n{normalize(message_text(message))}\n")
            self._texts[id(message)] = entry
        return entry[1]

    def entry(self, message: Message) -> tuple[str, bool] | None:
        """The message's text, and whether it is not the agent's own (the line ruler reads it); None
        for a recorded message (never searched)."""
        if id(message) in self._recorded:
            return None
        return self.text(message), message.role != "assistant"


_TEXT, _OBSERVED = itemgetter(0), itemgetter(1)


class PromptView:
    """A prompt as the rulers search it: each message's normalized text, newest first, but for the
    run's recorded messages (:class:`TextMemo`), each list built once, when a ruler first reads it.
    ``series``: the texts of a policy's consecutive prompts, derived only for the messages each prompt
    changed (``_series.py``)."""

    __slots__ = (
        "_entries",
        "_everything",
        "_ids",
        "_ids_of",
        "_joined",
        "_joins",
        "_memo",
        "_observed",
        "_prompt",
        "_series",
    )

    def __init__(
        self,
        prompt: Sequence[Message],
        memo: TextMemo,
        series: SparseSeries[Message, tuple[str, bool]] | None = None,
        ids: Callable[[], Set[int]] | None = None,
        joins: Mapping[bool, Joined] | None = None,
    ) -> None:
        self._prompt = prompt
        self._memo = memo
        self._series = series
        self._entries: list[tuple[str, bool]] | None = None
        self._observed: list[str] | None = None
        self._everything: list[str] | None = None
        self._joined: dict[bool, str] = {}
        # the ids of the prompt's messages, when first needed (``ids``: where to get them, else built)
        self._ids_of = ids
        self._joins = joins  # the policy's joined texts of its previous prompts (``_series.Joined``)
        self._ids: Set[int] | None = None

    def holds_any(self, ids: Iterable[int]) -> bool:
        """Whether one of the messages with these ``ids`` itself (the same object, so unchanged) is in
        the prompt."""
        if self._ids is None:
            self._ids = self._ids_of() if self._ids_of is not None else set(map(id, self._prompt))
        return not self._ids.isdisjoint(ids)

    def _newest_first(self) -> list[tuple[str, bool]]:
        if self._entries is None:
            if self._series is not None:
                self._entries = self._series(self._prompt)[::-1]
            else:
                found = map(self._memo.entry, reversed(self._prompt))
                self._entries = [e for e in found if e is not None]
        return self._entries

    def observed(self) -> list[str]:
        """The messages that are not the agent's own (what the line ruler reads), recorded ones aside."""
        if self._observed is None:
            entries = self._newest_first()
            self._observed = list(compress(map(_TEXT, entries), map(_OBSERVED, entries)))
        return self._observed

    def everything(self) -> list[str]:
        """Every message (what the own-writing ruler reads), recorded ones aside."""
        if self._everything is None:
            self._everything = list(map(_TEXT, self._newest_first()))
        return self._everything

    def joined(self, *, observed: bool) -> str:
        """The texts :meth:`observed` (or :meth:`everything`) reads, as one string."""
        if observed not in self._joined:
            texts = self.observed() if observed else self.everything()
            join = self._joins.get(observed) if self._joins is not None else None
            self._joined[observed] = join(texts) if join is not None else "".join(texts)
        return self._joined[observed]
