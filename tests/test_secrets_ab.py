"""``edgeenergy ab`` writes no password given in the pytest arguments: not in the sessions'
reports, their logs, ``verdict.md``, nor its own output (a failed session's last lines)."""

from __future__ import annotations

from pathlib import Path

from test_ab import GATE, SIM, SMALL, made_board, output, run_ab, write_side

PASSWORD = "ab-secret-5"
URL = f"postgresql://ci:{PASSWORD}@db.example/energy"


def files_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(folder.iterdir()))


def test_sessions_record_the_arguments_without_the_password(tmp_path: Path) -> None:
    side = write_side(tmp_path / "side")
    out = tmp_path / "out"
    done = run_ab(
        tmp_path,
        "--base", side, "--head", side, "--rounds", "2", "--max-rounds", "2", "--fail", GATE,
        "--out", out, "--", "test_work.py", "-o", f"edge_note={URL}", *SIM, *SMALL,
    )  # fmt: skip
    assert done.returncode in (0, 1), output(done)
    assert sorted(p.name for p in out.glob("*.json")) == ["A-1.json", "A-2.json", "B-1.json",
                                                          "B-2.json"]  # fmt: skip
    assert (out / "verdict.md").exists()
    assert "edge_note=postgresql://ci:***@db.example/energy" in (out / "A-1.json").read_text()
    assert PASSWORD not in files_text(out) + output(done)


def test_a_session_echoing_the_password_is_logged_and_shown_without_it(tmp_path: Path) -> None:
    side = write_side(tmp_path / "side")
    out = tmp_path / "out"
    done = run_ab(
        tmp_path,
        "--base", side, "--head", side, "--fail", GATE, "--out", out,
        "--", "test_work.py", f"--no-such-history={URL}", *SIM, *SMALL,
    )  # fmt: skip
    assert done.returncode == 2, output(done)
    # pytest names the argument it does not know, URL and all: hidden on its way to the log
    assert "--no-such-history=postgresql://ci:***@db.example" in (out / "A-1.log").read_text()
    assert "--no-such-history=postgresql://ci:***@db.example" in done.stderr
    assert PASSWORD not in files_text(out) + output(done)
    assert not made_board(done).exists()
