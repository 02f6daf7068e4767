"""The word ruler and retrieval, next to the salient ruler (``_metrics.py``) and the line and
own-writing rulers (``_evidence.py``); docs/rulers.md defines them all.

* **Retrieval-adjusted misses.** A missed string is *recoverable* when it lies in
  an earlier message whose exact retrieval call is shown in that prompt:
  ``context_retrieve(tool_call_id="X")`` for output ``X``, or
  ``context_retrieve(iteration="A-B")`` for a message of iterations A..B (a
  marker, a placeholder, an aged output's header, a condensed note). The model
  could get it back with that one call; what that costs is one extra model
  turn (``_turns.py``): :meth:`RetrievalSources.sources` says which messages
  it retrieves.
* **The word-level check.** An independent ruler: every word of 4+ characters
  (``\\w{4,}``, not only code-like ones) of the recorded action that first
  appeared in an earlier observation and is not in the system prompt, task or
  tool schemas; missed when absent from the prompt. A policy tuned to the
  code-like ruler would show it here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from itertools import compress, repeat

import orjson

from .._messages import Message
from .._tokens import TokenCounter
from ._metrics import message_text
from ._recorded import RecordedRun
from ._series import IdSets, Joined, SparseSeries
from ._terms import joined, texts_holding
from ._turns import CALL_TOKENS
from ._vocabulary import Vocabulary, words_of

__all__ = [
    "CALL_TOKENS",
    "RawTexts",
    "RawView",
    "RecordedTexts",
    "Recovery",
    "RetrievalSources",
    "Shown",
    "WordIndex",
    "prompt_texts",
    "shown_retrievals",
]

_MARK = "context_retrieve("
_CALL = re.compile(r'context_retrieve\((tool_call_id|iteration)="([^"]*)"\)')
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
Shown = tuple[frozenset[str], tuple[tuple[int, int], ...]]  # output ids, iteration ranges


_text = message_text  # what the model reads of a message: its content, each call's name and arguments


class RawTexts:
    """What the model reads of each message (its content and calls, as sent), memoized per message
    object for one run (the entry keeps the message alive, so its ``id`` is not reused).
    ``recorded``: the ids of the run's recorded messages, which :meth:`foreign` leaves out."""

    def __init__(self, recorded: frozenset[int] = frozenset()) -> None:
        self._texts: dict[int, tuple[Message, str]] = {}
        self._recorded = recorded

    def text(self, message: Message) -> str:
        if not message.tool_calls:
            return message.text
        entry = self._texts.get(id(message))
        if entry is None or entry[0] is not message:
            entry = self._texts[id(message)] = (message, _text(message))
        return entry[1]

    def foreign(self, message: Message) -> str | None:
        """The message's text, None for a recorded message (:class:`RecordedTexts` answers for those)."""
        return None if id(message) in self._recorded else self.text(message)


def prompt_texts(prompt: Sequence[Message], memo: RawTexts | None = None) -> list[str]:
    """What the model reads of each prompt message, newest first (the order searches go in)."""
    if memo is None:
        return [_text(m) for m in reversed(prompt)]
    return [memo.text(m) for m in reversed(prompt)]


def shown_retrievals(texts: Iterable[str]) -> Shown:
    """The output ids and iteration ranges whose exact ``context_retrieve`` call a prompt shows."""
    ids: set[str] = set()
    ranges: set[tuple[int, int]] = set()
    for text in texts:
        if _MARK not in text:
            continue
        for kind, value in _CALL.findall(text):
            if kind == "tool_call_id":
                ids.add(value)
            elif (match := _RANGE.match(value)) is not None:
                low = int(match.group(1))
                ranges.add((low, int(match.group(2) or low)))
    return frozenset(ids), tuple(sorted(ranges))


class RecordedTexts:
    """What the model reads of a run's recorded messages, and which of them hold a string: for one
    run, whatever the policy.

    A prompt is mostly recorded messages passed through unchanged (the same objects), plus the few
    messages a policy wrote or rewrote (*foreign* ones). A string without a line break is in a
    prompt's text when a recorded message of the prompt holds it or a foreign one does, so a search
    reads only the foreign messages, and looks the recorded ones up among the string's holders,
    found once per run (:meth:`holders`) from the run's words (:class:`~._vocabulary.Vocabulary`,
    which the word and salient rulers read too)."""

    def __init__(self, run: RecordedRun) -> None:
        self._messages = run.messages
        texts = [_text(m) for m in run.messages]
        self.ids = frozenset(map(id, run.messages))  # the entries keep the messages alive
        self.vocabulary = Vocabulary(texts)  # the texts of ``run.messages``, in order
        self._holders: dict[str, frozenset[int]] = {}
        self._sequences: dict[int, tuple[Sequence[str], list[frozenset[int]]]] = {}
        self._marked = {id(m): text for m, text in zip(run.messages, texts, strict=True) if _MARK in text}

    def holders(self, string: str) -> frozenset[int]:
        """The ids of the recorded messages whose text holds ``string`` (which holds no line break)."""
        found = self._holders.get(string)
        if found is None:  # "" is in every text, so never absent: it needs no holder
            messages = self._messages
            found = self._holders[string] = frozenset(
                id(messages[i]) for i in self.vocabulary.holding(string)
            )
        return found

    def absent(self, strings: Sequence[str], view: RawView) -> tuple[str, ...]:
        """The ``strings`` (none with a line break) that the prompt of ``view`` does not hold."""
        if not strings:
            return ()
        ids = view.ids()
        # each string's holders against the prompt's ids, in C (no bytecode per string)
        unheld = list(compress(strings, map(frozenset.isdisjoint, self._held(strings), repeat(ids))))
        if not unheld:
            return ()
        joined = view.joined()  # the prompt's own texts, read only when a recorded holder is not there
        return tuple(s for s in unheld if s not in joined)

    def _held(self, strings: Sequence[str]) -> list[frozenset[int]]:
        """:meth:`holders` of each of ``strings``, kept per sequence object (a step's salient strings
        or words are one tuple for every policy)."""
        entry = self._sequences.get(id(strings))  # the entry keeps the sequence alive
        if entry is None or entry[0] is not strings:
            entry = self._sequences[id(strings)] = (strings, [self.holders(s) for s in strings])
        return entry[1]

    def marked(self, prompt: Sequence[Message]) -> list[str]:
        """The texts of the recorded messages of ``prompt`` that show a ``context_retrieve`` call."""
        if not self._marked:
            return []
        return [text for m in prompt if (text := self._marked.get(id(m))) is not None]


class RawView:
    """One prompt as the salient and word rulers read it: its messages' ids, and the texts of its
    foreign messages (derived only for the messages a prompt changed: ``series``, over
    :meth:`RawTexts.foreign`), newest first; each built once, when first asked for."""

    __slots__ = (
        "_id_sets",
        "_ids",
        "_join",
        "_joined",
        "_prompt",
        "_recorded",
        "_series",
        "_shown",
        "_texts",
    )

    def __init__(
        self,
        prompt: Sequence[Message],
        recorded: RecordedTexts,
        series: SparseSeries[Message, str],
        ids: Set[int] | None = None,
        join: Joined | None = None,
        *,
        id_sets: IdSets | None = None,
    ) -> None:
        """``ids``: the ids of the prompt's messages, if known; else built when first needed, by
        ``id_sets`` (the policy's, extending the set of its previous prompt) if given."""
        self._prompt = prompt
        self._id_sets = id_sets
        self._join = join  # the policy's joined texts of its previous prompts
        self._recorded = recorded
        self._series = series
        self._ids = ids  # the ids of the prompt's messages (built when first needed if not given)
        self._texts: list[str] | None = None
        self._joined: str | None = None
        self._shown: Shown | None = None

    def ids(self) -> Set[int]:
        if self._ids is None:
            found = self._id_sets
            self._ids = set(map(id, self._prompt)) if found is None else found(self._prompt)
        return self._ids

    def texts(self) -> list[str]:
        """The foreign messages' texts, newest first."""
        if self._texts is None:
            self._texts = self._series(self._prompt)[::-1]
        return self._texts

    def joined(self) -> str:
        if self._joined is None:
            texts = self.texts()
            self._joined = self._join(texts) if self._join is not None else "\n".join(texts)
        return self._joined

    def retrievals(self) -> Shown:
        """The exact ``context_retrieve`` calls the prompt shows (:func:`shown_retrievals`)."""
        if self._shown is None:
            self._shown = shown_retrievals([*self.texts(), *self._recorded.marked(self._prompt)])
        return self._shown


class WordIndex:
    """Salient words per step of one run (the word-level ruler), from one pass over the run.
    ``vocabulary``: the run's (:attr:`RecordedTexts.vocabulary`), whose words it reads (else found
    again)."""

    def __init__(self, run: RecordedRun, vocabulary: Vocabulary | None = None) -> None:
        always = [_text(m) for m in run.messages if m.iteration == 0]
        if run.tools:
            always.append(orjson.dumps(list(run.tools)).decode())
        self._always = "\n".join(always)
        self._first_observed: dict[str, int] = {}  # word -> iteration of its first observation
        self._first_any: dict[str, int] = {}  # word -> position of its first appearance
        # iteration -> (position, words) of its action
        self._actions: dict[int, tuple[int, frozenset[str]]] = {}
        later = [(i, m) for i, m in enumerate(run.messages) if m.iteration >= 1]
        for position, (index, message) in enumerate(later):
            words = vocabulary.words[index] if vocabulary is not None else words_of(_text(message))
            # ``difference`` of a dict walks the words (``words - d.keys()`` walked every key: quadratic)
            self._first_any.update(dict.fromkeys(words.difference(self._first_any), position))
            if message.role in ("tool", "user"):
                self._first_observed.update(dict.fromkeys(words.difference(self._first_observed), position))
            if message.role == "assistant":
                self._actions.setdefault(message.iteration, (position, words))
        self._in_always: dict[str, bool] = {}
        self._salient: dict[int, tuple[str, ...]] = {}

    def salient(self, iteration: int) -> tuple[str, ...]:
        """Sorted salient words of the action of ``iteration`` (the same for every policy: computed once)."""
        found = self._salient.get(iteration)
        if found is None:
            found = self._salient[iteration] = self._compute(iteration)
        return found

    def _compute(self, iteration: int) -> tuple[str, ...]:
        if iteration not in self._actions:
            return ()
        position, words = self._actions[iteration]
        found = []
        for word in words:
            first = self._first_any.get(word)
            if first is None or first >= position or self._first_observed.get(word) != first:
                continue
            if not self._always_has(word):
                found.append(word)
        return tuple(sorted(found))

    def _always_has(self, word: str) -> bool:
        known = self._in_always.get(word)
        if known is None:
            known = self._in_always[word] = word in self._always
        return known


class Recovery:
    """How many missed strings one retrieval call could recover, and its tokens."""

    __slots__ = ("recoverable", "tokens")

    def __init__(self, recoverable: int = 0, tokens: int = 0) -> None:
        self.recoverable = recoverable
        self.tokens = tokens


class RetrievalSources:
    """Where strings appeared in a run's history, to tell which misses a shown retrieval call recovers."""

    def __init__(self, run: RecordedRun, counter: TokenCounter) -> None:
        self._messages = [m for m in run.messages if m.iteration >= 1]
        self._texts = [_text(m) for m in self._messages]
        self._counter = counter
        self._occurrences: dict[str, tuple[int, ...]] = {}
        self._tokens: dict[int, int] = {}
        self._corpus: tuple[str, list[int]] | None = None  # the texts joined, searched when first needed

    def _where(self, string: str) -> tuple[int, ...]:
        """The indexes of the texts holding ``string``, ascending."""
        found = self._occurrences.get(string)
        if found is None:
            found = self._occurrences[string] = self._search(string)
        return found

    def _search(self, string: str) -> tuple[int, ...]:
        """:meth:`_where` by one search of the joined texts (a string without a line break lies in one
        text), skipping to the next text after each hit."""
        if not string or "\n" in string:
            return tuple(i for i, text in enumerate(self._texts) if string in text)
        if self._corpus is None:
            self._corpus = joined(self._texts)
        return tuple(texts_holding(self._corpus, string))

    def page_tokens(self, index: int, page_tokens: int) -> int:
        """Tokens one retrieval of message ``index`` returns: the message, at most one page."""
        if index not in self._tokens:
            self._tokens[index] = self._counter.count_text(self._messages[index].text)
        return min(self._tokens[index], page_tokens)

    def sources(
        self, missed: Sequence[str], iteration: int, ids: frozenset[str], ranges: Sequence[tuple[int, int]]
    ) -> dict[str, int]:
        """``{missed string: index of the message}`` for the misses of the step before ``iteration``
        that a shown call (``ids``, ``ranges``: :func:`shown_retrievals`) recovers. Indexes count
        the run's messages of iteration 1 and later, in order."""
        found: dict[str, int] = {}
        if not ids and not ranges:
            return found
        for string in missed:
            source = self._source(string, iteration, ids, tuple(ranges))
            if source is not None:
                found[string] = source
        return found

    def recovery(self, missed: Sequence[str], iteration: int, shown: Shown, page_tokens: int) -> Recovery:
        """The misses of the step before ``iteration`` that a call ``shown`` in the prompt
        (:func:`shown_retrievals`) recovers, and the tokens of those calls and what they return."""
        if not missed:
            return Recovery()
        ids, ranges = shown
        found = self.sources(missed, iteration, ids, ranges)
        charged = {s: CALL_TOKENS + self.page_tokens(s, page_tokens) for s in set(found.values())}
        return Recovery(len(found), sum(charged.values()))

    def _source(
        self, string: str, iteration: int, ids: frozenset[str], ranges: tuple[tuple[int, int], ...]
    ) -> int | None:
        for index in reversed(self._where(string)):
            message = self._messages[index]
            if message.iteration >= iteration:
                continue
            if message.role == "tool" and message.tool_call_id in ids:
                return index
            if any(low <= message.iteration <= high for low, high in ranges):
                return index
        return None
