"""A scripted model for batch tests, served by the loopback fake OpenAI server.

Every task reads ``notes.txt`` (iteration 1), then answers ``answer for <id>`` (iteration 2). Tasks
in ``hold`` hang at iteration 2 until the server closes, so a test can interrupt them mid-run.
The task id is the last word of the task text (``"task <id>"``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fake_openai_server import Hang, HTTPRequest, model_not_found_response
from fakes import make_usage, text_reply, tool_reply

MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-batch-0123456789abcdef"
NOTES = "the retry delay doubles each attempt\n"


def task_line(task_id: str, **extra: Any) -> str:
    return json.dumps({"id": task_id, "task": f"task {task_id}", **extra})


def write_tasks(path: Path, ids: list[str], **extra: Any) -> Path:
    path.write_text("".join(task_line(i, **extra) + "\n" for i in ids))
    return path


class BatchModel:
    """The fake server's ``respond``: counts calls per task and the most requests served at once."""

    def __init__(self, hold: frozenset[str] = frozenset(), delay_s: float = 0.0) -> None:
        self.hold = hold
        self.delay_s = delay_s
        self.calls: Counter[str] = Counter()
        self.first_messages: dict[str, list[dict[str, Any]]] = {}  # the first request seen per task
        self.held: set[str] = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, request: HTTPRequest) -> Any:
        messages = request.body["messages"]
        task_id = next(m["content"] for m in messages if m["role"] == "user").split()[-1]
        iteration = 1 + sum(1 for m in messages if m["role"] == "assistant")
        with self._lock:
            self.calls[task_id] += 1
            self.first_messages.setdefault(task_id, messages)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)  # requests overlap: what the concurrency bound limits
            return self._answer(task_id, iteration, request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, task_id: str, iteration: int, request: HTTPRequest) -> Any:
        if request.body.get("model") == "nope":
            return model_not_found_response("nope")
        if iteration == 1:
            return tool_reply([("c1", "read_file", {"path": "notes.txt"})], make_usage(100, 5))
        if task_id in self.hold:
            with self._lock:
                self.held.add(task_id)
            return Hang()
        return text_reply(f"answer for {task_id}", make_usage(150, 7))
