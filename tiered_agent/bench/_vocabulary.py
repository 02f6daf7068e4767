"""Which of a run's texts hold a string, answered from the texts' words instead of a scan of them all.

The salient and word rulers ask, for thousands of strings per run, which recorded messages hold
each (a plain substring test: ``string in text``). A scan of the whole run per string costs the
run's length each time. A string made of ASCII word characters (``[A-Za-z0-9_]``) lies inside one
maximal run of such characters of any text that holds it, so the texts holding it are the holders
of the *words* (maximal runs of 4+ such characters) that contain it, found in the run's
vocabulary (its distinct words, far shorter than its texts). Any other string holds its longest
run of word characters: when that run has 4+ characters, only the texts holding that run are
searched for the string itself. Shorter strings are searched in every text, as before. The
answers are exactly ``[i for i, t in enumerate(texts) if string in t]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._terms import joined, texts_holding

__all__ = ["MIN_WORD", "Vocabulary", "words_of"]

MIN_WORD = 4  # the shortest word the vocabulary holds (the word ruler's words are this long or longer)
_WORD = re.compile(r"\w{4,}", re.ASCII)  # the maximal runs of 4+ ASCII word characters of a text
_RUNS = re.compile(r"[A-Za-z0-9_]+")


def words_of(text: str) -> frozenset[str]:
    """The distinct words of ``text``: its maximal runs of 4+ ASCII word characters."""
    return frozenset(_WORD.findall(text))


class Vocabulary:
    """The words of one run's texts, and which texts hold a string (see the module docstring)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.words = [words_of(t) for t in texts]  # per text, its distinct words
        self._holders: dict[str, list[int]] | None = None  # word -> the texts holding it, ascending
        self._tokens: list[str] = []  # the distinct words, in the order of ``_joined``
        self._joined = ""
        self._starts: list[int] = []
        self._corpus: tuple[str, list[int]] | None = None  # every text joined, for short strings

    def holding(self, string: str) -> list[int]:
        """The indexes of the texts holding ``string`` (which holds no line break), ascending."""
        if not string:
            return []
        longest = max(_RUNS.findall(string), key=len, default="")
        if len(longest) < MIN_WORD:
            return self._scan(string)
        candidates = self._containing(longest)
        if longest == string:
            return candidates
        texts = self.texts
        return [i for i in candidates if string in texts[i]]

    def _containing(self, run: str) -> list[int]:
        """The texts holding ``run`` (4+ ASCII word characters): the holders of the words containing it."""
        holders = self._index()
        tokens, starts, vocabulary = self._tokens, self._starts, self._joined
        found: set[int] = set()
        for index in texts_holding((vocabulary, starts), run):
            found.update(holders[tokens[index]])
        return sorted(found)

    def _index(self) -> dict[str, list[int]]:
        if self._holders is None:
            holders: dict[str, list[int]] = {}
            for index, words in enumerate(self.words):
                for word in words:
                    found = holders.get(word)
                    if found is None:
                        holders[word] = [index]
                    else:
                        found.append(index)
            self._tokens = list(holders)
            self._joined, self._starts = joined(self._tokens)
            self._holders = holders
        return self._holders

    def _scan(self, string: str) -> list[int]:
        """:meth:`holding` by a search of every text (one hit per text is enough)."""
        if self._corpus is None:
            self._corpus = joined(self.texts)
        return texts_holding(self._corpus, string)
