"""BenchResult / PhaseResult arithmetic and report shapes, from hand-built window results."""

from __future__ import annotations

from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from pytest_edgeenergy.bench.result import (
    BenchResult,
    PhaseResult,
    RepeatResult,
    merge_report,
)
from pytest_edgeenergy.control.operating_point import OperatingPoint
from pytest_edgeenergy.meters.window import RailEnergy, TotalEnergy, WindowResult
from pytest_edgeenergy.present.bench_summary import SUMMARY_HEADER, format_rows, summary_rows
from pytest_edgeenergy.report.schema import report_schema


def window(
    energy_j: float,
    duration_s: float,
    *,
    valid: bool = True,
    idle_w: float | None = 1.0,
    label: str = "w",
    peak_w: float = 9.0,
) -> WindowResult:
    mean = energy_j / duration_s
    idle_e = idle_w * duration_s if idle_w is not None else None
    net = energy_j - idle_e if idle_e is not None and valid else None
    rail = RailEnergy(
        energy_j=energy_j if valid else None,
        mean_w=mean if valid else None,
        peak_w=peak_w,
        energy_j_estimate=energy_j,
        mean_w_estimate=mean,
    )
    total = TotalEnergy(
        energy_j=energy_j if valid else None,
        mean_w=mean if valid else None,
        peak_w=peak_w,
        energy_j_estimate=energy_j,
        mean_w_estimate=mean,
        idle_w=idle_w,
        idle_energy_j=idle_e,
        net_energy_j=net,
        method="rail",
        rail="VDD_IN",
    )
    return WindowResult(
        label=label,
        start_s=0.0,
        end_s=duration_s,
        duration_s=duration_s,
        samples=50,
        interval_ms_mean=10.0,
        interval_ms_jitter=0.5,
        read_errors={"EIO": 1} if not valid else {},
        sampler_cpu_s=0.01,
        rails={"VDD_IN": rail},
        total=total,
        valid=valid,
        invalid_reason=None if valid else "too few samples: 2 < min_samples 5",
        simulated=True,
        idle_w=idle_w,
        idle_energy_j=idle_e,
        net_energy_j=net,
    )


def bench(windows: list[WindowResult], *, items: int = 100, **params: object) -> BenchResult:
    reps = [
        RepeatResult(
            index=i,
            calls=10,
            items=items,
            window=w,
            latencies_s=[0.01 * (k + 1) for k in range(10)],  # 0.01 .. 0.10 s
            memory_peak_bytes=1000 + i,
        )
        for i, w in enumerate(windows)
    ]
    return BenchResult(
        label="steady",
        params=dict(params),
        device="cpu",
        items_per_call=items // 10,
        items_requested=items,
        calls_per_repeat=10,
        repeats=reps,
    )


def schema_validator(name: str) -> jsonschema.Draft202012Validator:
    schema = report_schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def test_per_item_figures_and_edp() -> None:
    r = bench([window(10.0, 2.0), window(12.0, 2.0), window(14.0, 2.0)])
    m = r.metrics()
    assert m["energy_j"]["samples"] == [10.0, 12.0, 14.0]
    assert m["energy_per_item"]["value"] == pytest.approx(0.12)
    assert m["energy_per_item"]["unit"] == "J/item"
    # net = gross - 1 W x 2 s
    assert m["energy_per_item_net"]["samples"] == pytest.approx([0.08, 0.10, 0.12])
    assert m["throughput"]["value"] == pytest.approx(50.0)
    # EDP = J/item x s/item (s/item = 2 s / 100 items)
    assert m["edp"]["samples"] == pytest.approx([0.1 * 0.02, 0.12 * 0.02, 0.14 * 0.02])
    assert m["power_mean"]["value"] == pytest.approx(6.0)
    assert m["power_peak"]["value"] == 9.0
    assert m["latency_p90"]["value"] == pytest.approx(0.091)
    assert m["latency_mean"]["value"] == pytest.approx(0.055)
    assert m["memory_peak"]["samples"] == [1000.0, 1001.0, 1002.0]
    assert m["energy_j.VDD_IN"]["samples"] == [10.0, 12.0, 14.0]
    stats = m["energy_j"]["stats"]
    assert stats is not None
    # mean 12, stdev 2, t(2) = 4.303: half-width 4.303 * 2 / sqrt(3)
    assert stats["stdev"] == pytest.approx(2.0)
    assert stats["ci95_low"] == pytest.approx(12 - 4.303 * 2 / 3**0.5, rel=1e-4)
    assert stats["ci95_high"] == pytest.approx(12 + 4.303 * 2 / 3**0.5, rel=1e-4)
    assert r.valid and r.invalid_reason is None


def test_metrics_match_the_report_schema() -> None:
    r = bench([window(10.0, 2.0), window(11.0, 2.0, valid=False)], workload="resnet18")
    metric = schema_validator("metric")
    for name, m in r.metrics().items():
        errors = list(metric.iter_errors(m))
        assert not errors, (name, errors)
    assert not list(schema_validator("validity").iter_errors(r.validity()))
    assert not list(schema_validator("params").iter_errors(r.report_params()))


def test_an_invalid_window_invalidates_the_result_never_zero() -> None:
    r = bench([window(10.0, 2.0), window(11.0, 2.0, valid=False, label="steady 2/2")])
    assert not r.valid
    assert r.invalid_reason is not None and "steady 2/2: too few samples" in r.invalid_reason
    m = r.metrics()
    for name in ("energy_per_item", "energy_j", "power_mean", "power_peak", "edp"):
        assert m[name]["value"] is None, name
    # only the valid window's figure is a sample; the invalid one is never 0 J
    assert m["energy_j"]["samples"] == [10.0]
    # timing stays meaningful
    assert m["throughput"]["value"] == pytest.approx(50.0)
    v = r.validity()
    assert v["valid"] is False and v["read_errors"] == 1 and v["samples"] == 100
    assert r.extra_info()["energy_valid"] is False
    assert r.extra_info()["energy_per_item_j"] is None


def test_no_idle_baseline_gives_null_net() -> None:
    r = bench([window(10.0, 2.0, idle_w=None)])
    m = r.metrics()
    assert m["energy_per_item_net"]["value"] is None
    assert m["energy_per_item_net"]["samples"] == []
    assert m["energy_per_item"]["value"] == pytest.approx(0.1)


def test_summary_rows() -> None:
    op = OperatingPoint(power_mode="15W", gpu_freq_hz=612_000_000)
    good = bench([window(0.5, 2.0)], workload="resnet18", batch_size=16, operating_point=op)
    bad = bench([window(0.5, 2.0, valid=False)], workload="bert-tiny")
    rows = summary_rows([good, bad])
    assert rows[0] == SUMMARY_HEADER
    assert rows[1][:4] == ("resnet18", "cpu", "16", "15W gpu612MHz")
    assert rows[1][4] == "5 mJ"
    assert rows[1][5] == "91 ms"
    assert rows[1][6] == "50"
    assert rows[1][7] == "valid"
    assert rows[2][2] == "10"  # batch falls back to items per call
    assert rows[2][3] == "dvfs"  # nothing pinned: the one spelling of the default point
    assert rows[2][4] == "-"
    assert rows[2][7].startswith("INVALID: ")
    cfg = bench([window(0.5, 2.0)], workload="w", graph_mode="eager", precision="fp32")
    assert summary_rows([cfg], header=False)[0][1] == "eager/fp32/cpu"
    lines = format_rows(rows)
    assert len(lines) == 3 and lines[1].index("16") == lines[0].index("batch")
    assert summary_rows([], header=False) == []


def test_summary_rows_name_a_runs_label_and_round_up_the_prefix() -> None:
    import dataclasses

    steady = bench([window(0.5, 2.0)], workload="llm_tiny")
    decode = dataclasses.replace(steady, label="decode")
    rows = summary_rows([steady, decode], header=False)
    assert [r[0] for r in rows] == ["llm_tiny", "llm_tiny [decode]"]
    # 99.96 J over 100 items = 0.9996 J: one joule, not "1e+03 mJ"
    assert summary_rows([bench([window(99.96, 2.0)])], header=False)[0][4] == "1 J"
    assert summary_rows([bench([window(99.0, 2.0)])], header=False)[0][4] == "990 mJ"
    paced = bench([window(0.5, 2.0)], workload="w", scenario="fixed-rate", rate_hz=30.0)
    assert summary_rows([paced], header=False)[0][1] == "cpu fixed-rate@30/s"
    offline = bench([window(0.5, 2.0)], workload="w", scenario="offline")
    assert summary_rows([offline], header=False)[0][1] == "cpu"
    both = bench([window(0.5, 2.0)], workload="w", scheduler="threads", rate_qps=10.0)
    assert summary_rows([both], header=False)[0][1] == "cpu threads@10/s"


def test_report_params_operating_point_shapes() -> None:
    op = OperatingPoint(power_mode="15W")
    p = bench([window(1.0, 1.0)], operating_point=op, batch_size=8).report_params()
    assert p["operating_point"] == {"requested": op.to_json(), "read_back": {}}
    assert p["device"] == "cpu" and p["batch_size"] == 8
    p2 = bench([window(1.0, 1.0)], operating_point="MAXN").report_params()
    assert p2["operating_point"] == {"requested": {"id": "MAXN"}, "read_back": {}}
    given: dict[str, Any] = {"requested": {"gpu": 1}, "read_back": {"gpu": 2}}
    p3 = bench([window(1.0, 1.0)], operating_point=given).report_params()
    assert p3["operating_point"] == given


def test_merge_report_prefixes_and_validity() -> None:
    steady = bench([window(10.0, 2.0)])
    other = bench([window(10.0, 2.0)])
    other.label = "bs64"
    load = PhaseResult("load", window(3.0, 1.5, label="load"), elapsed_s=1.4)
    bad_load = PhaseResult("load", window(0.1, 0.01, valid=False, label="load"), elapsed_s=0.01)
    rep = merge_report([steady, other], [load, bad_load], [{"what": "x", "fits": True}])
    names = set(rep["metrics"])
    assert {"energy_per_item", "bs64.energy_per_item", "load.energy_j", "load#2.energy_j"} <= names
    assert rep["metrics"]["load.energy_j"]["value"] == 3.0
    assert rep["metrics"]["load#2.energy_j"]["value"] is None
    assert rep["metrics"]["load.duration_s"]["unit"] == "s"
    # A short load phase loses its own figures and is named, but does not invalidate the
    # steady-state runs.
    assert rep["valid"] is True and rep["reason"] is not None and "load phase" in rep["reason"]
    assert rep["extra"]["preflight"] == [{"what": "x", "fits": True}]
    assert len(rep["extra"]["runs"]) == 2
    assert merge_report([])["validity"] is None
