"""A plain JSON-RPC server over stdio (no SDK: the SDK's server never writes these) for the tests.

``MCP_STDIO_MODE`` chooses the misbehaviour; ``MCP_STDIO_PID_FILE`` receives the process id and
``MCP_STDIO_CHILD_FILE`` the id of a child it forks (modes ``fork``). The one tool, ``echo``,
answers its ``text``; the call whose text is ``bad`` is the one that misbehaves:

- ``banner`` / ``partial`` / ``badutf8`` / ``bigline`` / ``leak``: that garbage on stdout (a banner,
  a JSON line cut midway, bytes that are not UTF-8, a 50 MB line, a line quoting
  ``MCP_STDIO_TOKEN``) before the first reply (``-before``) or before the bad call's reply
  (``-between``);
- ``no-init`` never answers ``initialize``; ``exit-init`` exits on it;
- ``twice`` answers the bad call three times; ``other-id`` answers it with another id;
- ``huge-reply``: the bad call's reply is a 20 MB line;
- ``fork``: forks a child that sleeps, and exits when its stdin closes (the child outlives it);
- ``stubborn``: ignores SIGTERM and the end of its stdin.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODE = os.environ.get("MCP_STDIO_MODE", "")
GARBAGE = {
    "banner": b"Server v1.2 listening on stdio\n",
    "partial": b'{"jsonrpc": "2.0", "id": \n',
    "badutf8": b"\xff\xfe\xfd garbage \xc3\x28\n",
    "bigline": b"z" * (50 * 1024 * 1024) + b"\n",
    "leak": f"stdout leak {os.environ.get('MCP_STDIO_TOKEN', '')} ".encode() + b"x" * 100 + b"\n",
}
TOOL = {
    "name": "echo",
    "description": "Echo a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def garbage(where: str) -> None:
    kind, _, at = MODE.partition("-")
    if kind in GARBAGE and at == where:
        sys.stdout.buffer.write(GARBAGE[kind])
        sys.stdout.buffer.flush()


def answer(message: dict[str, Any]) -> None:
    request_id, method = message.get("id"), message.get("method")
    if method == "initialize":
        if MODE == "exit-init":
            os._exit(1)
        if MODE != "no-init":
            version = message["params"]["protocolVersion"]
            info = {"name": "stdio-hostile", "version": "0"}
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
                }
            )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        call(request_id, message["params"]["arguments"].get("text", ""))
    elif request_id is not None:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})


def call(request_id: Any, text: str) -> None:
    bad = text == "bad"
    if bad:
        garbage("between")
    if bad and MODE == "huge-reply":
        text = "q" * (20 * 1024 * 1024)
    reply = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}
    if bad and MODE == "other-id":
        reply["id"] = 12345
    send(reply)
    if bad and MODE == "twice":
        send(reply)
        send({**reply, "result": {"content": [{"type": "text", "text": "second"}]}})


def main() -> None:
    pid_file = os.environ.get("MCP_STDIO_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "fork":
        child = os.fork()
        if child == 0:
            time.sleep(300)
            os._exit(0)
        with open(os.environ["MCP_STDIO_CHILD_FILE"], "w") as handle:
            handle.write(str(child))
    garbage("before")
    for line in sys.stdin.buffer:
        answer(json.loads(line))
    while MODE == "stubborn":
        time.sleep(1)


if __name__ == "__main__":
    main()
