"""``edgeenergy sim create|run`` and ``edgeenergy board [restore]`` against virtual boards."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.plugin.options import SIM_MODELS
from pytest_edgeenergy.sim.truth import read_truth

CONSOLE_SCRIPT = Path(sys.executable).parent / "edgeenergy"

# model: the total-input rail (None: AGX boards, total is the sum of rails)
TOTAL_RAIL: dict[str, str | None] = {
    "nano": "POM_5V_IN",
    "tx2": "VDD_IN",
    "xavier-nx": "VDD_IN",
    "agx-xavier": None,
    "orin-nano": "VDD_IN",
    "orin-nx": "VDD_IN",
    "agx-orin": None,
    "thor": "VIN",
}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``edgeenergy ARGV`` in-process: (exit status, stdout, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_script(*argv: str) -> subprocess.CompletedProcess[str]:
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"console script {CONSOLE_SCRIPT} not installed")
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *argv], capture_output=True, text=True, timeout=120, check=False
    )


def board_json(capsys: pytest.CaptureFixture[str], root: Path) -> Any:
    code, out, err = run_cli(capsys, "board", "--root", str(root), "--json")
    assert code == 0, err
    return json.loads(out)


def test_total_rail_table_covers_every_model() -> None:
    assert set(TOTAL_RAIL) == set(SIM_MODELS)


@pytest.mark.parametrize("model", SIM_MODELS)
def test_sim_create_then_board_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str
) -> None:
    root = tmp_path / model
    code, out, err = run_cli(capsys, "sim", "create", model, str(root))
    assert code == 0, err
    assert str(root) in out

    data = board_json(capsys, root)
    assert {"identity", "rails", "total", "knobs", "power_modes"} <= set(data)
    ident = data["identity"]
    assert {"model", "soc", "l4t", "jetpack", "simulated"} <= set(ident)
    assert ident["simulated"] is True
    assert ident["model"] and ident["soc"] and ident["l4t"] and ident["jetpack"]

    rails = data["rails"]
    assert rails, f"{model}: no rails"
    for rail in rails:
        assert {"name", "is_total"} <= set(rail)
        assert isinstance(rail["is_total"], bool)
        assert rail.get("unit"), f"{model}: rail {rail['name']} has no unit"
        for rel in rail.get("files", []):
            assert (root / rel).exists(), f"{model}: {rel} named but missing under the root"
    names = [r["name"] for r in rails]
    assert len(names) == len(set(names))

    expected = TOTAL_RAIL[model]
    totals = [r["name"] for r in rails if r["is_total"]]
    assert data["total"]["rail"] == expected
    if expected is None:
        assert data["total"]["method"] == "sum"
        assert totals == []
    else:
        assert data["total"]["method"] == "rail"
        assert totals == [expected]

    assert isinstance(data["knobs"], dict) and data["knobs"]
    modes = data["power_modes"]
    assert modes, f"{model}: no power modes"
    assert all({"id", "name"} <= set(m) for m in modes)
    assert len({m["id"] for m in modes}) == len(modes)


def test_board_human_output_says_simulated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "agx"
    assert run_cli(capsys, "sim", "create", "agx-orin", str(root))[0] == 0
    code, out, _ = run_cli(capsys, "board", "--root", str(root))
    assert code == 0
    assert "SIMULATED" in out
    assert "sum of all rails" in out


def test_board_on_missing_root_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run_cli(capsys, "board", "--root", str(missing), "--json")
    assert code == 2
    assert str(missing) in err


def test_board_restore_on_fresh_board_has_nothing_to_restore(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "b"
    assert run_cli(capsys, "sim", "create", "orin-nano", str(root))[0] == 0
    code, out, err = run_cli(capsys, "board", "restore", "--root", str(root))
    assert code == 0, err
    assert "nothing to restore" in out
    code, out, err = run_cli(capsys, "board", "restore", "--root", str(root), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["found"] is False and data["ok"] is True


def test_sim_create_unknown_model_is_argparse_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "sim", "create", "jetson-foo", str(tmp_path / "x"))
    assert code == 2
    assert "jetson-foo" in err and "orin-nano" in err
    assert not (tmp_path / "x").exists()


def test_sim_create_into_foreign_dir_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "precious.txt").write_text("keep me\n")
    code, _, err = run_cli(capsys, "sim", "create", "nano", str(target))
    assert code == 2
    assert str(target) in err and "not empty" in err
    assert "Traceback" not in err
    assert (target / "precious.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in target.iterdir()) == ["precious.txt"]


def test_sim_create_replaces_an_existing_virtual_board(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "b"
    assert run_cli(capsys, "sim", "create", "nano", str(root))[0] == 0
    assert run_cli(capsys, "sim", "create", "thor", str(root))[0] == 0
    data = board_json(capsys, root)
    assert data["total"]["rail"] == "VIN"


def test_sim_run_animates_and_exits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "b"
    assert run_cli(capsys, "sim", "create", "xavier-nx", str(root))[0] == 0
    before = read_truth(root)
    # A subprocess: `sim run` installs SIGTERM/SIGINT handlers, which belong in its own process.
    done = run_script("sim", "run", str(root), "--seconds", "0.3")
    assert done.returncode == 0, done.stderr
    after = read_truth(root)
    assert after.seq > before.seq
    assert after.t_s > before.t_s
    assert after.total_energy_j > before.total_energy_j


def test_sim_run_on_missing_dir_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "sim", "run", str(tmp_path / "none"), "--seconds", "0.1")
    assert code == 2
    assert "sim create" in err


def test_console_script_create_and_board(tmp_path: Path) -> None:
    root = tmp_path / "b"
    created = run_script("sim", "create", "orin-nx", str(root))
    assert created.returncode == 0, created.stderr
    shown = run_script("board", "--root", str(root), "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["identity"]["simulated"] is True
    assert data["total"] == {**data["total"], "rail": "VDD_IN", "method": "rail"}


def test_console_script_bad_model_exit_2(tmp_path: Path) -> None:
    done = run_script("sim", "create", "nope", str(tmp_path / "x"))
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
    assert "Traceback" not in done.stderr


def test_board_sim_shows_a_virtual_board_made_for_the_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the command's temporary tree goes into this test's own temporary directory
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert main(["board", "--board", "sim:thor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["identity"]["simulated"] is True
    assert data["identity"]["sim_model"] == "thor"
    assert data["total"]["rail"] == TOTAL_RAIL["thor"]
    assert list(tmp_path.iterdir()) == []  # the temporary tree is gone again
    assert main(["board", "--board", "sim:thor"]) == 0
    assert "SIMULATED" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_board_restore_of_a_virtual_board_made_for_it_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["board", "restore", "--board", "sim:thor"]) == 2
    err = capsys.readouterr().err
    assert "nothing to restore" in err and "--root DIR" in err
