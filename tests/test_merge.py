"""``edgeenergy merge``: shard reports of several boards into one report per device model.

The reports are real: made by measuring on virtual boards (``EnergySession`` windows, and
pytest runs of ``--edge-shard`` parts). A merged report loads, compares (with the
board-to-board spread of a key measured twice) and gates like any other, in ``edgeenergy
compare`` and in pytest's ``--edge-baseline``; reports that are not comparable are refused
naming the field and both values.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy import EnergySession
from pytest_edgeenergy.commands import main
from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.report.merge import MergeError, board_label, merge_reports, write_merged

RUN_TIMEOUT_S = 240.0


def _measure(path: Path, board: str, labels: list[str]) -> Path:
    with EnergySession(board, report=path, idle_s=0.2, sim_load=0.5) as s:
        for label in labels:
            with s.window(label):
                time.sleep(0.15)
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs on two virtual Orin Nanos (``w2`` measured on both) and one on a Xavier NX."""
    d = tmp_path_factory.mktemp("reports")
    return {
        "a": _measure(d / "a.json", "sim:orin-nano", ["w0", "w1", "w2"]),
        "b": _measure(d / "b.json", "sim:orin-nano", ["w3", "w2"]),
        "x": _measure(d / "x.json", "sim:xavier-nx", ["w0"]),
    }


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _changed(src: Path, dst: Path, change: Any) -> Path:
    doc = _read(src)
    change(doc)
    dst.write_text(json.dumps(doc))
    return dst


def test_merged_report_keeps_each_results_board_and_flags_a_key_measured_twice(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    assert main(["merge", str(reports["a"]), str(reports["b"]), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"{out}: 2 reports of sim-orin-nano on 2 boards, 4 results, 1 measured again" in said
    merged = load_report(out)  # valid, loads like any other
    a, b = _read(reports["a"]), _read(reports["b"])
    label_a, label_b = board_label(a), board_label(b)
    assert label_a != label_b
    by_id = {t["id"]: t for t in merged["tests"]}
    assert sorted(by_id) == ["w0", "w1", "w2", "w3"]
    assert by_id["w0"]["board"]["label"] == label_a
    assert by_id["w3"]["board"]["label"] == label_b
    # A virtual board's host name and serial number are its model's (read under its root).
    assert a["host"]["hostname"] == "virtual-orin-nano" and a["host"]["serial"]
    assert by_id["w3"]["board"]["hostname"] == "virtual-orin-nano"
    assert by_id["w3"]["board"]["serial"] == b["host"]["serial"]
    assert "host" not in merged  # per board, in each result
    # Each board's own idle stays with its results: net energy is as each board measured it.
    assert by_id["w3"]["board"]["idle_power_w"] == b["idle"]["power_w"]
    original_w3 = next(t for t in b["tests"] if t["id"] == "w3")
    assert by_id["w3"]["metrics"]["energy_net_j"] == original_w3["metrics"]["energy_net_j"]
    # w2: the first report's result in tests, the other kept whole and flagged.
    assert by_id["w2"]["board"]["label"] == label_a
    assert by_id["w2"]["duplicates"] == [label_b]
    (again,) = merged["merged"]["duplicates"]
    assert again["id"] == "w2" and again["board"]["label"] == label_b
    (spread,) = merged["merged"]["spread"]
    assert spread["test"] == "w2" and spread["metric"] == "energy_j"
    values = {
        label_a: next(t for t in a["tests"] if t["id"] == "w2")["metrics"]["energy_j"]["value"],
        label_b: next(t for t in b["tests"] if t["id"] == "w2")["metrics"]["energy_j"]["value"],
    }
    assert spread["values"] == values
    low, high = min(values.values()), max(values.values())
    assert spread["spread_pct"] == pytest.approx(100 * (high - low) / ((high + low) / 2))
    assert [i["board"] for i in merged["merged"]["inputs"]] == [label_a, label_b]
    assert merged["idle"] is None  # two boards' idle powers: none stands for both

    # compare shows the spread of the key measured on both boards.
    assert main(["compare", str(out)]) == 0
    shown = capsys.readouterr().out
    said = " ".join(shown.split())  # the notes as one text, however wrapped
    assert "1 result measured on several boards (board-to-board spread" in said
    assert f"  w2: energy_j {label_a} " in shown
    # ... and gates with it, either side.
    gate = ["--fail", "energy_j:mean:300%"]
    assert main(["compare", str(reports["a"]), str(out), *gate]) == 0
    assert main(["compare", str(out), str(reports["a"]), *gate]) == 0
    assert "gate passed" in capsys.readouterr().out


def test_merge_is_refused_for_what_is_not_comparable(
    reports: dict[str, Path], tmp_path: Path
) -> None:
    a = reports["a"]

    def torch(doc: dict[str, Any]) -> None:
        doc["software"]["torch"] = "9.9.9"

    def total(doc: dict[str, Any]) -> None:
        doc["device"]["total"] = {"rail": None, "method": "sum"}

    def source(doc: dict[str, Any]) -> None:
        doc["settings"]["edge_source"] = "tegrastats"

    def l4t(doc: dict[str, Any]) -> None:
        doc["device"]["jetpack"] = "5.1.2"

    def v1(doc: dict[str, Any]) -> None:
        doc["schema_version"] = 1

    def rerun(doc: dict[str, Any]) -> None:
        doc["run_id"] = "f" * 32

    cases = [
        (torch, "software.torch differs: "),
        (total, "total (device.total, settings.edge_source) differs: 'the VDD_IN rail' in"),
        (source, "read with source tegrastats' in"),
        (l4t, "device.jetpack differs: "),
        (v1, "schema_version differs: 2 in"),
    ]
    b = _changed(reports["b"], tmp_path / "rerun.json", rerun)
    for change, message in cases:
        other = _changed(reports["b"], tmp_path / f"{change.__name__}.json", change)
        with pytest.raises(MergeError, match="differs") as info:
            merge_reports([a, other])
        assert message in str(info.value)
        assert str(a) in str(info.value) and str(other) in str(info.value)
    with pytest.raises(MergeError, match="the same run"):
        merge_reports([a, a])
    assert len(merge_reports([a, b])) == 1


def test_several_models_make_one_report_each(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(reports[k]) for k in ("a", "x", "b")]
    assert main(["merge", *paths, "-o", str(tmp_path / "one.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy: -o ")
    assert "the reports hold 2 device models (sim-orin-nano, sim-xavier-nx); give -o DIR" in err
    assert main(["merge", *paths, "-o", str(tmp_path / "fleet")]) == 0
    nano = load_report(tmp_path / "fleet" / "sim-orin-nano.json")
    nx = load_report(tmp_path / "fleet" / "sim-xavier-nx.json")
    assert len(nano["merged"]["inputs"]) == 2 and len(nx["merged"]["inputs"]) == 1
    assert [t["id"] for t in nx["tests"]] == ["w0"]
    # An existing output is not replaced unless asked.
    assert main(["merge", *paths, "-o", str(tmp_path / "fleet")]) == 2
    assert "exists; choose another -o, or pass --overwrite" in capsys.readouterr().err
    assert main(["merge", *paths, "-o", str(tmp_path / "fleet"), "--overwrite"]) == 0


def test_two_models_of_one_name_are_told_apart_by_what_differs(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = reports["a"]
    module = _read(a)["device"]["module"]

    def other_module(doc: dict[str, Any]) -> None:
        doc["device"]["module"] = "p9999-0000"

    b = _changed(reports["b"], tmp_path / "b.json", other_module)
    assert main(["merge", str(a), str(b), "-o", str(tmp_path / "one.json")]) == 2
    err = capsys.readouterr().err
    assert (
        f"the reports hold 2 device models (sim-orin-nano (device.module {module!r}, from "
        f"{a}), sim-orin-nano (device.module 'p9999-0000', from {b})); give -o DIR"
    ) in err


def test_a_merged_report_merges_again(reports: dict[str, Path], tmp_path: Path) -> None:
    """Boards and flagged results of an earlier merge are kept."""
    (first,) = merge_reports([reports["a"]])
    (path,) = write_merged([first], tmp_path / "first.json")
    (merged,) = merge_reports([path, reports["b"]])
    labels = {t["id"]: t["board"]["label"] for t in merged.report["tests"]}
    assert labels["w0"] == board_label(_read(reports["a"]))
    assert labels["w3"] == board_label(_read(reports["b"]))
    assert len(merged.report["merged"]["duplicates"]) == 1


def test_a_real_board_is_named_by_its_host() -> None:
    device = {"simulated": False, "model": "NVIDIA Jetson Orin Nano Developer Kit"}
    run = {"device": device, "run_id": "3f2a1b9c" + "0" * 24}
    assert board_label({**run, "host": {"hostname": "jetson-3", "serial": "1423"}}) == (
        "jetson-3@3f2a1b9c"
    )
    assert board_label({**run, "host": {"hostname": None, "serial": "1423"}}) == "1423@3f2a1b9c"
    assert board_label(run) == "nvidia-jetson-orin-nano@3f2a1b9c"  # an older report: no host
    sim = {**run, "device": {"simulated": True, "sim_model": "orin-nano"}}
    assert board_label({**sim, "host": {"hostname": "virtual-orin-nano", "serial": "1"}}) == (
        "sim-orin-nano@3f2a1b9c"
    )


def test_bad_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert main(["merge", str(missing), "-o", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err == f"edgeenergy: {missing}: no such file\n"
    (tmp_path / "x.json").write_text("{}")
    assert main(["merge", str(tmp_path / "x.json"), "-o", str(tmp_path / "m.json")]) == 2
    assert "not a pytest-edgeenergy report" in capsys.readouterr().err


# -- shards of a pytest run, merged, then the baseline of a pytest gate ------------------------

SUITE = """
import time

import pytest


@pytest.mark.parametrize("n", range(4))
def test_work(energy, n):
    with energy.window("work"):
        time.sleep(0.1)
"""


@pytest.fixture
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("_clean_env")
def test_merged_shards_are_a_baseline_of_the_pytest_gate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    base: tuple[str, ...] = ("--edge-board=sim:orin-nano", "--edge-idle-s=0.2", "-p")
    base += ("no:cacheprovider", "--edge-sim-load=0.5")
    shards = []
    for k in (1, 2):
        path = pytester.path / f"s{k}.json"
        result = pytester.runpytest_subprocess(
            *base, f"--edge-shard={k}/2", f"--edge-report={path}", timeout=RUN_TIMEOUT_S
        )
        result.assert_outcomes(passed=2, deselected=2)
        shards.append(path)
    merged = pytester.path / "merged.json"
    assert main(["merge", *map(str, shards), "-o", str(merged)]) == 0
    assert len(load_report(merged)["tests"]) == 4
    result = pytester.runpytest_subprocess(
        *base,
        f"--edge-baseline={merged}",
        "--edge-fail=energy_j:mean:300%",
        f"--edge-report={pytester.path / 'new.json'}",
        timeout=RUN_TIMEOUT_S,
    )
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert "gate passed" in out, out
