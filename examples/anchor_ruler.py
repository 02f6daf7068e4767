"""An anchor ruler over ``tiered-agent bench prompts``: did the prompt show what the action quotes?

    tiered-agent bench prompts RUNS... --policies tiered,full,... --delta -o prompts.jsonl
    python examples/anchor_ruler.py prompts.jsonl [--examples N] [--policy tiered]

Written from the agent's side, with nothing from the policy or the bench's rulers (the file is read
with ``tiered_agent.bench.read_prompts``, whole or ``--delta``). At each model call the *anchors* of
the recorded action are the texts the agent must have seen verbatim to act:

- ``edit``: the ``old_str`` / ``old_string`` of a str_replace-style edit (SWE-agent / OpenHands
  ``str_replace_editor``, Claude Code ``Edit`` / ``MultiEdit``: any call argument of that name);
- ``patch``: the context and removed lines of an ``apply_patch`` patch or a unified diff (Codex);
- ``sed-s``: the pattern of a ``sed -i 's/PATTERN/.../'`` substitution (escapes undone);
- ``sed-n``: for ``sed -n 'A,Bp' FILE`` read right after a listing (an output since the agent's
  previous action holding numbered lines of FILE: ``grep -n``, ``cat -n``, ``nl``, Read's ``N→``),
  that listing's lines numbered A to B.

Each anchor is cut into lines; a line counts when, stripped, it is 8+ characters and not only
punctuation. It is *shown* when an earlier message of the policy's prompt holds it, *missed* when
the full history (the ``full`` policy's prompt at that call, which the export must hold) holds it
and the prompt does not, and not counted otherwise (the agent wrote it from its own knowledge).
A message's text is its content (a JSON content also decoded: Codex wraps outputs in JSON) and its
calls' decoded arguments. Prints per family (the run id's first part up to ``_``) and policy: calls,
calls with anchors, anchors counted, anchors per call with any, missed, the miss rate over anchors
and over calls (calls with a missed anchor among those with any), the anchor lines not counted (in
no earlier message of the full history), and missed / counted by kind.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tiered_agent.bench import read_prompts

Message = Mapping[str, Any]
FENCE = re.compile(r"```(?:bash|sh|shell)?\n(.*?)```", re.S)
PATCH_HUNK = re.compile(r"^@@ -\d", re.M)
SED_RANGE = re.compile(r"\s*(\d+)\s*(?:,\s*(\d+)\s*)?p\s*;?\s*")
ADDRESS = r"(?:\d+|\$|/(?:[^/\\]|\\.)*/)"
SED_S = re.compile(rf"(?:^|[;\n{{])\s*(?:{ADDRESS}(?:\s*,\s*{ADDRESS})?\s*)?s([^\w\s\\])")
NUMBERED = (
    re.compile(r"^(?P<path>[^\s:]+):(?P<n>\d+)[:-]"),  # grep -n over files
    re.compile(r"^(?P<n>\d+)[:-]"),  # grep -n in one file
    re.compile(r"^\s*(?P<n>\d+)(?:\t|→)"),  # cat -n, nl, Claude Code's Read
)
SHELL_BREAKS = {"|", "||", "&", "&&", ";", ";;", "(", ")", "\n"}


def worth(line: str) -> bool:
    """An anchor line: 8+ characters stripped, and not only punctuation."""
    return len(line) >= 8 and any(c.isalnum() for c in line)


def anchor_lines(text: str) -> list[str]:
    """The lines of ``text`` that count as anchors, stripped."""
    return [line.strip() for line in text.splitlines() if worth(line.strip())]


def _strings(value: Any) -> list[str]:
    """The strings of a JSON value, values only, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _decoded(raw: str) -> Any:
    """``raw`` as JSON when it is a JSON object or list, else None."""
    if not raw.lstrip().startswith(("{", "[")):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _arguments(message: Message) -> list[Any]:
    """The decoded arguments of each call of ``message`` (a string when they are not JSON)."""
    out = []
    for call in message.get("tool_calls") or ():
        raw = str((call.get("function") or {}).get("arguments", ""))
        decoded = _decoded(raw)
        out.append(raw if decoded is None else decoded)
    return out


def message_text(message: Message) -> str:
    """What a message shows: its content (and, when that is JSON, its strings decoded) and its calls'
    decoded arguments."""
    content = message.get("content")
    parts = _strings(content) if isinstance(content, list) else [content] if isinstance(content, str) else []
    for part in list(parts):
        decoded = _decoded(part)
        if decoded is not None:
            parts += _strings(decoded)
    for arguments in _arguments(message):
        parts += _strings(arguments)
    return "\n".join(parts)


def _keyed(value: Any, keys: frozenset[str]) -> Iterator[str]:
    """Every string under one of ``keys`` anywhere in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                yield item
            else:
                yield from _keyed(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _keyed(item, keys)


def edit_anchors(action: Sequence[Message]) -> list[str]:
    """The lines of every ``old_str`` / ``old_string`` of the action's calls."""
    olds = frozenset({"old_str", "old_string"})
    return [
        line
        for m in action
        for args in _arguments(m)
        for old in _keyed(args, olds)
        for line in anchor_lines(old)
    ]


def commands(action: Sequence[Message]) -> list[str]:
    """What the action ran or sent: its calls' argument strings and its contents' shell code blocks."""
    out = [s for m in action for args in _arguments(m) for s in _strings(args)]
    for message in action:
        content = message.get("content")
        if isinstance(content, str):
            out += FENCE.findall(content)
    return out


def _hunk_context(line: str) -> str:
    """The code an ``@@`` line names (``@@ def f`` in a patch, after ``@@ -a,b +c,d @@`` in a diff)."""
    if PATCH_HUNK.match(line):
        parts = line.split("@@")
        return parts[2].strip() if len(parts) > 2 else ""
    return line[2:].strip()


def patch_anchors(text: str) -> list[str]:
    """The context and removed lines of the ``*** Begin Patch`` patches and unified diffs in ``text``."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("*** Begin Patch") or PATCH_HUNK.match(line):
            inside = True
        elif line.startswith("*** End Patch"):
            inside = False
            continue
        if not inside or line.startswith(("*** ", "--- ", "+++ ")):
            continue
        body = _hunk_context(line) if line.startswith("@@") else line[1:].strip() if line[:1] in " -" else ""
        if worth(body):
            out.append(body)
    return out


def _sed_calls(command: str) -> Iterator[list[str]]:
    """The arguments of each ``sed`` of a shell command (none when it does not parse)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return
    for index, token in enumerate(tokens):
        if token == "sed" or token.endswith("/sed"):
            rest = tokens[index + 1 :]
            end = next((i for i, t in enumerate(rest) if t in SHELL_BREAKS), len(rest))
            yield rest[:end]


@dataclass(frozen=True, slots=True)
class Sed:
    """One ``sed``: in place or not, quiet or not, its scripts and its files."""

    in_place: bool
    quiet: bool
    scripts: tuple[str, ...]
    files: tuple[str, ...]


def parse_sed(arguments: Sequence[str]) -> Sed:
    """``sed``'s arguments read the way sed reads them (short flags bundled, -e/-f take a value)."""
    flags, scripts, files = "", [], []
    tokens = iter(arguments)
    for token in tokens:
        if token in {"-e", "--expression"}:
            scripts.append(next(tokens, ""))
        elif token in {"-f", "--file"}:  # a script in a file: nothing here to read
            scripts.append("")
            next(tokens, "")
        elif token.startswith("--expression="):
            scripts.append(token.split("=", 1)[1])
        elif token.startswith("--"):
            flags += (
                "i" if token.startswith("--in-place") else "n" if token in {"--quiet", "--silent"} else ""
            )
        elif token.startswith("-") and len(token) > 1:
            flags += token[1:]
        else:
            files.append(token)
    if not scripts and files:
        scripts.append(files.pop(0))
    return Sed("i" in flags, "n" in flags, tuple(scripts), tuple(files))


def _unescape(pattern: str) -> str:
    """A sed pattern's text: ``\\n`` a newline, other escapes their character, ``^`` / ``$`` dropped."""
    text = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), pattern)
    return text.removeprefix("^").removesuffix("$")


def substitution_patterns(script: str) -> list[str]:
    """The patterns of the ``s`` commands of a sed script."""
    out = []
    for match in SED_S.finditer(script):
        delimiter, start = match.group(1), match.end()
        chars, index = [], start
        while index < len(script) and script[index] != delimiter:
            chars.append(script[index : index + 2] if script[index] == "\\" else script[index])
            index += 2 if script[index] == "\\" else 1
        out.append(_unescape("".join(chars)))
    return out


def sed_ranges(sed: Sed) -> list[tuple[int, int]]:
    """The line ranges a quiet ``sed`` prints (``A,Bp`` / ``Ap``)."""
    out = []
    for script in sed.scripts if sed.quiet and not sed.in_place else ():
        for part in script.split(";"):
            match = SED_RANGE.fullmatch(part)
            if match:
                first = int(match.group(1))
                out.append((first, int(match.group(2) or first)))
    return out


def _numbered(line: str, file: str, command: str) -> int | None:
    """The number ``line`` of a listing gives a line of ``file`` (None: not a numbered line of it)."""
    name = file.rsplit("/", 1)[-1]
    for pattern in NUMBERED:
        match = pattern.match(line)
        if match is None:
            continue
        path = match.groupdict().get("path")
        same = name in command if path is None else path.rsplit("/", 1)[-1] == name
        return int(match.group("n")) if same else None
    return None


def _latest_outputs(history: Sequence[Message]) -> list[tuple[str, str]]:
    """The outputs since the agent's last action in ``history``, each with the command behind it."""
    calls: dict[str, str] = {}
    last = max((i for i, m in enumerate(history) if m.get("role") == "assistant"), default=-1)
    if last >= 0:
        for call in history[last].get("tool_calls") or ():
            calls[str(call.get("id"))] = str((call.get("function") or {}).get("arguments", ""))
    fallback = message_text(history[last]) if last >= 0 else ""
    return [
        (message_text(m), calls.get(str(m.get("tool_call_id")), fallback))
        for m in history[last + 1 :]
        if m.get("role") not in {"assistant", "system"}
    ]


def listing_anchors(sed: Sed, history: Sequence[Message]) -> list[str]:
    """The lines of the listing right before that give the lines ``sed -n 'A,Bp' FILE`` prints."""
    out = []
    for first, last in sed_ranges(sed):
        for file in sed.files:
            for text, command in _latest_outputs(history):
                for line in text.splitlines():
                    number = _numbered(line, file, command)
                    if number is not None and first <= number <= last and worth(line.strip()):
                        out.append(line.strip())
    return out


def anchors(action: Sequence[Message], history: Sequence[Message]) -> list[tuple[str, str]]:
    """Every anchor line of ``action`` with its kind, once each, in order (see the module docstring)."""
    found = [("edit", line) for line in edit_anchors(action)]
    for command in commands(action):
        found += [("patch", line) for line in patch_anchors(command)]
        for arguments in _sed_calls(command):
            sed = parse_sed(arguments)
            if sed.in_place:
                patterns = [p for script in sed.scripts for p in substitution_patterns(script)]
                found += [("sed-s", line) for p in patterns for line in anchor_lines(p)]
            found += [("sed-n", line) for line in listing_anchors(sed, history)]
    return list(dict.fromkeys(found))


def family(run_id: str) -> str:
    """A run's family: its id's first part, up to the first ``_``."""
    return run_id.split("/", 1)[0].split("_", 1)[0]


@dataclass(frozen=True, slots=True)
class Miss:
    """A missed anchor: where the call was and where the full history held the line."""

    run_id: str
    step: int
    kind: str
    line: str
    message: int  # the index in the full history of the last message holding it
    iteration: int
    role: str
    history: int  # the full history's length
    shown_as: str  # what the policy's prompt holds of that iteration and role (its start)


@dataclass
class Tally:
    """One family and policy: calls, calls with anchors, anchors, misses (by kind), calls with one."""

    calls: int = 0
    calls_with: int = 0
    anchors: int = 0
    missed: int = 0
    calls_missed: int = 0
    uncounted: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)


class Texts:
    """Each message's text, computed once per message object of one run (the reader shares them)."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Message, str]] = {}

    def of(self, messages: Sequence[Message]) -> list[str]:
        out = []
        for message in messages:
            held = self._texts.get(id(message))
            if held is None or held[0] is not message:
                held = self._texts[id(message)] = (message, message_text(message))
            out.append(held[1])
        return out


def _where(
    line: str, history: Sequence[Message], texts: Sequence[str], prompt: Sequence[Message]
) -> tuple[Any, ...]:
    """The last message of the full history holding ``line`` and what the prompt holds of it."""
    index = max(i for i, text in enumerate(texts) if line in text)
    held = history[index]
    mine = [
        m for m in prompt if m.get("iteration") == held.get("iteration") and m.get("role") == held.get("role")
    ]
    shown = message_text(mine[0])[:240] if mine else "(no message of that iteration and role)"
    return index, int(held.get("iteration") or 0), str(held.get("role")), len(history), shown


class Ruler:
    """The anchor tallies of an export, run by run (the export writes a run's lines together)."""

    def __init__(self) -> None:
        self.tallies: dict[tuple[str, str], Tally] = defaultdict(Tally)
        self.misses: dict[str, list[Miss]] = defaultdict(list)

    def run(self, lines: Sequence[Mapping[str, Any]]) -> None:
        """Tally one run's lines (every policy's), against its ``full`` lines."""
        by_step: dict[int, dict[str, Mapping[str, Any]]] = defaultdict(dict)
        for line in lines:
            by_step[line["step"]][line["policy"]] = line
        texts = Texts()
        for step in sorted(by_step):
            policies = by_step[step]
            if "full" not in policies:
                raise ValueError("the export holds no `full` prompt for a call: add full to --policies")
            self._call(policies, texts)

    def _call(self, policies: Mapping[str, Mapping[str, Any]], texts: Texts) -> None:
        full = policies["full"]
        history = full["messages"]
        history_texts = texts.of(history)
        found = anchors(full["next"], history)
        counted = [(kind, line) for kind, line in found if any(line in text for text in history_texts)]
        for policy, line in policies.items():
            tally = self.tallies[(family(line["run_id"]), policy)]
            tally.calls += 1
            tally.uncounted += len(found) - len(counted)
            if not counted:
                continue
            prompt = texts.of(line["messages"])
            missed = [(kind, a) for kind, a in counted if not any(a in text for text in prompt)]
            tally.calls_with += 1
            tally.anchors += len(counted)
            tally.missed += len(missed)
            tally.calls_missed += bool(missed)
            tally.by_kind.update(kind for kind, _ in missed)
            tally.kinds.update(kind for kind, _ in counted)
            for kind, anchor in missed:
                where = _where(anchor, history, history_texts, line["messages"])
                self.misses[policy].append(Miss(line["run_id"], line["step"], kind, anchor, *where))


def measure(lines: Iterable[Mapping[str, Any]]) -> Ruler:
    """The ruler over an export's whole lines (as ``read_prompts`` yields them), run by run."""
    ruler = Ruler()
    run: list[Mapping[str, Any]] = []
    for line in lines:
        if run and line["run_id"] != run[0]["run_id"]:
            ruler.run(run)
            run = []
        run.append(line)
    if run:
        ruler.run(run)
    return ruler


def report(ruler: Ruler) -> list[str]:
    """One row per family and policy."""
    rows = [
        f"{'family':<15} {'policy':<16} {'calls':>6} {'w/anch':>6} {'anchors':>7} {'/call':>5} "
        f"{'missed':>6} {'miss':>6} {'calls':>6} {'uncounted':>9}  missed/anchors by kind"
    ]
    for (fam, policy), t in sorted(ruler.tallies.items()):
        rate = t.missed / t.anchors if t.anchors else 0.0
        per_call = t.calls_missed / t.calls_with if t.calls_with else 0.0
        kinds = ", ".join(f"{k} {t.by_kind[k]}/{n}" for k, n in sorted(t.kinds.items()))
        rows.append(
            f"{fam:<15} {policy:<16} {t.calls:>6} {t.calls_with:>6} {t.anchors:>7} "
            f"{t.anchors / max(t.calls_with, 1):>5.1f} {t.missed:>6} {rate:>6.1%} {per_call:>6.1%} "
            f"{t.uncounted:>9}  {kinds}"
        )
    return rows


def examples(ruler: Ruler, policy: str, count: int) -> list[str]:
    """``count`` missed anchors of ``policy``, spread evenly over all of them, each with its place."""
    misses = ruler.misses.get(policy, [])
    count = min(count, len(misses))
    picked = [misses[i * len(misses) // count] for i in range(count)]
    return [
        f"{m.run_id} step {m.step} [{m.kind}] {m.line[:160]!r}\n"
        f"    full history: message {m.message} of {m.history} (iteration {m.iteration}, {m.role})\n"
        f"    {policy} holds of it: {m.shown_as!r}"
        for m in picked
    ]


USAGE = "usage: python examples/anchor_ruler.py prompts.jsonl [--examples N] [--policy NAME]"


def _options(argv: Sequence[str]) -> tuple[Path, int, str]:
    """The export, ``--examples`` and ``--policy``; ValueError (the usage) for anything else."""
    options = {"--examples": "0", "--policy": "tiered"}
    paths, tokens = [], iter(argv)
    for token in tokens:
        if token in options:
            options[token] = next(tokens, "")
        else:
            paths.append(token)
    if len(paths) != 1 or not options["--examples"].isdigit() or not options["--policy"]:
        raise ValueError(USAGE)
    return Path(paths[0]), int(options["--examples"]), options["--policy"]


def main(argv: Sequence[str]) -> int:
    """Print the report (and examples); 2 with one sentence on a usage error or an unusable export."""
    try:
        path, count, policy = _options(argv)
        result = measure(read_prompts(path))
    except (ValueError, OSError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    print("\n".join(report(result)))
    if count:
        print(f"\n{count} missed anchors of {policy} (spread over all of them):")
        print("\n".join(examples(result, policy, count)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
