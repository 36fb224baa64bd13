"""The atomic report writer: valid at every instant, never clobbers another report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.report.model import (
    ReportHeader,
    ResultEntry,
    build_device,
    build_header,
    build_operating_point,
    build_result,
    build_validity,
    make_metric,
)
from pytest_edgeenergy.report.schema import SchemaError
from pytest_edgeenergy.report.writer import ReportExistsError, ReportWriter, default_report_path


def _header(run_id: str | None = None) -> ReportHeader:
    identity = Identity(
        model="NVIDIA Jetson Nano", soc="tegra210", simulated=True, sim_model="nano"
    )
    device = build_device(identity, RailMap(rails=(), total_rail="POM_5V_IN"))
    return build_header(device, command_line=["pytest"], run_id=run_id)


def _entry(i: int) -> ResultEntry:
    return build_result(
        f"suites/test_x.py::test_x[{i}]",
        status="passed",
        params={"workload": "resnet18", "batch_size": 8},
        metrics={"energy_per_item": make_metric("energy_per_item", [0.1, 0.11, 0.12])},
        validity=build_validity(samples=50, valid=True),
        duration_s=1.5,
    )


def test_writes_at_first_test_then_after_each_test_then_finish(tmp_path: Path) -> None:
    path = tmp_path / "reports" / "r.json"
    writer = ReportWriter(path, _header())
    assert not path.exists()  # a session that records no test leaves no file
    writer.add_test(_entry(0))
    first = load_report(path)
    assert len(first["tests"]) == 1 and first["finished_at"] is None
    writer.add_test(_entry(1))
    assert [t["id"] for t in load_report(path)["tests"]] == [_entry(0)["id"], _entry(1)["id"]]
    writer.finish(datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    final = load_report(path)
    assert final["finished_at"] == "2030-01-02T03:04:05Z"
    assert writer.test_count == 2
    assert [p.name for p in tmp_path.joinpath("reports").iterdir()] == ["r.json"]


def test_one_line_per_test_compact_json(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    writer = ReportWriter(path, _header())
    for i in range(3):
        writer.add_test(_entry(i))
    lines = path.read_text().splitlines()
    assert len(lines) == 5  # header, 3 tests, closing
    assert json.loads(lines[1].rstrip(",")) == json.loads(json.dumps(_entry(0)))
    assert ": " not in lines[1]


def test_invalid_entry_is_refused_and_file_keeps_earlier_tests(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    writer = ReportWriter(path, _header())
    writer.add_test(_entry(0))
    bad: dict[str, Any] = dict(_entry(1))
    bad["status"] = "great"
    with pytest.raises(SchemaError, match=r"test suites/test_x.py::test_x\[1\].*great"):
        writer.add_test(bad)
    nan_entry = _entry(2)
    nan_entry["duration_s"] = float("nan")
    with pytest.raises(SchemaError, match="cannot be written as JSON"):
        writer.add_test(nan_entry)
    assert len(load_report(path)["tests"]) == 1
    assert writer.test_count == 1


def test_invalid_header_is_refused(tmp_path: Path) -> None:
    header: dict[str, Any] = dict(_header())
    header["run_id"] = "not-hex"
    with pytest.raises(SchemaError, match="run_id"):
        ReportWriter(tmp_path / "r.json", header)
    assert not (tmp_path / "r.json").exists()


def test_update_header_sets_idle(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    writer = ReportWriter(path, _header())
    writer.update_header(idle={"power_w": 1.5, "rails_w": {"POM_5V_IN": 1.5}, "samples": 20})
    assert load_report(path)["idle"]["power_w"] == 1.5
    with pytest.raises(SchemaError):
        writer.update_header(idle={"power_w": "high"})


def test_never_overwrites_another_report(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    ReportWriter(path, _header()).add_test(_entry(0))
    before = path.read_bytes()
    with pytest.raises(ReportExistsError, match=r"holds another run.*--edge-report-overwrite"):
        ReportWriter(path, _header())
    assert path.read_bytes() == before
    other = tmp_path / "notes.json"
    other.write_text('{"mine": true}')
    with pytest.raises(ReportExistsError, match="not a report this run can continue"):
        ReportWriter(other, _header())
    assert other.read_text() == '{"mine": true}'
    replacing = ReportWriter(path, _header(), overwrite=True)
    assert path.read_bytes() == before  # replaced only when the new run writes
    replacing.finish()
    assert load_report(path)["tests"] == []


def test_same_run_resumes_with_its_tests(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    header = _header()
    ReportWriter(path, header).add_test(_entry(0))
    resumed = ReportWriter(path, header)
    resumed.add_test(_entry(1))
    assert len(load_report(path)["tests"]) == 2


def test_default_report_path_never_picks_an_existing_file(tmp_path: Path) -> None:
    now = datetime(2025, 6, 7, 8, 9, 10, tzinfo=timezone.utc)
    first = default_report_path(tmp_path, "sim-agx orin", now)
    assert first == tmp_path / "sim-agx-orin-20250607-080910.json"
    first.write_text("{}")
    second = default_report_path(tmp_path, "sim-agx orin", now)
    assert second.name == "sim-agx-orin-20250607-080910-2.json"


_WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_edgeenergy.board.types import Identity, RailMap
    from pytest_edgeenergy.report.model import build_device, build_header, build_result, make_metric
    from pytest_edgeenergy.report.writer import ReportWriter

    device = build_device(Identity(model="m", simulated=True, sim_model="nano"),
                          RailMap(rails=(), total_rail=None))
    writer = ReportWriter(Path(sys.argv[1]), build_header(device))
    i = 0
    while True:
        samples = [0.1 + 1e-4 * k for k in range(200)]
        writer.add_test(build_result(f"t.py::test[{i}]", status="passed",
                        metrics={"energy_j": make_metric("energy_j", samples)}))
        i += 1
    """
)


def test_sigkill_mid_run_leaves_a_valid_report(tmp_path: Path) -> None:
    path = tmp_path / "killed.json"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, str(script), str(path)], env=env)
    try:
        deadline = time.monotonic() + 60
        count = 0
        while count < 25 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if path.exists():
                count = len(load_report(path)["tests"])  # valid at every instant
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    report = load_report(path)
    assert len(report["tests"]) >= 25
    ids = [t["id"] for t in report["tests"]]
    assert ids == [f"t.py::test[{i}]" for i in range(len(ids))]
    assert all(len(t["metrics"]["energy_j"]["samples"]) == 200 for t in report["tests"])


# -- hypothesis round trip ----------------------------------------------------------------

NAMES = st.text(min_size=1, max_size=12)
NUMBER = st.floats(allow_nan=False, allow_infinity=False, width=64)
SAMPLES = st.lists(NUMBER, max_size=6)


@st.composite
def entries(draw: st.DrawFn) -> ResultEntry:
    metrics = {
        name: make_metric(
            name, draw(SAMPLES), unit=draw(st.sampled_from(["J", "s", "W", "J/item"]))
        )
        for name in draw(st.lists(NAMES, max_size=4, unique=True))
    }
    op = draw(
        st.none()
        | st.builds(
            build_operating_point,
            st.dictionaries(NAMES, st.integers(0, 2**40) | NAMES, max_size=3),
            st.dictionaries(NAMES, st.integers(0, 2**40) | NUMBER, max_size=3),
        )
    )
    return build_result(
        draw(NAMES),
        status=draw(st.sampled_from(["passed", "failed", "skipped", "invalid", "error"])),
        params={
            "workload": draw(st.none() | NAMES),
            "batch_size": draw(st.none() | st.integers(1, 4096)),
            "precision": draw(st.none() | st.sampled_from(["fp32", "fp16", "int8"])),
            "operating_point": op,
            "extra_param": draw(st.none() | NAMES | st.integers()),
        },
        metrics=metrics,
        reason=draw(st.none() | NAMES),
        validity=draw(
            st.none()
            | st.builds(
                build_validity,
                samples=st.integers(0, 10**6),
                valid=st.booleans(),
                reason=st.none() | NAMES,
                read_errors=st.integers(0, 100),
                interval_ms_mean=st.none() | NUMBER,
            )
        ),
        duration_s=draw(st.none() | st.floats(0, 1e6)),
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(entries(), max_size=5))
def test_round_trip_write_then_load_is_equal(tmp_path: Path, tests: list[ResultEntry]) -> None:
    path = tmp_path / "round.json"
    writer = ReportWriter(path, _header(), overwrite=True)
    for entry in tests:
        writer.add_test(entry)
    writer.finish()
    loaded = load_report(path)
    assert loaded["tests"] == json.loads(json.dumps(tests))
    assert loaded["tests"] == tests
    assert {k: v for k, v in loaded.items() if k not in ("tests", "finished_at")} == {
        k: v for k, v in writer.header.items() if k != "finished_at"
    }
