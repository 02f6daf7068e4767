"""Classify a policy's misses by where the missed string lived in ``full`` (issue 18).

Replays each run as the bench does (``replay_prompts``), asks the line and own-writing rulers
(``bench/_evidence.py``) and the salient and word rulers which needed strings each prompt missed,
and files every miss under the newest earlier message that held it:

* the iteration's tier in that prompt: ``window`` (verbatim), ``aged`` (level 1), ``condensed``;
* the message part: ``reasoning:first`` / ``reasoning:later`` (the agent's text, in or after its
  first sentence), ``args:head`` / ``args:tail`` (a call's arguments, before or after
  ``max_arg_chars``), ``output`` (a tool result), ``user``;
* whether the term is still in the prompt somewhere (``present``: the evidence window is not) or
  not at all (``absent``), and whether the files note holds it (``note``).

Each miss is also recorded (``--json``): the kind of call whose output (or the agent's own call)
held the string (``read``, ``search``, ``listing``, ``test``, ``script``, ``edit``, ``own:KIND``:
:func:`action_kind`, by the command's first program), how many iterations back, the kind of the
action that needed it, and whether the agent named it in between. ``--compare BASE.json`` (another
policy's ``--json`` on the same runs) prints the misses this policy adds to that one by those
aspects: what a leaner policy hides that the other did not (round 24: what eager aging adds).

    python benchmarks/classify_misses.py [PATH ...] [--half A] [--family swe-shell] [--policy tiered]
        [--policy-json FILE] [--examples 3] [--json OUT] [--compare BASE.json]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

from tiered_agent._logging import configure_logging
from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._calibration import fit
from tiered_agent.bench._evidence import EvidenceIndex, PromptView, TextMemo
from tiered_agent.bench._metrics import SalienceIndex
from tiered_agent.bench._pricing import RunPlan
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, bench_plan, policy_config, replay_prompts
from tiered_agent.bench._rulers import WordIndex
from tiered_agent.bench._terms import message_text, normalize
from tiered_agent.context._policy import Policy
from tiered_agent.context.aging._reasoning import first_sentence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_tiered import _runs

RULERS = ("salient", "word", "line", "own")


def _part(message: Message, term: str, max_args: int) -> str:
    if message.role == "assistant":
        if term in (message.content or ""):
            return "reasoning:first" if term in first_sentence(message.content) else "reasoning:later"
        for call in message.tool_calls:
            at = call.arguments.find(term)
            if at >= 0:
                cut = "args:head" if at + len(term) <= max_args // 2 else "args:tail"
                return f"{cut}:{_command_kind(call.arguments)}"
        return "assistant:?"
    return "output" if message.role == "tool" else message.role


def _command_kind(arguments: str) -> str:
    try:
        data = orjson.loads(arguments)
        command = data.get("command", "") if isinstance(data, dict) else ""
    except orjson.JSONDecodeError:
        command = arguments
    if isinstance(command, list):  # Codex: ["bash", "-lc", SCRIPT]
        command = command[-1] if command and isinstance(command[-1], str) else ""
    head = command.lstrip()[:200] if isinstance(command, str) else ""
    if not isinstance(head, str):
        return "?"
    if "<<" in head.split("\n", 1)[0]:
        first = head.split("\n", 1)[0]
        if first.startswith(("python", "python3")):
            return "py-heredoc"
        return "file-heredoc" if ">" in first or "tee" in first else "other-heredoc"
    if head.startswith(("python -c", "python3 -c")):
        return "py-c"
    if "sed -i" in head:
        return "sed-i"
    return "other"


# What a command did, by its first program (a shell tool's command, or SWE-agent's own commands)
_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "edit",
        (
            "sed -i",
            "str_replace_editor str_replace",
            "str_replace_editor create",
            "edit ",
            "patch ",
            "git apply",
            "apply_patch",
            "str_replace",
            "create",
        ),
    ),
    (
        "test",
        (
            "pytest",
            "python -m pytest",
            "tox",
            "./runtests",
            "python runtests",
            "python tests/runtests",
            "python -m unittest",
            "make test",
            "bin/test",
        ),
    ),
    (
        "read",
        (
            "cat ",
            "sed -n",
            "head ",
            "tail ",
            "nl ",
            "open ",
            "goto ",
            "scroll",
            "less ",
            "more ",
            "str_replace_editor view",
            "view ",
        ),
    ),
    ("search", ("grep", "rg ", "git grep", "search_", "find_file", "ag ")),
    ("listing", ("ls", "find ", "tree", "git status", "git diff", "git log", "git show")),
    ("script", ("python", "python3", "./", "bash ", "sh ")),
)


def command_of(arguments: str) -> str:
    """The command text of a call's arguments (a shell tool's ``command``; else the arguments)."""
    try:
        data = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    command = data.get("command", "") if isinstance(data, dict) else ""
    if isinstance(command, list):  # Codex: ["bash", "-lc", SCRIPT]
        command = command[-1] if command and isinstance(command[-1], str) else ""
    if not isinstance(command, str):
        return ""
    if isinstance(data, dict) and not command.strip():
        return " ".join(str(v) for v in data.values())
    return command


def action_kind(name: str, arguments: str) -> str:
    """What a call did: edit, test, read, search, listing, script or other (its first program; a
    ``cd DIR &&`` before it skipped; a heredoc writing a file is an edit)."""
    command = command_of(arguments).strip()
    if name not in ("bash", "Bash", "shell", "exec_command", "execute_bash", "run_shell"):
        command = f"{name} {command}"
    while command.startswith("cd ") and "&&" in command:
        command = command.split("&&", 1)[1].strip()
    first = command.split("\n", 1)[0]
    if "<<" in first and (">" in first.split("<<", 1)[0] or "tee" in first):
        return "edit"
    for kind, heads in _KINDS:
        if any(command.startswith(h) or (kind in ("edit", "test") and f" {h}" in first) for h in heads):
            return kind
    return "other"


def _tier(iteration: int, through: int, condensed: int) -> str:
    if iteration <= condensed:
        return "condensed"
    return "aged" if iteration <= through else "window"


def _holder(message: Message) -> str:
    text = message.text
    if message.role == "user" and text.startswith("[Files you wrote"):
        return "in:files-note"
    if message.role == "user" and text.startswith("[Iterations"):
        return "in:condensed-note"
    if message.iteration == 0:
        return "in:task"
    if message.role == "tool" and text.startswith("[older output"):
        return "in:aged-output"
    return f"in:{message.role}"


class _Classifier:
    def __init__(self, run: RecordedRun, max_args: int) -> None:
        self.run = run
        self.evidence = EvidenceIndex(run)
        self.salience = SalienceIndex(run)
        self.words = WordIndex(run)
        self.messages = [m for m in run.messages if m.iteration >= 1]
        self.max_args = max_args
        self.calls = {c.id: c for m in self.messages for c in m.tool_calls}
        self.actions = {m.iteration: m for m in self.messages if m.role == "assistant"}

    def source(self, term: str, cutoff: int, *, observed: bool, raw: bool) -> Message | None:
        for message in reversed(self.messages[:cutoff]):
            if observed and message.role == "assistant":
                continue
            text = message_text(message) if raw else normalize(message_text(message))
            if term in text:
                return message
        return None

    def kind(self, message: Message) -> str:
        """What produced ``message``: the kind of the call it answers (an output), ``own:KIND`` (the
        agent's call that holds it), ``own:text``, or its role."""
        if message.role == "tool":
            call = self.calls.get(message.tool_call_id or "")
            return action_kind(call.name, call.arguments) if call is not None else "tool:?"
        if message.role == "assistant":
            kinds = [action_kind(c.name, c.arguments) for c in message.tool_calls]
            return f"own:{kinds[0]}" if kinds else "own:text"
        action = self.actions.get(message.iteration)  # mini-swe-agent's outputs are user messages
        if action is not None and action.tool_calls:
            call = action.tool_calls[0]
            return action_kind(call.name, call.arguments)
        return message.role

    def action(self, iteration: int) -> str:
        """The kind of the action of ``iteration`` (its first call's)."""
        action = self.actions.get(iteration)
        if action is None or not action.tool_calls:
            return "text"
        return action_kind(action.tool_calls[0].name, action.tool_calls[0].arguments)

    def mentioned(self, term: str, since: int, iteration: int) -> bool:
        """Whether the agent named ``term`` in an action after ``since`` and before ``iteration``."""
        return any(
            term in message_text(self.actions[k]) for k in range(since + 1, iteration) if k in self.actions
        )

    def missed(
        self, iteration: int, prompt: Sequence[Message], cutoff: int, needed: Counter[str]
    ) -> dict[str, list[tuple[str, bool, bool]]]:
        """Each ruler's strings the action of ``iteration`` needed and ``prompt`` missed, as (term,
        observed, raw) (``needed`` gains how many each ruler needed)."""
        view = PromptView(prompt, TextMemo())
        need = self.evidence.needed(iteration)
        joined = "\n".join(message_text(m) for m in prompt)
        salient = self.salience.salient(iteration)
        words = self.words.salient(iteration)
        needed.update(line=len(need.observed), own=len(need.own), salient=len(salient), word=len(words))
        return {
            "line": [
                (t, True, False)
                for t in need.observed
                if not self.evidence.shown(t, view, cutoff, observed=True)
            ],
            "own": [
                (t, False, False)
                for t in need.own
                if not self.evidence.shown(t, view, cutoff, observed=False)
            ],
            "salient": [(t, True, True) for t in salient if t not in joined],
            "word": [(t, True, True) for t in words if t not in joined],
        }

    def record(self, ruler: str, term: str, key: str, found: Message, iteration: int) -> dict[str, Any]:
        """One miss: where it was hidden (``key``), what held it, how far back, what needed it."""
        return {
            "run": self.run.run_id,
            "iteration": iteration,
            "ruler": ruler,
            "term": term,
            "key": key,
            "back": iteration - found.iteration,
            "source": self.kind(found),
            "action": self.action(iteration),
            "mentioned": self.mentioned(term, found.iteration, iteration),
        }

    def classify(
        self,
        term: str,
        cutoff: int,
        prompt: Sequence[Message],
        aging: tuple[int, int],
        *,
        observed: bool,
        raw: bool,
    ) -> tuple[str, Message | None]:
        found = self.source(term, cutoff, observed=observed, raw=raw)
        if found is None:
            return "no-source", None
        tier = _tier(found.iteration, *aging)
        part = _part(found, term, self.max_args)
        holders = sorted({_holder(m) for m in prompt if term in normalize(message_text(m))})
        return f"{tier}|{part}|{'+'.join(holders) or 'absent'}", found


async def _classify_run(
    run: RecordedRun, policy: Policy, max_args: int, examples: int, plan: RunPlan
) -> dict[str, Any]:
    cls = _Classifier(run, max_args)
    counts: dict[str, Counter[str]] = {r: Counter() for r in RULERS}
    needed: Counter[str] = Counter()
    samples: dict[str, list[str]] = {}
    records: list[dict[str, Any]] = []
    step = 0
    iterations = sorted({m.iteration for m in run.messages if m.role == "assistant" and m.iteration >= 1})
    async for prepared in replay_prompts(run, policy, ReplaySettings(), plan):
        iteration = iterations[step]
        step += 1
        prompt = prepared.built.messages
        record = prepared.record().aging
        aging = (record.through, record.condensed) if record is not None else (0, 0)
        cutoff = cls.evidence.cutoff(iteration)
        groups = cls.missed(iteration, prompt, cutoff, needed)
        for ruler, missed in groups.items():
            for term, observed, raw in missed:
                key, found = cls.classify(term, cutoff, prompt, aging, observed=observed, raw=raw)
                counts[ruler][key] += 1
                if found is not None:
                    records.append(cls.record(ruler, term, key, found, iteration))
                bucket = samples.setdefault(f"{ruler} {key}", [])
                if len(bucket) < examples:
                    bucket.append(f"{run.run_id} step {step} it {iteration}: {term}")
    return {
        "counts": {r: dict(c) for r, c in counts.items()},
        "needed": dict(needed),
        "samples": samples,
        "records": records,
    }


def _job(args: tuple[RecordedRun, dict[str, Any], int, int, RunPlan]) -> dict[str, Any]:
    configure_logging(level="error")
    run, policy, max_args, examples, plan = args
    return anyio.run(_classify_run, run, Policy.from_dict(policy), max_args, examples, plan)


def _records(results: Sequence[dict[str, Any]]) -> dict[tuple[str, int, str, str], dict[str, Any]]:
    return {(r["run"], r["iteration"], r["ruler"], r["term"]): r for res in results for r in res["records"]}


def _back(record: Mapping[str, Any]) -> str:
    back = record["back"]
    return "<=4" if back <= 4 else "5-10" if back <= 10 else "11-30" if back <= 30 else ">30"


ASPECTS: tuple[tuple[str, Callable[[Mapping[str, Any]], object]], ...] = (
    ("tier (what hid it)", lambda r: r["key"].split("|")[0]),
    ("output of", lambda r: r["source"]),
    ("iterations back", _back),
    ("the action needing it", lambda r: r["action"]),
    ("named by the agent in between", lambda r: r["mentioned"]),
)


def print_added(base: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]]) -> None:
    """The misses of ``results`` that ``base`` (another policy's, same runs) does not have, and those
    it has that ``results`` does not, per ruler, by where they were hidden and what the agent did."""
    before, after = _records(base), _records(results)
    for ruler in RULERS:
        added = [r for k, r in after.items() if k not in before and r["ruler"] == ruler]
        gone = sum(1 for k, r in before.items() if k not in after and r["ruler"] == ruler)
        print(f"\n== {ruler}: {len(added)} misses added, {gone} gone")
        for title, aspect in ASPECTS:
            counts = Counter(str(aspect(r)) for r in added)
            print(f"  {title}: " + ", ".join(f"{k} {n}" for k, n in counts.most_common(8)))


def main(argv: Sequence[str] | None = None) -> None:
    configure_logging(level="error")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--half", choices=("A", "B"))
    parser.add_argument("--family", default="swe-shell")
    parser.add_argument("--policy", default="tiered")
    parser.add_argument("--policy-json", type=Path)
    parser.add_argument("--max-args", type=int, default=200)
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--compare", type=Path, help="a --json of another policy: print the misses this one adds to it"
    )
    args = parser.parse_args(argv)
    shared = Path(__file__).resolve().parents[2] / "shared"
    paths = args.paths or [shared / "trajectories", shared / "sessions"]
    policy = (
        Policy.from_dict(orjson.loads(args.policy_json.read_bytes()))
        if args.policy_json
        else policy_config(args.policy)
    )
    runs = _runs(paths, args.half, args.family)
    calibration = fit(runs, TokenCounter("o200k_base"))  # as the bench calibrates the runs benched together
    jobs = [
        (r, policy.to_dict(), args.max_args, args.examples, bench_plan(r, ReplaySettings(), calibration))
        for r in runs
    ]
    with multiprocessing.Pool(args.workers) as pool:
        results = pool.map(_job, jobs)
    needed: Counter[str] = Counter()
    for result in results:
        needed.update(result["needed"])
    print(f"{len(runs)} runs; policy {policy.name}")
    for ruler in RULERS:
        total: Counter[str] = Counter()
        for result in results:
            total.update(result["counts"][ruler])
        missed = sum(total.values())
        print(f"\n== {ruler}: {missed} missed of {needed[ruler]} ({missed / max(needed[ruler], 1):.1%})")
        for key, n in total.most_common():
            print(f"{n:6d} {n / max(missed, 1):6.1%}  {key}")
            shown = [s for result in results for s in result["samples"].get(f"{ruler} {key}", [])[:1]]
            for sample in shown[: args.examples]:
                print(f"{'':15}{sample}")
    if args.json:
        args.json.write_bytes(orjson.dumps(results))
    if args.compare:
        print_added(orjson.loads(args.compare.read_bytes()), results)


if __name__ == "__main__":
    main()
