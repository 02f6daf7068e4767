"""The OpenAI Agents SDK: the tiered policy as ``RunConfig(call_model_input_filter=...)``.

Seams (openai-agents 0.20):

- ``call_model_input_filter`` gets a copy of the run's input items before every model call and
  returns the items to send: the run's own items (``result.to_input_list()``) stay complete;
- :meth:`TieredInputFilter.tools` wraps each ``FunctionTool``'s ``on_invoke_tool`` so that an
  identical call of a read-only tool in a later reply is answered from the dedup cache, and adds
  ``context_retrieve`` as a ``FunctionTool``. The SDK sends every tool of the agent with every
  request, so ``context_retrieve``'s schema goes out from the first call (about 100 tokens);
- after every filtered call a ``tiered_context`` custom span carries the session's usage into the
  run's trace, and :attr:`TieredInputFilter.usage` holds it.

Responses items map to chat messages: a ``reasoning`` item, an assistant ``message`` and the
``function_call`` items of one reply are one assistant message (its text: the reasoning summary,
then the message); ``function_call_output`` is a tool result. Items with no chat form (hosted tool
calls) travel with the message before them. One filter per run (or conversation): it holds that
run's session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agents import FunctionTool
from agents.run_config import CallModelData, ModelInputData
from agents.tool_context import ToolContext
from agents.tracing import custom_span

from .._messages import Message
from ..context._names import RETRIEVE_TOOL_NAME
from ..context._policy import Policy
from ..context._session import ContextSession, LeanRequest, SessionUsage
from ..context.retrieve._tool import RETRIEVE_DESCRIPTION

__all__ = ["TieredInputFilter", "from_responses", "to_responses"]

_ASSISTANT_SIDE = ("reasoning", "function_call")
_CHAT = frozenset({"user", "system", "developer", "assistant", "function_call_output", *_ASSISTANT_SIDE})


class TieredInputFilter:
    """A ``call_model_input_filter`` running one run's requests through a :class:`ContextSession`."""

    def __init__(
        self,
        policy: Policy | str = "tiered",
        *,
        read_only_tools: Iterable[str] = (),
        model: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.session = ContextSession(
            policy, model=model, read_only_tools=read_only_tools, context_window=context_window
        )

    @property
    def usage(self) -> SessionUsage:
        return self.session.usage

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = data.model_data.input
        chat, origins = from_responses(items)
        tools = [_schema(tool) for tool in data.agent.tools if isinstance(tool, FunctionTool)]
        lean = await self.session.prepare(chat, tools)
        with custom_span("tiered_context", data=self.session.usage.to_dict()):
            pass
        return ModelInputData(
            input=to_responses(items, lean, origins), instructions=data.model_data.instructions
        )

    def tools(self, *tools: FunctionTool) -> list[FunctionTool]:
        """``tools`` with their calls served through the session (dedup), and ``context_retrieve``
        when the policy can hide anything: give the result to ``Agent(tools=...)``."""
        wrapped = [self._wrap(tool) for tool in tools]
        schema = self.session.retrieve_schema
        if schema is not None:
            wrapped.append(
                FunctionTool(
                    name=RETRIEVE_TOOL_NAME,
                    description=RETRIEVE_DESCRIPTION,
                    params_json_schema=schema["function"]["parameters"],
                    on_invoke_tool=self._retrieve,
                    strict_json_schema=False,
                )
            )
        return wrapped

    async def _retrieve(self, context: ToolContext[Any], arguments: str) -> str:
        return await self.session.retrieve(arguments or "{}", call_id=context.tool_call_id)

    def _wrap(self, tool: FunctionTool) -> FunctionTool:
        invoke = tool.on_invoke_tool
        session = self.session

        async def on_invoke_tool(context: ToolContext[Any], arguments: str) -> Any:
            async def execute() -> Any:
                return await invoke(context, arguments)

            return await session.run_tool(tool.name, arguments or "{}", context.tool_call_id, execute)

        tool.on_invoke_tool = on_invoke_tool
        return tool


def _schema(tool: FunctionTool) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
    return {"type": "function", "function": function}


# --------------------------------------------------------------------------- Responses -> chat
def from_responses(items: Sequence[Any]) -> tuple[list[dict[str, Any]], list[tuple[int, ...]]]:
    """Chat messages for Responses input items, and the items each stands for (see the module
    docstring). Items before the first chat message are kept with none (the empty group, -1)."""
    chat: list[dict[str, Any]] = []
    groups: list[list[int]] = []
    names: dict[str, str] = {}
    replying = False  # the items of one reply follow each other
    for index, item in enumerate(items):
        kind = _kind(item)
        if kind in ("assistant", *_ASSISTANT_SIDE):
            if not replying:
                chat.append({"role": "assistant", "content": None})
                groups.append([])
            replying = True
            _add_to_reply(chat[-1], item, kind, names)
            groups[-1].append(index)
            continue
        replying = replying and kind not in _CHAT
        if kind == "function_call_output":
            call_id = str(item.get("call_id") or "")
            chat.append(_tool(call_id, names.get(call_id, ""), _text(item.get("output"))))
            groups.append([index])
        elif kind in ("user", "system", "developer"):
            chat.append({"role": kind, "content": _text(item.get("content"))})
            groups.append([index])
        elif groups:  # no chat form: it travels with the message before it
            groups[-1].append(index)
        else:
            chat.append({"role": "system", "content": ""})  # a placeholder that keeps it in front
            groups.append([index])
    return chat, [tuple(group) for group in groups]


def _kind(item: Any) -> str:
    if not isinstance(item, Mapping):
        return "other"
    kind = item.get("type")
    if kind in (None, "message"):
        role = item.get("role")
        return role if isinstance(role, str) else "other"
    return kind if isinstance(kind, str) else "other"


def _add_to_reply(reply: dict[str, Any], item: Mapping[str, Any], kind: str, names: dict[str, str]) -> None:
    if kind == "function_call":
        call_id = str(item.get("call_id") or "")
        name = str(item.get("name") or "")
        names[call_id] = name
        arguments = item.get("arguments")
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": str(arguments or "")},
        }
        reply.setdefault("tool_calls", []).append(call)
        return
    text = _reasoning(item) if kind == "reasoning" else _text(item.get("content"))
    if text:
        reply["content"] = f"{reply['content']}\n{text}" if reply["content"] else text


def _reasoning(item: Mapping[str, Any]) -> str:
    parts = [*(item.get("summary") or ()), *(item.get("content") or ())]
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("text"))


def _text(content: Any) -> str:
    """The text of a message's content or a tool's output (text parts joined, others named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, Mapping):
        return "\n".join(_part_text(part) for part in content)
    return str(content)


def _part_text(part: Any) -> str:
    if isinstance(part, Mapping):
        text = part.get("text")
        return text if isinstance(text, str) else f"[{part.get('type', 'part')}]"
    return str(part)


def _tool(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name}


# --------------------------------------------------------------------------- lean request -> Responses
def to_responses(items: Sequence[Any], lean: LeanRequest, groups: Sequence[tuple[int, ...]]) -> list[Any]:
    """The input items for a lean request: the original items of each message the policy left
    unchanged; a rewritten one's items with the new text (a rewritten reply as an assistant
    message and its calls, reasoning left out); a message the policy added as an input message."""
    out: list[Any] = []
    for data, source, same in zip(lean.messages, lean.sources, lean.unchanged, strict=True):
        if source is None:
            out.append({"role": data.get("role", "user"), "content": str(data.get("content") or "")})
            continue
        members = [items[index] for index in groups[source]]
        out.extend(members if same else _rewritten(members, data))
    return out


def _rewritten(members: Sequence[Any], data: Mapping[str, Any]) -> list[Any]:
    message = Message.from_openai(
        {**data, "role": "assistant" if data.get("role") == "assistant" else "user"}
    )
    others = [item for item in members if _kind(item) not in _CHAT]
    if data.get("role") == "tool":
        outputs = [
            {**item, "output": message.text} for item in members if _kind(item) == "function_call_output"
        ]
        return [*outputs, *others]
    if data.get("role") != "assistant":
        return [{"role": data.get("role", "user"), "content": message.text}, *others]
    calls = {str(item.get("call_id")): item for item in members if _kind(item) == "function_call"}
    out: list[Any] = [{"role": "assistant", "content": message.text}] if message.text else []
    for call in message.tool_calls:
        original = calls.get(call.id, {"type": "function_call", "call_id": call.id, "name": call.name})
        # without the item id: a shortened call no longer needs the reasoning item it was paired with
        out.append({**{k: v for k, v in original.items() if k != "id"}, "arguments": call.arguments})
    return [*out, *others]
