"""When the plugin sets up a board, and what it says when it cannot.

Inert sessions (no option, no ``energy`` fixture) touch no board and print no summary;
a machine without power monitors gives a clear error; ``--edge-idle-s=0`` means no idle
baseline and so no net energy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ENV_VARS = (
    "EDGEENERGY_BOARD",
    "EDGEENERGY_ROOT",
    "EDGEENERGY_INTERVAL_MS",
    "EDGEENERGY_SOURCE",
    "EDGEENERGY_REPORT",
    "EDGEENERGY_IDLE_S",
)
RUN_TIMEOUT_S = 120.0
HEAVY_MODULES = ("numpy", "pandas", "matplotlib", "torch", "jtop", "pynvml")

# Records, at the end of the inner session, what the plugin set up and what got imported.
PROBE_CONFTEST = f"""
import json
import sys

from pytest_edgeenergy.plugin import SESSION_KEY

HEAVY = {HEAVY_MODULES!r}


def pytest_sessionfinish(session):
    es = session.config.stash.get(SESSION_KEY, None)
    engine = None if es is None else es.engine_if_made
    state = {{
        "session": es is not None,
        "board": None if es is None else engine is not None and engine.board is not None,
        "meter": None if es is None else engine is not None and engine.meter is not None,
        "root": None if engine is None or engine.root is None else str(engine.root),
        "tests": None if es is None else sorted(engine.tests if engine is not None else ()),
        "heavy": sorted(m for m in HEAVY if m in sys.modules),
    }}
    (session.config.rootpath / "probe.json").write_text(json.dumps(state))
"""

PLAIN = """
def test_plain():
    assert 1 + 1 == 2
"""

USES_ENERGY = """
import json
import time


def test_uses_energy(energy):
    with energy.window("w") as w:
        time.sleep(0.3)  # >= 0.3 s: a window on a busy host keeps enough samples
    print("\\nEDGE-RESULT " + json.dumps(w.result.to_json()))
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's own EDGEENERGY_* settings must not leak into the inner sessions."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def result_json(stdout: str) -> Any:
    prefix = "EDGE-RESULT "
    found = [line[len(prefix) :] for line in stdout.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, f"expected one result line in:\n{stdout}"
    return json.loads(found[0])


def host_has_rails() -> bool:
    """True when this machine's own sysfs has power monitors (a real Jetson)."""
    from pytest_edgeenergy.board.detect import detect

    return bool(detect(Path("/")).rails.rails)


def test_the_plugin_session_reaches_the_engine_instead_of_passing_it_through() -> None:
    """What the engine knows (board, meter, records, report) is read of the engine: the
    adapter keeps no property of its own but the engine itself."""
    from pytest_edgeenergy.plugin.session import PluginSession

    properties = {name for name, v in vars(PluginSession).items() if isinstance(v, property)}
    assert properties == {"engine", "engine_if_made"}


def test_inert_without_options_or_energy_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE_CONFTEST)
    pytester.makepyfile(test_inner=PLAIN)
    result = pytester.runpytest_subprocess(timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert not [line for line in out.splitlines() if line.startswith("=") and " energy" in line]
    assert not [line for line in out.splitlines() if line.startswith("board:")]
    probe = json.loads((pytester.path / "probe.json").read_text())
    assert probe["board"] is False
    assert probe["meter"] is False
    assert probe["root"] is None
    assert probe["tests"] == []
    assert probe["heavy"] == [], f"heavy modules imported by an inert session: {probe['heavy']}"


def test_no_rails_and_no_options_gives_clear_error(pytester: pytest.Pytester) -> None:
    if host_has_rails():
        pytest.skip("this machine has power monitors: the energy fixture would work here")
    pytester.makepyfile(test_inner=USES_ENERGY)
    result = pytester.runpytest_subprocess(timeout=RUN_TIMEOUT_S)
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "no power monitor" in out
    assert "--edge-board=sim:MODEL" in out
    assert "EDGE-RESULT" not in out


def test_root_without_rails_is_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """``--edge-root`` at a tree without power monitors: a usage error, not INTERNALERROR."""
    empty = tmp_path / "not-a-board"
    empty.mkdir()
    pytester.makepyfile(test_inner=PLAIN)
    result = pytester.runpytest_subprocess(f"--edge-root={empty}", timeout=RUN_TIMEOUT_S)
    text = result.stdout.str() + result.stderr.str()
    assert "no power monitor" in text
    assert str(empty) in text
    assert "INTERNALERROR" not in text
    assert "Traceback" not in text
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_idle_zero_gives_no_baseline(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE_CONFTEST)
    pytester.makepyfile(test_inner=USES_ENERGY)
    result = pytester.runpytest_subprocess(
        "-s", "--edge-board=sim:orin-nano", "--edge-idle-s=0", timeout=RUN_TIMEOUT_S
    )
    result.assert_outcomes(passed=1)
    r = result_json(result.stdout.str())
    assert r["valid"] is True and r["total"]["energy_j"] > 0
    assert r["idle_w"] is None
    assert r["net_energy_j"] is None
    assert r["total"]["net_energy_j"] is None
    assert all(rail["net_energy_j"] is None for rail in r["rails"].values())
    out = result.stdout.str()
    board_line = next(line for line in out.splitlines() if line.startswith("board:"))
    assert "idle" not in board_line
    row = next(line.split() for line in out.splitlines() if "::test_uses_energy " in line)
    assert row[4] != "-" and row[5] == "-", f"net J must be absent without idle: {row}"
    probe = json.loads((pytester.path / "probe.json").read_text())
    assert probe["board"] is True and probe["meter"] is True
    assert probe["tests"] == ["test_inner.py::test_uses_energy"]


def test_existing_report_of_another_run_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from pytest_edgeenergy.sim.tree import create

    board = create("orin-nano", tmp_path / "board")
    report = tmp_path / "r.json"
    pytester.makepyfile(test_p="def test_p(energy, operating_point):\n    pass\n")
    args = [f"--edge-root={board}", "--edge-idle-s=0", "--gpu-freq=max", f"--edge-report={report}"]
    pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider").assert_outcomes(passed=1)
    before = report.read_bytes()
    again = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines([f"*{report}*exists already*--edge-report-overwrite*"])
    assert "INTERNALERROR" not in again.stdout.str() + again.stderr.str()
    assert report.read_bytes() == before  # nothing overwritten


def test_setup_failure_is_reported_as_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    import json

    pytester.makepyfile(
        test_e="""
import pytest

@pytest.fixture
def broken(energy):
    raise RuntimeError("the model file is missing")

def test_e(broken):
    pass
"""
    )
    report = tmp_path / "r.json"
    result = pytester.runpytest_subprocess(
        "--edge-board=sim:nano",
        "--edge-idle-s=0",
        f"--edge-report={report}",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(errors=1)
    (entry,) = json.loads(report.read_text())["tests"]
    assert entry["status"] == "error"
    assert "the model file is missing" in entry["reason"]
