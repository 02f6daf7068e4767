"""Regenerate the bundled traces (``traces/``) from the shared trajectories.

Usage: ``python scripts/bundle_traces.py [--shared ../shared/trajectories] [--out traces]``.
The selection is :data:`tiered_agent.bench._bundle.BUNDLE`; the output is
deterministic (re-running it leaves ``traces/`` byte-identical).
"""

from __future__ import annotations

from pathlib import Path

import click

from tiered_agent.bench._bundle import build_bundle

ROOT = Path(__file__).resolve().parents[1]


@click.command()
@click.option(
    "--shared",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=ROOT.parent / "shared" / "trajectories",
    show_default=True,
    help="The shared trajectories folder (with SOURCES.md).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=ROOT / "traces",
    show_default=True,
    help="Where to write the bundle.",
)
def main(shared: Path, out: Path) -> None:
    """Convert the curated runs into the project's trace format, with attribution and licenses."""
    written = build_bundle(shared, out)
    extra = [out / "SOURCES.md", *(p for p in (out / "licenses").rglob("*") if p.is_file())]
    total = sum(p.stat().st_size for p in [*written, *extra])
    click.echo(f"wrote {len(written)} traces to {out} ({total / 1e6:.2f} MB in total)")


if __name__ == "__main__":
    main()
