"""The token counters' memos: plain dicts, bounded, emptied when full, and the counts unchanged."""

from __future__ import annotations

from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter, remember
from tiered_agent.bench._caching import IdCounter


def test_remember_empties_a_full_memo_first() -> None:
    memo: dict[str, int] = {}
    for i in range(5):
        assert remember(memo, f"k{i}", i, 2) == i
        assert len(memo) <= 2 and memo[f"k{i}"] == i
    assert memo == {"k4": 4}  # k2 and k3 filled it; k4 emptied it first


def test_a_counter_with_small_memos_counts_as_one_with_large_ones() -> None:
    texts = [f"line {i}: value_{i * 7} and more words\n" * (1 + i % 3) for i in range(40)]
    messages = [Message("tool", t, tool_call_id=f"c{i}", iteration=1) for i, t in enumerate(texts)]
    large, small = TokenCounter(), TokenCounter(cache_size=3)
    for _ in range(2):  # the second pass reads what the memos kept (or forgot)
        assert [small.count_text(t) for t in texts] == [large.count_text(t) for t in texts]
        assert [small.count_message(m) for m in messages] == [large.count_message(m) for m in messages]
        assert len(small._cache) <= 3 and len(small._messages) <= 3


def test_an_id_counter_keeps_at_most_its_token_budget_of_ids() -> None:
    texts = [f"def f{i}(x):\n    return x + {i}\n" * 4 for i in range(30)]
    reference = TokenCounter()
    counter = IdCounter(max_cached_tokens=100, max_cached_messages=4)
    for _ in range(2):
        for text in texts:
            assert counter.ids(text).tolist() == reference.encode(text)
            assert sum(map(len, counter._ids.values())) == counter._held <= 100
        messages = [Message("user", t) for t in texts]
        assert [counter.count_message(m) for m in messages] == [reference.count_message(m) for m in messages]
        assert len(counter._message_counts) <= 4
