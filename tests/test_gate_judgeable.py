"""The gate judges only what can be judged (issue 19, section 4), and a baseline asked for is
saved or the session fails (section 3).

* Reports are validated when loaded: NaN or Infinity, zero or negative energy, time or power,
  and ``stats`` that do not follow from ``samples`` make a report invalid (``edgeenergy
  compare``: exit 2 naming file, test and metric). NaN used to pass as "within", negative
  energy as "improvements", Infinity in a baseline raised ``math domain error``.
* A baseline directory in which every candidate is unusable is an error naming each file,
  not "no baseline ... nothing compared" with exit 0.
* A baseline whose total energy is defined otherwise (VDD_IN against a sum of rails, another
  power source) is not comparable: +30 % work against VDD_IN baselines, measured with the
  total rail hidden, showed "-33 % improvement, gate passed".
* Repeats spreading more than the threshold cannot show a change of that size: such a row
  is ``insufficient`` (the spread in its note), never ``within``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands.compare import compare_main
from pytest_edgeenergy.report.baselines import BaselineError, find_baselines
from pytest_edgeenergy.report.load import STATS_REL_TOL, ReportError, load_report, sign_rule
from pytest_edgeenergy.report.model import make_metric
from pytest_edgeenergy.report.schema import SCHEMA_VERSION
from pytest_edgeenergy.sim.tree import create
from pytest_edgeenergy.verdict.independent import evaluate

FAIL = "energy_per_item:mean:5%"
T0 = datetime(2025, 5, 1, tzinfo=timezone.utc)
V1_REPORT = Path(__file__).parent / "data" / "report_v1_energy_and_bench.json"


def _save(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(report))  # NaN and Infinity as JSON's extension writes them
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = compare_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _another_run(report: dict[str, Any], factor: float, hour: int) -> dict[str, Any]:
    """Another run of ``report``: every energy per item times ``factor``, stats recomputed."""
    out = copy.deepcopy(report)
    out["run_id"] = hashlib.md5(f"{report['run_id']}-{factor}-{hour}".encode()).hexdigest()
    out["started_at"] = (T0 + timedelta(hours=hour)).isoformat().replace("+00:00", "Z")
    for test in out["tests"]:
        samples = [x * factor for x in test["metrics"]["energy_per_item"]["samples"]]
        test["metrics"]["energy_per_item"] = make_metric("energy_per_item", samples)
    return out


def _report(**kw: Any) -> dict[str, Any]:
    return synthetic_report(started_at=T0, **kw)


# -- 1. reports are validated when loaded ----------------------------------------------------


def test_nan_in_every_energy_per_item_is_exit_2_naming_file_test_and_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _report(repeats=5)
    new = _another_run(base, 1.0, 1)
    for test in new["tests"]:
        metric = test["metrics"]["energy_per_item"]
        metric["samples"] = [math.nan] * len(metric["samples"])
        metric["value"] = math.nan
        metric["stats"] = dict.fromkeys(metric["stats"], math.nan) | {"n": 5}
    a, b = _save(tmp_path / "a.json", base), _save(tmp_path / "b.json", new)
    code, out, err = _run(capsys, a, b, "--fail", FAIL)
    assert (code, out) == (2, "")
    first = new["tests"][0]["id"]
    assert err == (
        f"edgeenergy compare: error: {b}: test {first}: metric energy_per_item: sample 0 is "
        "NaN; a report holds finite numbers only\n"
    )


@pytest.mark.parametrize("factor", [-1.0, 0.0])
def test_zero_or_negative_energy_is_exit_2_not_an_improvement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factor: float
) -> None:
    base = _report(repeats=5)
    a = _save(tmp_path / "a.json", base)
    b = _save(tmp_path / "b.json", _another_run(base, factor, 1))
    code, out, err = _run(capsys, a, b, "--fail", FAIL)
    assert (code, out) == (2, "")
    assert f"{b}: test {base['tests'][0]['id']}: metric energy_per_item: sample 0 is " in err
    assert "a measured energy, time, power or rate is > 0" in err


def test_infinity_in_a_baseline_is_exit_2_not_a_math_domain_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _report(repeats=5)
    new = _save(tmp_path / "new.json", _another_run(base, 1.3, 2))
    folder = tmp_path / "baselines"
    folder.mkdir()
    for hour in (0, 1):
        _save(folder / f"run{hour}.json", _another_run(base, 1.0, hour))
    broken = json.loads((folder / "run1.json").read_text())
    broken["tests"][2]["metrics"]["energy_per_item"]["stats"]["mean"] = math.inf
    _save(folder / "run1.json", broken)
    code, out, err = _run(capsys, new, "--baseline", folder / "run1.json", "--fail", FAIL)
    assert (code, out) == (2, "")
    assert err == (
        f"edgeenergy compare: error: {folder / 'run1.json'}: test {base['tests'][2]['id']}: "
        "metric energy_per_item: stats.mean is Infinity; a report holds finite numbers only\n"
    )
    # In a directory beside a usable run, it is skipped, saying why.
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL)
    assert code == 1, out
    said = " ".join(out.split())  # the notes as one text, however wrapped
    assert f"skipped baseline candidate {folder / 'run1.json'}: test " in said
    assert "stats.mean is Infinity" in said


@pytest.mark.parametrize(
    ("key", "factor", "said"),
    [
        ("mean", 0.8, "stats.mean is"),
        ("median", 1.1, "stats.median is"),
        ("stdev", 3.0, "stats.stdev is"),
        ("max", 2.0, "stats.max is"),
    ],
)
def test_stats_that_do_not_follow_from_the_samples_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, factor: float, said: str
) -> None:
    base = _report(repeats=5)
    new = _another_run(base, 1.0, 1)
    new["tests"][1]["metrics"]["energy_per_item"]["stats"][key] *= factor
    a, b = _save(tmp_path / "a.json", base), _save(tmp_path / "b.json", new)
    code, out, err = _run(capsys, a, b, "--fail", FAIL)
    assert (code, out) == (2, "")
    assert f"{b}: test {base['tests'][1]['id']}: metric energy_per_item: {said}" in err
    assert "(stats must follow from the samples)" in err


def test_stats_count_and_missing_stats_are_checked(tmp_path: Path) -> None:
    report = _report(repeats=5)
    report["tests"][0]["metrics"]["edp"]["stats"]["n"] = 4
    report["tests"][1]["metrics"]["edp"]["stats"] = None
    with pytest.raises(ReportError, match=r"metric edp: stats.n is 4 but there are 5 samples"):
        load_report(_save(tmp_path / "n.json", report))
    del report["tests"][0]
    with pytest.raises(ReportError, match=r"metric edp: has 5 samples but no stats"):
        load_report(_save(tmp_path / "none.json", report))


def test_net_energy_below_zero_rail_at_zero_and_unmeasured_results_still_load(
    tmp_path: Path,
) -> None:
    report = _report(repeats=3)
    passed, failed = report["tests"][0], report["tests"][1]
    # An idle baseline taken while the host was busier than the window: net below zero.
    passed["metrics"]["energy_net_j"] = make_metric("energy_net_j", [-0.2, 0.1, -0.05])
    passed["metrics"]["load.energy_per_item_net"] = make_metric("energy_per_item_net", [-1e-3])
    # A rail that is switched off reads 0 W.
    passed["metrics"]["energy_j.VDD_CV"] = make_metric("energy_j", [0.0, 0.0, 0.0])
    passed["metrics"]["temperature"] = make_metric("t", [-5.0], unit="C")
    # A failed test's figures are not judged: no sign rule (finite all the same).
    failed["status"] = "failed"
    failed["metrics"]["energy_j"] = make_metric("energy_j", [0.0])
    assert load_report(_save(tmp_path / "r.json", report))["tests"]
    failed["metrics"]["energy_j"]["samples"] = [math.nan]
    with pytest.raises(ReportError, match=r"metric energy_j: sample 0 is NaN"):
        load_report(_save(tmp_path / "nan.json", report))


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("energy_j", "positive"),
        ("load.energy_j", "positive"),
        ("energy_per_item", "positive"),
        ("bs64.latency_p90", "positive"),
        ("power_peak", "positive"),
        ("duration_s", "positive"),
        ("decode_tokens_per_s", "positive"),
        ("energy_j.VDD_IN", "non-negative"),
        ("load.energy_j.VDD_SOC", "non-negative"),
        ("memory_cuda_peak", "non-negative"),
        ("energy_net_j", None),
        ("energy_per_item_net", None),
        ("energy_per_decode_token_net_j", None),
        ("idle_fraction", None),
        ("my_metric", None),
    ],
)
def test_which_metrics_have_a_sign(name: str, rule: str | None) -> None:
    assert sign_rule(name) == rule


def test_old_reports_still_load() -> None:
    report = load_report(V1_REPORT)
    assert report["schema_version"] == SCHEMA_VERSION
    assert len(report["tests"]) == 3


_SAMPLES = st.lists(
    st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    samples=_SAMPLES,
    scale=st.sampled_from([1.0, 1e-6, 1e6]),
    anything=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=8),
)
def test_every_metric_the_writer_makes_loads(
    tmp_path_factory: pytest.TempPathFactory,
    samples: list[float],
    scale: float,
    anything: list[float],
) -> None:
    report = _report(n_tests=1, repeats=2)
    metrics = report["tests"][0]["metrics"]
    metrics["energy_per_item"] = make_metric("energy_per_item", [x * scale for x in samples])
    metrics["energy_net_j"] = make_metric("energy_net_j", [x - 1.0 for x in samples])
    metrics["custom"] = make_metric("custom", anything, unit="x")  # no sign, any magnitude
    path = _save(tmp_path_factory.mktemp("r") / "r.json", report)
    assert load_report(path)["tests"][0]["metrics"] == json.loads(json.dumps(metrics))


@settings(max_examples=100, deadline=None)
@given(
    samples=_SAMPLES.filter(lambda xs: len(set(xs)) > 1),
    key=st.sampled_from(["mean", "median", "stdev"]),
    off=st.floats(min_value=20 * STATS_REL_TOL, max_value=0.5),
)
def test_a_stat_off_by_more_than_the_tolerance_is_refused(
    tmp_path_factory: pytest.TempPathFactory, samples: list[float], key: str, off: float
) -> None:
    report = _report(n_tests=1, repeats=2)
    metric = make_metric("energy_per_item", samples)
    assert metric["stats"] is not None
    metric["stats"][key] += off * max(samples)  # type: ignore[literal-required]
    report["tests"][0]["metrics"]["energy_per_item"] = metric
    path = _save(tmp_path_factory.mktemp("r") / "r.json", report)
    with pytest.raises(ReportError, match=rf"metric energy_per_item: stats.{key} is "):
        load_report(path)


# -- 2. a directory of unusable candidates is an error, not a first run ------------------------


def _unusable_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "baselines"
    folder.mkdir()
    text = json.dumps(_report(repeats=5, seed=7))
    (folder / "cut.json").write_text(text[: len(text) // 2])
    (folder / "empty.json").write_text("")
    future = json.loads(text)
    future["schema_version"] = SCHEMA_VERSION + 1
    _save(folder / "future.json", future)
    why = {
        "cut.json": "truncated JSON",
        "empty.json": "is empty",
        "future.json": f"written by a newer pytest-edgeenergy (schema {SCHEMA_VERSION + 1})",
    }
    return folder, why


@pytest.mark.parametrize("strict", [False, True])
def test_directory_of_unusable_candidates_is_exit_2_naming_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], strict: bool
) -> None:
    folder, why = _unusable_folder(tmp_path)
    new = _save(tmp_path / "new.json", _report(repeats=5))
    argv = [new, "--baseline", folder, "--fail", FAIL] + (["--fail-insufficient"] if strict else [])
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert "nothing compared" not in err
    assert f"{folder}: no usable baseline for this run (sim:agx-orin (simulated)): 3 of 3 " in err
    for name, problem in why.items():
        assert f"\n  {folder / name}: {problem}" in err
    assert "fix or remove the files that cannot be read" in err


def test_unusable_candidates_beside_a_usable_run_are_skipped_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = _unusable_folder(tmp_path)
    report = _report(repeats=5)
    _save(folder / "good.json", report)
    new = _save(tmp_path / "new.json", _another_run(report, 1.0, 1))
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL)
    assert code == 0, out
    said = " ".join(out.split())  # the notes as one text, however wrapped
    assert f"skipped baseline candidate {folder / 'cut.json'}: truncated JSON" in said
    assert "gate passed: 8 within" in out


def test_directory_without_candidates_or_of_other_devices_stays_a_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "baselines"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a candidate")
    new = _save(tmp_path / "new.json", _report(repeats=5))
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL, "--fail-insufficient")
    assert code == 0 and "no baseline yet" in out
    _save(folder / "nano.json", _report(repeats=5, sim_model="nano"))
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL, "--fail-insufficient")
    assert code == 0 and "no baseline for this device" in out


# -- 3. the total's definition is part of what makes a baseline comparable -------------------


def _with_total(report: dict[str, Any], rail: str | None, rails: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(report)
    out["device"]["rails"] = [{"name": n, "is_total": n == rail} for n in rails]
    out["device"]["total"] = {"rail": rail, "method": "rail" if rail else "sum"}
    return out


def test_baselines_with_another_total_rail_are_exit_2_not_an_improvement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rails = ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
    report = _report(repeats=5)
    folder = tmp_path / "baselines"
    folder.mkdir()
    for hour in (1, 2):
        _save(
            folder / f"in{hour}.json", _with_total(_another_run(report, 1.0, hour), "VDD_IN", rails)
        )
    # +30 % work, but the total is now the sum of two rails: about half the power.
    summed = _with_total(_another_run(report, 1.3 * 0.5, 9), None, rails[1:])
    new = _save(tmp_path / "new.json", summed)
    code, out, err = _run(capsys, new, "--baseline", folder, "--fail", FAIL)
    assert (code, out) == (2, "")
    assert (
        f"\n  {folder / 'in1.json'}: total is the VDD_IN rail, this run's is the sum of rails "
        "VDD_CPU_GPU_CV, VDD_SOC: not comparable"
    ) in err
    assert "a run is judged only against runs whose total is defined alike" in err
    code, _, err = _run(capsys, new, "--baseline", folder / "in1.json", "--fail", FAIL)
    assert code == 2 and "baseline total is the VDD_IN rail, this run's is the sum" in err
    code, _, err = _run(capsys, folder / "in1.json", new, "--fail", FAIL)
    assert code == 2 and f"{folder / 'in1.json'}: baseline total is the VDD_IN rail" in err
    # A comparable run beside them is the baseline; the others are left out, saying why.
    _save(folder / "sum.json", _with_total(_another_run(report, 0.5, 3), None, rails[1:]))
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL)
    assert code == 1 and "REGRESSION" in out
    said = " ".join(out.split())  # the notes as one text, however wrapped
    assert f"skipped baseline candidate {folder / 'in2.json'}: total is the VDD_IN rail" in said


@pytest.mark.parametrize(
    ("base_source", "new_source", "comparable"),
    [
        ("ina", "tegrastats", False),
        ("ina", "INA", True),
        ("ina", None, True),  # not named: chosen automatically, as the baseline's may have been
        ("auto", "nvml", True),
        (None, None, True),
    ],
)
def test_a_power_source_named_by_both_runs_must_be_the_same(
    base_source: str | None, new_source: str | None, comparable: bool
) -> None:
    base = _report(repeats=5)
    new = _another_run(base, 1.0, 1)
    for report, source in ((base, base_source), (new, new_source)):
        if source is not None:
            report["settings"]["edge_source"] = source
    if comparable:
        assert not evaluate(base, new, [FAIL]).failed
        return
    with pytest.raises(BaselineError, match="total is the sum of all rails read with source ina"):
        evaluate(base, new, [FAIL])


def test_find_baselines_leaves_out_runs_of_another_total(tmp_path: Path) -> None:
    report = _report(repeats=5)
    _save(tmp_path / "a.json", _with_total(_another_run(report, 1.0, 1), "VDD_IN", ["VDD_IN"]))
    _save(tmp_path / "b.json", _another_run(report, 1.0, 2))
    found, messages = find_baselines(tmp_path, _another_run(report, 1.0, 3))
    assert [path.name for path, _ in found] == ["b.json"]
    assert messages == [
        f"skipped baseline candidate {tmp_path / 'a.json'}: total is the VDD_IN rail, "
        "this run's is the sum of all rails: not comparable"
    ]


# -- 4. repeats that spread more than the threshold cannot show a change of its size ----------


def test_uniform_change_the_repeats_cannot_show_is_insufficient_not_within(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three tests (too few for the suite-level test), repeats spreading ~20 %, every test
    # +4 %: under the 5 % threshold, but so are the repeats' means by chance.
    report = _report(repeats=5, noise=0.2, n_tests=3, batch_sizes=(8,), gpu_freqs_hz=(612e6,))
    a = _save(tmp_path / "a.json", report)
    b = _save(tmp_path / "b.json", _another_run(report, 1.04, 1))
    code, out, _ = _run(capsys, a, b, "--fail", FAIL)
    assert code == 0, out
    assert "within" not in out.split("Energy gate")[1]
    assert "gate NOT DECIDED: none of 3 rows could be decided (insufficient: " in out
    rows = [line for line in out.splitlines() if "insufficient" in line and "::" in line]
    assert len(rows) == 3
    assert all("the repeats spread" in r and "more than the 5% threshold" in r for r in rows)
    code, out, _ = _run(capsys, a, b, "--fail", FAIL, "--fail-insufficient")
    assert code == 1 and "gate FAILED: 3 insufficient (strict: insufficient fails)" in out


def test_the_spread_is_judged_in_the_thresholds_units() -> None:
    base = _report(repeats=5, noise=0.2, workloads=("resnet18",))
    new = _another_run(base, 1.0, 1)
    # energy per item ~0.1 J: a 20 % spread is ~20 mJ, over 5 mJ and under 100 mJ.
    narrow = evaluate(base, new, ["energy_per_item:mean:5mJ"])
    assert {r.verdict for r in narrow.rows} == {"insufficient"}
    assert all("J (baseline) and " in r.note for r in narrow.rows)
    wide = evaluate(base, new, ["energy_per_item:mean:100mJ"])
    assert {r.verdict for r in wide.rows} == {"within"}


def test_repeats_tighter_than_the_threshold_are_still_within() -> None:
    base = _report(repeats=5, noise=0.005)
    verdict = evaluate(base, _another_run(base, 1.01, 1), [FAIL], strict=True)
    assert {r.verdict for r in verdict.rows} == {"within"} and not verdict.failed


def test_runs_that_spread_more_than_the_threshold_cannot_tell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(repeats=5, noise=0.01)
    folder = tmp_path / "baselines"
    folder.mkdir()
    for hour, factor in enumerate((0.85, 1.15, 0.9, 1.12, 1.0), start=1):
        _save(folder / f"run{hour}.json", _another_run(report, factor, hour))
    new = _save(tmp_path / "new.json", _another_run(report, 1.04, 9))
    code, out, _ = _run(capsys, new, "--baseline", folder, "--fail", FAIL, "--fail-insufficient")
    assert code == 1, out
    rows = [line for line in out.splitlines() if "::" in line]
    assert rows and all("insufficient" in r and "5 baseline runs" in r for r in rows)
    assert all("the runs spread more than the 5% threshold" in r for r in rows)


# -- in pytest: a virtual board whose total rail is hidden, unusable baselines, saving -------

WORKLOAD = """
import os, time

def _work():
    time.sleep(0.004 * float(os.environ.get("EDGE_TEST_WORK", "1")))

def test_a(edge_bench):
    edge_bench.run(_work, items_per_call=1, params={"workload": "a"})

def test_b(edge_bench):
    edge_bench.run(_work, items_per_call=1, params={"workload": "b"})
"""

BENCH = [
    "--edge-items=8",
    "--edge-repeats=5",
    "--edge-warmup=1",
    "--edge-min-window-s=0.2",
    "--edge-idle-s=0",
    "-p",
    "no:cacheprovider",
]
TOTAL_LABEL = "sys/devices/platform/bus@0/c240000.i2c/i2c-1/1-0040/hwmon/hwmon1/in1_label"
"""The label file of the virtual Orin Nano's VDD_IN channel: without it the rail is not
found and the total becomes the sum of the other rails."""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("EDGEENERGY_"):
            monkeypatch.delenv(key)
    monkeypatch.delenv("EDGE_TEST_WORK", raising=False)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create("orin-nano", tmp_path_factory.mktemp("pristine") / "board")


@pytest.fixture
def board(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "board", symlinks=True))


def _pytest(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    board: Path,
    report: Path,
    *extra: str,
    work: float = 1.0,
) -> pytest.RunResult:
    monkeypatch.setenv("EDGE_TEST_WORK", str(work))
    return pytester.runpytest_subprocess(
        f"--edge-root={board}", f"--edge-report={report}", *BENCH, *extra
    )


def test_more_work_with_the_total_rail_hidden_does_not_pass_as_an_improvement(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, board: Path, tmp_path: Path
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    first = _pytest(
        pytester, monkeypatch, board, tmp_path / "a.json", f"--edge-save-baseline={baselines}"
    )
    assert first.ret == 0, first.stdout.str()
    assert json.loads((tmp_path / "a.json").read_text())["device"]["total"]["rail"] == "VDD_IN"
    (board / TOTAL_LABEL).unlink()
    gate = [f"--edge-baseline={baselines}", f"--edge-fail={FAIL}"]
    more = _pytest(pytester, monkeypatch, board, tmp_path / "b.json", *gate, work=1.3)
    out = more.stdout.str()
    assert more.ret == pytest.ExitCode.USAGE_ERROR, out
    more.assert_outcomes(passed=2)
    verdict = out.split(" energy gate ", 1)[1]
    assert "improvement" not in verdict and "edgeenergy gate: passed" not in verdict
    assert json.loads((tmp_path / "b.json").read_text())["device"]["total"]["method"] == "sum"
    assert "edgeenergy gate: usage error: " in out
    assert (
        "total is the VDD_IN rail, this run's is the sum of rails VDD_CPU_GPU_CV, VDD_SOC: "
        "not comparable"
    ) in out


def test_baseline_directory_of_unusable_reports_is_a_usage_error_in_pytest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, board: Path, tmp_path: Path
) -> None:
    pytester.makepyfile(test_w=WORKLOAD)
    baselines = tmp_path / "baselines"
    first = _pytest(
        pytester, monkeypatch, board, tmp_path / "a.json", f"--edge-save-baseline={baselines}"
    )
    assert first.ret == 0, first.stdout.str()
    (saved,) = baselines.glob("*.json")
    report = json.loads(saved.read_text())
    report["tests"][0]["metrics"]["energy_per_item"]["samples"][0] = math.inf
    _save(saved, report)
    (baselines / "cut.json").write_text(saved.read_text()[:100])
    gate = [f"--edge-baseline={baselines}", f"--edge-fail={FAIL}", "--edge-fail-insufficient"]
    second = _pytest(pytester, monkeypatch, board, tmp_path / "b.json", *gate)
    out = second.stdout.str()
    assert second.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out + second.stderr.str()
    assert f"edgeenergy gate: usage error: {baselines}: no usable baseline for this run" in out
    assert f"  {saved}: test " in out and "metric energy_per_item: sample 0 is Infinity" in out
    assert f"  {baselines / 'cut.json'}: truncated JSON" in out


def test_a_baseline_that_cannot_be_saved_fails_the_session_naming_dir_and_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, board: Path, tmp_path: Path
) -> None:
    # The directory can be made when the session starts; a test then puts a regular file in
    # its place, so at the end nothing can be saved there, even as root.
    target = tmp_path / "baselines"
    pytester.makepyfile(
        test_w=WORKLOAD,
        test_x=f"def test_x():\n    open({str(target)!r}, 'w').write('in the way')\n",
    )
    report = tmp_path / "a.json"
    result = _pytest(pytester, monkeypatch, board, report, f"--edge-save-baseline={target}")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.assert_outcomes(passed=3)
    lines = [line for line in out.splitlines() if "BASELINE NOT SAVED" in line]
    assert len(lines) == 1, out
    assert lines[0].startswith(f"edgeenergy: BASELINE NOT SAVED to {target}: ")
    assert f"the report is {report}" in lines[0]
    assert load_report(report)["tests"]  # the results are kept


def test_a_baseline_directory_that_cannot_be_made_is_a_usage_error_before_any_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, board: Path, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    pytester.makepyfile(test_w=f"def test_w():\n    open({str(ran)!r}, 'w').close()\n")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")  # nothing is created below it, even as root
    target = blocker / "baselines"
    result = _pytest(
        pytester, monkeypatch, board, tmp_path / "a.json", f"--edge-save-baseline={target}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    told = f"--edge-save-baseline {target}: cannot be created: {blocker} is a file, not a"
    result.stderr.fnmatch_lines([f"*{told} directory*"])
    assert not ran.exists()
