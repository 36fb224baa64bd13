"""One result model for every fixture: names, validity, keys that never collide, the one
short operating-point label, and version 1 reports migrated on load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.report.keys import join_key, op_key, op_label
from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.report.schema import SCHEMA_VERSION

V1_REPORT = Path(__file__).parent / "data" / "report_v1_energy_and_bench.json"

# Written with the energy fixture and edge_bench side by side: windows of two labels, a
# parameter pytest gives (n), and a benchmark whose window figures must be named alike.
TEST_FILE = """
import time
import zlib

import pytest

DATA = bytes(range(256)) * 2048


def _work(n):
    # Long enough for the sensor (>= 5 samples) however fast this machine is.
    end = time.perf_counter() + 0.1 * n
    while time.perf_counter() < end:
        zlib.compress(DATA, 6)


@pytest.mark.parametrize("n", [4, 5])
def test_windows(energy, n):
    with energy.window("compress"):
        _work(n)
    with energy.window("load"):
        _work(n)


def test_bench(edge_bench):
    edge_bench.run(lambda: _work(0.5), items_per_call=1, params={"workload": "zlib"})
"""

GRID_FILE = """
def test_point(energy, operating_point):
    import time
    import zlib
    with energy.window("w"):
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end:
            zlib.compress(bytes(range(256)) * 2048, 6)
"""

RUN = [
    "--edge-min-window-s=0.3",
    "--edge-idle-s=0.3",
    "--edge-items=2",
    "--edge-repeats=3",
    "--edge-warmup=1",
    "-p",
    "no:cacheprovider",
    "-q",
]


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A report of the energy fixture and edge_bench, measured on a virtual Orin Nano."""
    where = tmp_path_factory.mktemp("mixed")
    (where / "test_mixed.py").write_text(TEST_FILE)
    report = where / "r.json"
    done = _pytest(
        where, "test_mixed.py", "--edge-board=sim:orin-nano", f"--edge-report={report}", *RUN
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return load_report(report)


def _test(report: dict[str, Any], prefix: str) -> dict[str, Any]:
    (found,) = [t for t in report["tests"] if t["id"].split("::")[-1].startswith(prefix)][:1]
    return found


def test_energy_and_bench_windows_share_names_units_and_validity(
    mixed_report: dict[str, Any],
) -> None:
    assert mixed_report["schema_version"] == SCHEMA_VERSION == 2
    windows = _test(mixed_report, "test_windows[4]")
    bench = _test(mixed_report, "test_bench")
    rails = [r["name"] for r in mixed_report["device"]["rails"]]
    window_names = {"energy_j", "energy_net_j", "power_mean", "power_peak", "duration_s"}
    window_names |= {f"energy_j.{r}" for r in rails}
    # The energy fixture's first label has plain names, the second is prefixed.
    assert set(windows["metrics"]) == window_names | {f"load.{n}" for n in window_names}
    assert window_names <= set(bench["metrics"])
    for name in window_names:
        assert windows["metrics"][name]["unit"] == bench["metrics"][name]["unit"], name
    assert windows["metrics"]["duration_s"]["unit"] == "s"
    assert set(windows["validity"]) == set(bench["validity"])
    assert windows["extra"]["windows"] == ["compress", "load"]
    # One sample per window: the energy fixture measured one window of each label.
    assert windows["metrics"]["energy_j"]["stats"]["n"] == 1
    total = mixed_report["device"]["total"]["rail"]
    assert windows["metrics"]["energy_j"]["value"] == pytest.approx(
        windows["metrics"][f"energy_j.{total}"]["value"]
    )


def test_parameters_keep_results_apart(mixed_report: dict[str, Any]) -> None:
    keys = [join_key(t) for t in mixed_report["tests"]]
    assert len(set(keys)) == len(keys) == 3
    params = sorted(k.params for k in keys if k.test.endswith("test_windows"))
    assert params == ["n=4", "n=5"]


def test_compare_shows_energy_fixture_figures_per_window(
    mixed_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    windows_only = {
        **mixed_report,
        "tests": [t for t in mixed_report["tests"] if "test_windows" in t["id"]],
    }
    path = tmp_path / "w.json"
    path.write_text(json.dumps(windows_only))
    assert compare_main([str(path), str(path), "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split(",")
    assert "energy [J]" in header and "J/item" not in header
    rows = [line.split(",") for line in out[1:]]
    energy = header.index("energy [J]")
    params = header.index("params")
    # 2 tests x 2 window labels x 2 reports, each with a number, none dropped.
    assert len(rows) == 8
    assert {r[params] for r in rows} == {"n=4", "n=5", "n=4 [load]", "n=5 [load]"}
    assert all(float(r[energy]) > 0 for r in rows)
    assert all(r[energy + 1] in ("1", "1.0") for r in rows if r[header.index("report")] == "#2")


def test_a_repeated_key_is_an_error_naming_both_tests(
    mixed_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _test(mixed_report, "test_windows[4]")
    twin = {**first, "id": first["id"].replace("test_windows[4]", "test_windows[again]")}
    twin["params"] = dict(first["params"])
    doc = {**mixed_report, "tests": [first, twin]}
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(doc))
    assert compare_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert first["id"] in err and twin["id"] in err and "same key" in err


def test_version_1_report_is_migrated_on_load() -> None:
    raw = json.loads(V1_REPORT.read_text())
    assert raw["schema_version"] == 1
    assert any(n.startswith("rail.") for t in raw["tests"] for n in t["metrics"])
    report = load_report(V1_REPORT)
    assert report["schema_version"] == 2
    names = [n for t in report["tests"] for n in t["metrics"]]
    assert not [n for n in names if n.endswith("duration") or "rail." in n]
    energy_test = report["tests"][1]
    assert {"duration_s", "energy_j.VDD_IN", "load.duration_s", "load.energy_j.VDD_SOC"} <= set(
        energy_test["metrics"]
    )
    raw_test = raw["tests"][1]
    assert (
        energy_test["metrics"]["load.energy_j.VDD_SOC"]
        == raw_test["metrics"]["load.rail.VDD_SOC.energy_j"]
    )
    bench = report["tests"][2]
    assert bench["metrics"] == raw["tests"][2]["metrics"]  # edge_bench names were already so


def test_version_1_and_2_reports_compare_with_each_other(
    mixed_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v1.json"
    shutil.copy(V1_REPORT, path)
    assert compare_main([str(path), str(path), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "duration" not in out.split("\n", 1)[0] or "time [s]" in out


@pytest.mark.parametrize(
    ("requested", "label"),
    [
        ({}, "dvfs"),
        ({"id": "15W", "power_mode": "15W", "gpu_freq_hz": None, "cpu_cores": None}, "15W"),
        ({"id": "15W-gpu612MHz", "power_mode": "15W", "gpu_freq_hz": 612000000}, "15W gpu612MHz"),
        ({"gpu_freq_hz": 114750000, "as": {"gpu_freq_hz": "min"}}, "gpu min"),
        ({"cpu_freq_hz": 1510400000, "emc_freq_hz": 2133000000}, "cpu1.5104GHz emc2.133GHz"),
        ({"cpu_cores": 4, "governor": "performance"}, "4cores performance"),
    ],
)
def test_one_short_label(requested: dict[str, Any], label: str) -> None:
    params = {"operating_point": {"requested": requested, "read_back": {}}}
    assert op_label(op_key(params)) == label
    assert "null" not in op_key(params) and "id=" not in op_key(params)


def test_min_and_max_join_across_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test_grid.py").write_text(GRID_FILE)
    reports = []
    for board in ("orin-nano", "agx-orin"):
        report = tmp_path / f"{board}.json"
        done = _pytest(
            tmp_path,
            "test_grid.py",
            f"--edge-board=sim:{board}",
            "--gpu-freq=min,max",
            f"--edge-report={report}",
            *RUN,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        reports.append(str(report))
    labels = {op_label(op_key(t["params"])) for t in load_report(reports[0])["tests"]}
    assert labels == {"gpu min", "gpu max"}
    assert compare_main([*reports, "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    ratio = header.index("energy [J]") + 1
    second = [line.split(",") for line in lines[1:] if ",#2," in line]
    assert len(second) == 2
    assert all(row[ratio] not in ("", "-") and float(row[ratio]) > 0 for row in second)
