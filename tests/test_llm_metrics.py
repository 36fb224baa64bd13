"""The LLM suite's derived metrics from hand-built prefill and decode runs, and how
``merge_report`` carries derived metrics and their formulas."""

from __future__ import annotations

import pytest
from test_bench_result import window  # the hand-built window results of the bench tests

from pytest_edgeenergy.bench.result import BenchResult, DerivedMetric, RepeatResult, merge_report
from pytest_edgeenergy.workloads.llm_metrics import FORMULAS, UNITS, llm_metrics

BATCH, PROMPT, NEW = 4, 32, 9  # 8 decode steps per call


def run(
    label: str,
    energies_j: list[float],
    *,
    calls: int,
    per_call: int,
    secs: float,
    latencies: list[float],
    valid: bool = True,
) -> BenchResult:
    reps = [
        RepeatResult(
            index=i,
            calls=calls,
            items=calls * per_call,
            window=window(e, secs, idle_w=1.0, valid=valid),
            latencies_s=latencies,
        )
        for i, e in enumerate(energies_j)
    ]
    return BenchResult(
        label=label,
        params={"workload": "llm_tiny", "batch_size": BATCH},
        device="cpu",
        items_per_call=per_call,
        items_requested=calls * per_call,
        calls_per_repeat=calls,
        repeats=reps,
    )


def metrics(*, decode_valid: bool = True) -> dict[str, tuple[tuple[float | None, ...], bool]]:
    prefill = run(
        "prefill", [12.8, 25.6], calls=2, per_call=BATCH * PROMPT, secs=2.0, latencies=[0.5, 1.5]
    )
    decode = run(
        "decode",
        [16.0, 32.0],
        calls=1,
        per_call=BATCH * (NEW - 1),
        secs=4.0,
        latencies=[4.0],
        valid=decode_valid,
    )
    steps = [[9.0], [0.1] * 7 + [0.5], [0.2] * 8]  # the first list is the warm-up's
    out = llm_metrics(prefill, decode, batch_size=BATCH, step_times_s=steps)
    assert [m.name for m in out] == list(FORMULAS)
    assert all(m.unit == UNITS[m.name] and m.formula.startswith(FORMULAS[m.name]) for m in out)
    return {m.name: (m.values, m.trusted) for m in out}


def test_each_formula_on_known_figures() -> None:
    m = metrics()
    # prefill: 2 calls x 4 x 32 = 256 tokens; 12.8 J gross, 12.8 - 1 W x 2 s net
    assert m["energy_per_prefill_token_j"][0] == pytest.approx((12.8 / 256, 25.6 / 256))
    assert m["energy_per_prefill_token_net_j"][0] == pytest.approx((10.8 / 256, 23.6 / 256))
    # decode: 1 call x 4 x 8 = 32 tokens in 4 s
    assert m["energy_per_decode_token_j"][0] == pytest.approx((16 / 32, 32 / 32))
    assert m["energy_per_decode_token_net_j"][0] == pytest.approx((12 / 32, 28 / 32))
    # per request: prefill energy / (2 calls x 4) + decode energy / (1 call x 4)
    assert m["energy_per_request_j"][0] == pytest.approx((12.8 / 8 + 16 / 4, 25.6 / 8 + 32 / 4))
    assert m["energy_per_request_net_j"][0] == pytest.approx((10.8 / 8 + 12 / 4, 23.6 / 8 + 28 / 4))
    # one request = prompt x J/prefill-token + (new - 1) x J/decode-token
    e_req = PROMPT * 12.8 / 256 + (NEW - 1) * 16 / 32
    assert m["energy_per_request_j"][0][0] == pytest.approx(e_req)
    assert m["time_to_first_token_s"][0] == pytest.approx((1.0, 1.0))
    assert m["decode_tokens_per_s"][0] == pytest.approx((32 / 4, 32 / 4))
    assert m["latency_per_output_token_p50_s"][0] == pytest.approx((0.1, 0.2))
    assert m["latency_per_output_token_p90_s"][0][0] == pytest.approx(0.1 + 0.3 * (0.5 - 0.1))


def test_an_invalid_decode_window_untrusts_only_what_it_feeds() -> None:
    m = metrics(decode_valid=False)
    assert m["energy_per_prefill_token_j"][1] is True
    assert m["energy_per_decode_token_j"][1] is False
    assert m["energy_per_request_j"][1] is False
    assert m["decode_tokens_per_s"][1] is True  # time-based


def test_step_lists_must_cover_every_decode_repeat() -> None:
    prefill = run("prefill", [1.0], calls=1, per_call=8, secs=1.0, latencies=[1.0])
    decode = run("decode", [1.0], calls=1, per_call=8, secs=1.0, latencies=[1.0])
    with pytest.raises(ValueError, match="0 lists of decode step times for 1 repeats"):
        llm_metrics(prefill, decode, batch_size=1, step_times_s=[])


def test_merge_report_carries_derived_metrics_and_formulas() -> None:
    d = DerivedMetric("energy_per_request_j", (2.0, 4.0), "J/request", "E / n", trusted=True)
    bad = DerivedMetric("x_j", (1.0,), "J", "E", trusted=False)
    r = run("prefill", [1.0, 1.0], calls=1, per_call=8, secs=1.0, latencies=[1.0])
    report = merge_report([r], derived=[d, bad])
    m = report["metrics"]["energy_per_request_j"]
    assert m["unit"] == "J/request" and m["value"] == pytest.approx(3.0)
    assert m["samples"] == [2.0, 4.0]
    assert report["metrics"]["x_j"]["value"] is None
    assert report["extra"]["formulas"] == {"energy_per_request_j": "E / n", "x_j": "E"}
    assert "formulas" not in merge_report([r])["extra"]
