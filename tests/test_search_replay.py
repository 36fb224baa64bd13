"""Replay tables from CSV files and sweep reports; bad files name the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_reports import synthetic_report

from pytest_edgeenergy.errors import EdgeEnergyError, InvalidValue
from pytest_edgeenergy.search.replay import PointFailed, ReplayOracle, read_replay


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_with_comments_extra_columns_and_energy_instead_of_power(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# from a board\nmodel,gpu_freq_hz,batch_size,time_s,energy_j,note\n"
        "r18,306000000,8,0.02,0.1,a\nr18,612000000,8,0.01,0.08,b\nr18,612000000,16,0.008,0.07,c\n",
    )
    table = read_replay(path)
    assert table.space.names == ("gpu_freq_hz", "batch_size")
    assert table.space.size() == 3  # 2 x 2 values, one combination missing
    by = {tuple(t.knobs.values()): t for t in table.trials}
    assert by[(612_000_000, 8)].power_w == pytest.approx(8.0)
    assert by[(612_000_000, 8)].energy_j == pytest.approx(0.08)
    oracle = ReplayOracle(table)
    assert oracle.measure({"gpu_freq_hz": 306_000_000, "batch_size": 8}).time_s == 0.02
    with pytest.raises(PointFailed, match="not in the replay table"):
        oracle.measure({"gpu_freq_hz": 306_000_000, "batch_size": 16})


def test_where_keeps_one_workload_and_duplicates_say_how(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "workload,gpu_freq_hz,time_s,power_w\na,1,1,1\nb,1,2,2\na,2,0.5,3\n",
    )
    with pytest.raises(
        InvalidValue, match=r"data rows 1 and 2 are the same point.*--where.*workload"
    ):
        read_replay(path)
    table = read_replay(path, {"workload": "a"})
    assert [t.time_s for t in table.trials] == [1.0, 0.5]
    with pytest.raises(InvalidValue, match="--where board: no such column"):
        read_replay(path, {"board": "x"})
    with pytest.raises(InvalidValue, match="no row matches"):
        read_replay(path, {"workload": "c"})


def test_rows_at_one_point_name_the_knob_columns_the_table_lacks(tmp_path: Path) -> None:
    """Two rows that differ only in a knob whose column is missing (or misnamed) are not two
    workloads: the message names the knob columns the table has not."""
    lacking = "power_mode, cpu_freq_hz, gpu_freq_hz, emc_freq_hz, batch_size"
    with pytest.raises(InvalidValue) as info:
        read_replay(write(tmp_path, "cpu_cores,time_s,power_w\n1,2,3\n1,3,4\n"))
    assert str(info.value).endswith(
        "data rows 1 and 2 are the same point {'cpu_cores': 1}: a table holds one row per "
        "point, and its knob column cpu_cores does not tell them apart; a knob that differs "
        f"between them needs its column, named as the option is (the table has no column "
        f"{lacking})"
    )
    assert "--where" not in str(info.value)  # no other column to select on
    with pytest.raises(InvalidValue) as info:
        read_replay(write(tmp_path, "cpu_cores,gpu,time_s,power_w\n1,100,2,3\n1,200,3,4\n"))
    assert (
        "keep one with --where COLUMN=VALUE (other columns: gpu); a knob that differs between "
        f"them needs its column, named as the option is (the table has no column {lacking})"
    ) in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu_freq_hz,power_w\n1,2\n", "needs columns time_s and power_w \\(or energy_j\\)"),
        ("gpu_freq_hz,time_s\n1,2\n", "needs columns time_s and power_w"),
        ("freq,time_s,power_w\n1,2,3\n", "no knob column; expected any of power_mode, cpu_cores"),
        ("gpu_freq_hz,time_s,power_w\nfast,2,3\n", "data row 1: gpu_freq_hz 'fast': not a number"),
        ("gpu_freq_hz,time_s,power_w\n1.5,2,3\n", "gpu_freq_hz '1.5': must be a positive integer"),
        ("gpu_freq_hz,time_s,power_w\n1,-2,3\n", "time_s '-2': must be a positive number"),
        ("gpu_freq_hz,time_s,power_w\n", "has no data rows"),
    ],
)
def test_bad_csv_names_the_value_and_what_is_allowed(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(InvalidValue, match=message):
        read_replay(write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidValue, match="no such file"):
        read_replay(tmp_path / "nope.csv")


def test_a_sweep_report_replays_per_item_figures(tmp_path: Path) -> None:
    report = synthetic_report(batch_sizes=(8, 16), gpu_freqs_hz=(612e6, 918e6, 1300e6))
    path = write(tmp_path, json.dumps(report), "sweep.json")
    with pytest.raises(InvalidValue, match=r"same point.*--where.*workload"):
        read_replay(path)
    table = read_replay(path, {"workload": "resnet18"})
    assert table.space.names == ("gpu_freq_hz", "batch_size")
    assert table.space.size() == 6
    test = next(
        t
        for t in report["tests"]
        if t["params"]["workload"] == "resnet18"
        and t["params"]["batch_size"] == 16
        and t["params"]["operating_point"]["requested"]["gpu_freq_hz"] == 918_000_000
    )
    trial = ReplayOracle(table).measure({"gpu_freq_hz": 918_000_000, "batch_size": 16})
    assert trial.time_s == pytest.approx(1 / test["metrics"]["throughput"]["value"])
    assert trial.energy_j == pytest.approx(test["metrics"]["energy_per_item"]["value"])


def test_a_file_that_is_not_a_report(tmp_path: Path) -> None:
    with pytest.raises(EdgeEnergyError, match="not a pytest-edgeenergy report"):
        read_replay(write(tmp_path, '{"a": 1}', "x.json"))


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
def test_any_knob_text_either_parses_or_is_refused_by_name(
    tmp_path_factory: pytest.TempPathFactory, garbage: str
) -> None:
    tmp = tmp_path_factory.mktemp("g")
    cell = '"' + garbage.replace('"', '""') + '"'
    path = write(tmp, f"cpu_cores,time_s,power_w\n{cell},1,1\n")
    try:
        table = read_replay(path)
    except InvalidValue as exc:
        assert "cpu_cores" in str(exc) or "no data rows" in str(exc)
    else:
        (trial,) = table.trials
        value = trial.knobs["cpu_cores"]
        assert isinstance(value, int) and value > 0 and float(garbage) == value
