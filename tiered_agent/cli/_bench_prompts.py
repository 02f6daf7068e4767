"""``tiered-agent bench prompts``: the prompts a policy builds for recorded runs, as JSON lines."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from ._options import CACHE_MODEL_CHOICES, EXIT_FAILED, EXIT_USAGE

if TYPE_CHECKING:
    from ..bench._prompts import PromptsWritten
    from ..bench._recorded import RecordedRun
    from ..context._policy import Policy

__all__ = ["prompts"]


def _policies(value: str, files: tuple[Path, ...]) -> dict[str, Policy]:
    """The presets named in ``value`` and the policies of ``files`` (``Policy.to_dict()`` JSON), by name."""
    from .._errors import ConfigurationError
    from ..bench._replay import policy_config

    policies = {name: policy_config(name) for name in (n.strip() for n in value.split(",")) if name}
    for path in files:
        policy = _policy_file(path)
        if policy.name in policies:
            raise ConfigurationError(f"two policies are named {policy.name!r} (--policies and {path})")
        policies[policy.name] = policy
    if not policies:
        raise ConfigurationError("no policy given: --policies or --policy-json")
    return policies


def _policy_file(path: Path) -> Policy:
    """A policy as ``Policy.to_dict()`` wrote it, read from ``path``; one sentence for anything else."""
    import orjson

    from .._errors import ConfigurationError
    from ..context._policy import Policy

    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ConfigurationError(f"cannot read the policy in {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} does not hold a policy (a JSON object, as Policy.to_dict() writes)")
    steps = data.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise ConfigurationError(
            f'{path}: "steps" must be a list of JSON objects (as Policy.to_dict() writes)'
        )
    try:
        return Policy.from_dict(data)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None
    except (
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
        OverflowError,
    ) as exc:  # a value no check foresaw
        raise ConfigurationError(
            f"{path}: not a policy this version reads ({type(exc).__name__}: {exc})"
        ) from None


def _runs(paths: tuple[Path, ...], wanted: tuple[str, ...]) -> list[RecordedRun]:
    """Every run in ``paths`` (the calibration reads them all); an error when ``wanted`` picks none."""
    from .._errors import ConfigurationError
    from ..bench._bundle import bundled_trace_paths
    from ..bench._importers import load_runs
    from ..bench._prompts import select
    from ..bench._replay import unique_ids

    runs = list(load_runs(list(paths) or bundled_trace_paths()).runs)
    if not select(unique_ids(runs), wanted):  # the ids the export writes (a copy is id#2)
        named = f" named {', '.join(wanted)}" if wanted else ""
        raise ConfigurationError(f"no recorded run{named} found in the paths given")
    return runs


def _write(
    output: Path,
    runs: list[RecordedRun],
    policies: dict[str, Policy],
    only: tuple[str, ...],
    *,
    cache_model: str,
    delta: bool,
) -> PromptsWritten:
    """Write the export to the new file ``output``; a partial file is removed when it fails (a
    signal, a full disk), and nothing but the file this made."""
    from .._errors import ConfigurationError, OutputWriteError
    from ..bench._prompts import write_prompts
    from ..bench._replay import ReplaySettings

    settings = ReplaySettings(cache_model=cache_model)
    try:  # fails, touching nothing, if anything is there (a link to nothing too)
        out = output.open("xb")
    except FileExistsError:
        raise ConfigurationError(f"{output} exists; name a new file (nothing is overwritten)") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot write {output} ({exc.strerror or exc})") from None
    try:
        with out:
            write = functools.partial(write_prompts, runs, policies, out, settings, only=only, delta=delta)
            return anyio.run(write)
    except OSError as exc:
        output.unlink(missing_ok=True)  # the file this export created, and only that
        raise OutputWriteError(f"cannot write {output} ({exc.strerror or exc}); nothing was kept") from None
    except BaseException:
        output.unlink(missing_ok=True)
        raise


@click.command("prompts")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSON-lines file to write (a new file: an existing one is never overwritten).",
)
@click.option(
    "--policies",
    "policies_opt",
    metavar="A,B,...",
    help="Comma-separated policies (presets or tiered:<tier>-only ablations); default: tiered, or "
    "none when --policy-json is given.",
)
@click.option(
    "--policy-json",
    "policy_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A policy of your own as Policy.to_dict() writes it (JSON), written under its name; repeatable.",
)
@click.option(
    "--run",
    "run_ids",
    multiple=True,
    metavar="ID",
    help="Only this run (its id, or the id's last part); repeatable. Default: every run.",
)
@click.option(
    "--cache-model",
    type=click.Choice(CACHE_MODEL_CHOICES),
    default="auto",
    show_default=True,
    help="The cache the aging decisions price (as bench --cache-model).",
)
@click.option(
    "--delta",
    is_flag=True,
    help="Compact: each line after a run's first per policy holds only the messages after those it "
    "shares with the previous prompt (tiered_agent.bench.read_prompts reads both forms).",
)
def prompts(
    *,
    paths: tuple[Path, ...],
    output: Path,
    policies_opt: str | None,
    policy_files: tuple[Path, ...],
    run_ids: tuple[str, ...],
    cache_model: str,
    delta: bool,
) -> None:
    """Write the prompt each policy builds at every model call of the recorded runs in PATHS
    (default: the bundled traces), replayed as the bench replays them, with the action the agent
    recorded next: one JSON line per run, policy and call, for rulers of your own (docs/cli.md)."""
    from .._errors import ConfigurationError, TieredAgentError

    if output.exists() or output.is_symlink():  # a symbolic link that leads nowhere exists too
        click.echo(f"Error: {output} exists; name a new file (nothing is overwritten).", err=True)
        sys.exit(EXIT_USAGE)
    try:
        named = policies_opt if policies_opt is not None else ("" if policy_files else "tiered")
        policies = _policies(named, policy_files)
        written = _write(
            output, _runs(paths, run_ids), policies, run_ids, cache_model=cache_model, delta=delta
        )
    except ConfigurationError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except (TieredAgentError, OSError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    click.echo(f"wrote {written.lines} prompts of {written.runs} runs to {output}", err=True)
    if written.failed:
        click.echo(
            f"Warning: the replay of {len(written.failed)} run(s) failed and was left out "
            f"(the first: {written.failed[0]!r}; see the log).",
            err=True,
        )
