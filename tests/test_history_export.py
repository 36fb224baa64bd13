"""`edgeenergy history export`: Bencher Metric Format and github-action-benchmark JSON.

Each format is checked against a JSON Schema written from its documentation (Bencher's
published BMF schema; github-action-benchmark's README for customSmallerIsBetter), from a
report file and from a real SQLite history built with `edgeenergy history add`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pg_server import fresh_database, pg_server
from synthetic_reports import synthetic_report

from pytest_edgeenergy.commands import main
from pytest_edgeenergy.history.export import measure_slug

START = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)

BMF_SCHEMA = {  # https://bencher.dev/docs/reference/bencher-metric-format (draft-07)
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        ".+": {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                }
            },
            "propertyNames": {"pattern": "^[a-z0-9-]{1,64}$"},  # measure slugs
        }
    },
}
GAB_SCHEMA = {  # github-action-benchmark README: tool customSmallerIsBetter
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "unit": {"type": "string"},
            "value": {"type": "number"},
            "range": {"type": "string"},
            "extra": {"type": "string"},
        },
        "required": ["name", "unit", "value"],
        "additionalProperties": False,
    },
}


def write_run(path: Path, i: int, *, model: str = "agx-orin") -> Path:
    report = synthetic_report(
        sim_model=model,
        workloads=("resnet18",),
        batch_sizes=(8, 16),
        gpu_freqs_hz=(612e6,),
        noise=0.02,
        seed=i,
        started_at=START + timedelta(hours=i),
    )
    report["git"] = {"commit": f"{i:02d}" + "cd" * 19, "dirty": False}
    path.write_text(json.dumps(report))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def metrics_of(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    report = json.loads(path.read_text())
    return {(t["id"], m): e for t in report["tests"] for m, e in t["metrics"].items()}


@pytest.fixture
def two_boards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, list[Path]]:
    """A history of three runs: two of a virtual AGX Orin, one of an Orin Nano."""
    db = tmp_path / "h.db"
    paths = [
        write_run(tmp_path / "a0.json", 0),
        write_run(tmp_path / "a1.json", 1),
        write_run(tmp_path / "n0.json", 2, model="orin-nano"),
    ]
    code, _, err = run_cli(capsys, "history", "add", *map(str, paths), "--db", str(db))
    assert code == 0, err
    return db, paths


def test_bencher_from_a_report_file_has_the_reports_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = write_run(tmp_path / "r.json", 3)
    code, out, err = run_cli(
        capsys, "history", "export", "--format", "bencher", "--report", str(report)
    )
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, BMF_SCHEMA)
    metrics = metrics_of(report)
    tests = {test_id for test_id, _ in metrics}
    assert len(doc) == len(tests)
    for name, measures in doc.items():
        test_id = name.split(" | ")[0]
        assert name == f"{test_id} | sim:agx-orin (simulated) | gpu612MHz"
        assert set(measures) == {"energy-per-item", "energy-j", "latency-p90", "throughput"}
        for slug, got in measures.items():
            entry = metrics[(test_id, slug.replace("-", "_"))]
            assert got["value"] == entry["value"]
            assert got["lower_value"] == entry["stats"]["min"]
            assert got["upper_value"] == entry["stats"]["max"]


def test_github_action_benchmark_from_the_history_leaves_throughput_out(
    two_boards: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, paths = two_boards
    out_file = tmp_path / "out" / "gab.json"
    out_file.parent.mkdir()
    code, out, err = run_cli(
        capsys, "history", "export", "--format", "github-action-benchmark", "--db", str(db),
        "-o", str(out_file),
    )  # fmt: skip
    assert code == 0, err
    assert out == ""
    doc = json.loads(out_file.read_text())
    jsonschema.validate(doc, GAB_SCHEMA)
    names = [e["name"] for e in doc]
    assert len(names) == len(set(names)), "benchmark names collide across boards"
    assert not any(n.endswith(" - throughput") for n in names)
    # the newest run of each device: a1 for the AGX Orin (not a0), n0 for the Orin Nano
    run_ids = {json.loads(p.read_text())["run_id"] for p in paths[1:]}
    assert {e["extra"].split("run: ")[1].split("\n")[0] for e in doc} == run_ids
    boards = {"sim:agx-orin (simulated)": 0, "sim:orin-nano (simulated)": 0}
    for entry in doc:
        test_id, board, _point_metric = entry["name"].split(" | ")
        metric = entry["name"].rsplit(" - ", 1)[1]
        boards[board] += 1
        assert "simulated: a virtual board" in entry["extra"]
        source = metrics_of(paths[1] if "agx" in board else paths[2])
        assert entry["value"] == source[(test_id, metric)]["value"]
        assert entry["unit"] == source[(test_id, metric)]["unit"]
        assert entry["range"].startswith("± ")
    assert boards["sim:agx-orin (simulated)"] == boards["sim:orin-nano (simulated)"] > 0
    assert len(doc) == sum(
        1
        for path in paths[1:]
        for (_, m) in metrics_of(path)
        if m in ("energy_per_item", "energy_j", "latency_p90")
    )


def test_one_run_of_the_history_and_chosen_metrics(
    two_boards: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, paths = two_boards
    oldest = json.loads(paths[0].read_text())["run_id"]
    code, out, err = run_cli(
        capsys, "history", "export", "--format", "bencher", "--db", str(db), "--run", oldest,
        "--metric", "energy_per_item", "power_mean",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, BMF_SCHEMA)
    metrics = metrics_of(paths[0])
    assert len(doc) == len({t for t, _ in metrics})
    for name, measures in doc.items():
        assert set(measures) == {"energy-per-item", "power-mean"}
        test_id = name.split(" | ")[0]
        assert measures["power-mean"]["value"] == metrics[(test_id, "power_mean")]["value"]


BAD_INPUT = [
    (["--format", "csv"], "unknown export format 'csv'; allowed: bencher, github-action-benchmark"),
    (["--run", "0123"], "no run '0123' in the history"),
    (
        ["--metric", "energy_per_itm"],
        "no result has the metric 'energy_per_itm'; allowed: edp, energy_j, energy_per_item",
    ),
    (["--format", "github-action-benchmark", "--metric", "throughput"], "bigger-is-better"),
]


@pytest.mark.parametrize(("argv", "says"), BAD_INPUT)
def test_bad_input_exits_2_naming_what_is_allowed(
    two_boards: tuple[Path, list[Path]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    db, paths = two_boards
    if "--format" not in argv:
        argv = ["--format", "bencher", *argv]
    code, out, err = run_cli(capsys, "history", "export", *argv, "--db", str(db))
    assert code == 2
    assert out == ""
    assert err.startswith("edgeenergy: ") and says in err
    if "--run" in argv:  # the runs there are listed, newest first
        ids = [json.loads(p.read_text())["run_id"] for p in paths]
        assert f"its 3 runs, newest first: {ids[2]}, {ids[1]}, {ids[0]}" in err


def test_a_report_that_cannot_be_read_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    code, out, err = run_cli(
        capsys, "history", "export", "--format", "bencher", "--report", str(missing)
    )
    assert code == 2 and out == ""
    assert err.startswith("edgeenergy: ") and "missing.json" in err


@given(st.text(max_size=200))
def test_measure_slugs_are_bencher_slugs(metric: str) -> None:
    slug = measure_slug(metric)
    assert 1 <= len(slug) <= 64
    assert all(c.isascii() and (c.isalnum() or c == "-") and not c.isupper() for c in slug)
    assert not slug.startswith("-") and not slug.endswith("-")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with pg_server() as url:
        yield url


def test_postgresql_exports_what_sqlite_exports(
    server: str, two_boards: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, paths = two_boards
    pg_url = fresh_database(server, "x")
    code, _, err = run_cli(capsys, "history", "add", *map(str, paths), "--db", pg_url)
    assert code == 0, err
    exports = []
    for url in (str(db), pg_url):
        code, out, err = run_cli(
            capsys, "history", "export", "--format", "github-action-benchmark", "--db", url
        )
        assert code == 0, err
        exports.append(json.loads(out))
    jsonschema.validate(exports[1], GAB_SCHEMA)
    assert exports[0] == exports[1]
