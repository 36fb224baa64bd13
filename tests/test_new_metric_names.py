"""The metrics the LLM suite and the load scenarios record are names the report layer
knows: a gate threshold or a compare column on them is accepted, and the gate knows which
direction is better."""

from __future__ import annotations

from array import array

import pytest

from pytest_edgeenergy.bench.scenarios import Scenario, run_schedule, schedule_metrics
from pytest_edgeenergy.report.metric_names import (
    LLM_METRICS,
    SCENARIO_METRICS,
    higher_is_better,
    name_problem,
)
from pytest_edgeenergy.workloads.llm_metrics import FORMULAS, UNITS


def test_llm_metric_names_are_the_report_layers() -> None:
    assert set(UNITS) == LLM_METRICS
    assert set(FORMULAS) == LLM_METRICS


def test_scenario_metric_names_are_the_report_layers() -> None:
    lat: array[float] = array("d")
    sched = run_schedule(Scenario("fixed-rate", 50.0), lambda: None, 2, lat)
    assert set(schedule_metrics([sched])) == SCENARIO_METRICS


@pytest.mark.parametrize("name", sorted(LLM_METRICS | SCENARIO_METRICS))
def test_each_new_metric_is_accepted_bare_and_behind_a_label(name: str) -> None:
    assert name_problem(name) is None
    assert name_problem(f"decode.{name}") is None


def test_a_typo_of_a_new_metric_gets_a_did_you_mean() -> None:
    problem = name_problem("energy_per_decode_tokn_j")
    assert problem is not None and "energy_per_decode_token_j" in problem


def test_direction_of_the_new_metrics() -> None:
    assert higher_is_better("decode_tokens_per_s")
    assert not higher_is_better("energy_per_request_j")
    assert not higher_is_better("deadline_miss_fraction")
    assert not higher_is_better("time_to_first_token_s")
