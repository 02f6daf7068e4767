"""``--ray [ADDRESS]`` is checked before anything runs; how many event loops a batch opens."""

from __future__ import annotations

import importlib.util

import pytest

from tiered_agent._cluster import RayAddress, require_ray
from tiered_agent._errors import ConfigurationError
from tiered_agent.batch._capacity import AGENTS_PER_LANE, lane_count


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("local", False),
        ("auto", False),
        ("127.0.0.1:6379", True),
        ("localhost:6379", True),
        ("[::1]:6379", True),
        ("10.0.0.5:6379", False),
        ("head.cluster.internal:6379", False),
        ("ray://127.0.0.1:10001", True),
    ],
)
def test_ray_addresses(address: str, loopback: bool) -> None:
    assert RayAddress(address).loopback is loopback
    assert RayAddress(address).local is (address == "local")


@pytest.mark.parametrize(
    "address", ["", "../shared/trajectories", "host", "host:0", "host:70000", "http://h:1"]
)
def test_a_bad_ray_address_is_one_sentence(address: str) -> None:
    with pytest.raises(
        ConfigurationError, match=r"--ray takes 'local', 'auto', HOST:PORT or ray://HOST:PORT"
    ):
        RayAddress(address)


def test_ray_missing_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(ConfigurationError, match=r"--ray needs Ray, which is not installed: pip install"):
        require_ray()


def test_bench_refuses_ray_without_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    result = CliRunner().invoke(cli, ["bench", "--ray"])
    assert result.exit_code == 2 and "--ray needs Ray" in result.output


@pytest.mark.parametrize(
    ("concurrency", "workers", "cpus", "lanes"),
    [
        (1, 0, 8, 1),
        (50, 0, 2, 1),
        (AGENTS_PER_LANE, 0, 2, 1),
        (AGENTS_PER_LANE + 1, 0, 2, 2),
        (2000, 0, 2, 2),  # never more loops than CPUs
        (2000, 0, 16, 8),
        (50, 4, 2, 4),  # asked for: as many as asked
        (3, 8, 2, 3),  # never more loops than agents
    ],
)
def test_lanes_for_a_batch(concurrency: int, workers: int, cpus: int, lanes: int) -> None:
    assert lane_count(concurrency, workers, cpus) == lanes
