"""A scripted, OpenAI-compatible fake model on 127.0.0.1, for trying the CLI with no network and no key.

    python examples/fake_model.py &      # listens on http://127.0.0.1:8765/v1
    tiered-agent run "Add 2 and 3, count the words of 'tools over stdio', keep a note" \\
        --model openai/gpt-4o-mini --api-base http://127.0.0.1:8765/v1 --mcp-config examples/mcp.json

It does not read the task: it calls the demo MCP server's tools (examples/mcp_server.py)
in four steps (``demo__add`` and ``demo__count_words``; ``demo__add`` again, which the
dedup cache answers; ``demo__remember``; ``demo__recall``), then answers with what the
tools returned. Standard library only; stop it with Ctrl-C or ``kill``.
"""

from __future__ import annotations

import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STEPS: list[list[tuple[str, dict[str, Any]]]] = [
    [("demo__add", {"a": 2, "b": 3}), ("demo__count_words", {"text": "tools over stdio"})],
    [("demo__add", {"a": 2, "b": 3})],  # the same read-only call again: the dedup cache answers
    [("demo__remember", {"note": "MCP tools work offline"})],
    [("demo__recall", {})],
]


def reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The next chat completion: the scripted tool calls, then a final answer quoting the results."""
    step = sum(1 for message in messages if message["role"] == "assistant")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if step < len(STEPS):
        message["tool_calls"] = [
            {
                "id": f"call_{step}_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(STEPS[step])
        ]
    else:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        message["content"] = "The MCP tools answered: " + " | ".join(r.replace("\n", " ") for r in results)
    usage = {
        "prompt_tokens": 100 * (step + 1),
        "completion_tokens": 20,
        "total_tokens": 100 * (step + 1) + 20,
    }
    finish = "tool_calls" if "tool_calls" in message else "stop"
    return {
        "id": f"chatcmpl-fake-{step}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404)
            return
        payload = json.dumps(reply(body.get("messages", []))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"fake model listening on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()
