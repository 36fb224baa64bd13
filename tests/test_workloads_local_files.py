"""Local weights and data directories: CLI over environment, clear errors, no downloads."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_edgeenergy.workloads.errors import LocalFileError
from pytest_edgeenergy.workloads.local_files import (
    RANDOM_WEIGHTS,
    WEIGHTS_ENV,
    load_local_weights,
    resolve_dir,
    weights_file,
)


def test_cli_wins_over_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli, env = tmp_path / "cli", tmp_path / "env"
    cli.mkdir()
    env.mkdir()
    monkeypatch.setenv(WEIGHTS_ENV, str(env))
    assert resolve_dir(str(cli), WEIGHTS_ENV, "--edge-weights") == cli
    assert resolve_dir(None, WEIGHTS_ENV, "--edge-weights") == env
    monkeypatch.delenv(WEIGHTS_ENV)
    assert resolve_dir(None, WEIGHTS_ENV, "--edge-weights") is None
    assert resolve_dir("", WEIGHTS_ENV, "--edge-weights") is None


def test_a_missing_directory_names_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(LocalFileError, match=r"--edge-weights \(command line\).*not a directory"):
        resolve_dir(str(tmp_path / "nope"), WEIGHTS_ENV, "--edge-weights")
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "gone"))
    with pytest.raises(LocalFileError, match=rf"{WEIGHTS_ENV} \(environment\)"):
        resolve_dir(None, WEIGHTS_ENV, "--edge-weights")


def test_weights_file_is_workload_dot_pt(tmp_path: Path) -> None:
    assert weights_file(None, "resnet18") is None
    assert weights_file(tmp_path, "resnet18") is None
    (tmp_path / "resnet18.pt").write_bytes(b"x")
    assert weights_file(tmp_path, "resnet18") == tmp_path / "resnet18.pt"
    (tmp_path / "alexnet.pt").mkdir()
    assert weights_file(tmp_path, "alexnet") is None


def test_state_dict_round_trip_and_wrapped_state_dict(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="weights need torch")
    torch.manual_seed(1)
    source = torch.nn.Linear(4, 3)
    torch.save({"state_dict": source.state_dict()}, tmp_path / "lin.pt")
    target = torch.nn.Linear(4, 3)
    assert not torch.equal(target.weight, source.weight)
    assert load_local_weights(target, "lin", tmp_path) == str(tmp_path / "lin.pt")
    assert torch.equal(target.weight, source.weight) and torch.equal(target.bias, source.bias)
    assert load_local_weights(torch.nn.Linear(4, 3), "other", tmp_path) == RANDOM_WEIGHTS


def test_mismatched_shapes_name_the_file(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="weights need torch")
    torch.save(torch.nn.Linear(4, 5).state_dict(), tmp_path / "lin.pt")
    with pytest.raises(LocalFileError, match=r"lin\.pt: does not match the Linear"):
        load_local_weights(torch.nn.Linear(4, 3), "lin", tmp_path)
