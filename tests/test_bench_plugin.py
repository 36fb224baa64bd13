"""Benchmark options (precedence, errors) and the edge_bench fixture in real pytest runs."""

from __future__ import annotations

import json

import pytest

from pytest_edgeenergy.bench.settings import DEFAULT
from pytest_edgeenergy.options_spec import BENCH_OPTIONS
from pytest_edgeenergy.plugin.options import SettingsError, build_bench


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for opt in BENCH_OPTIONS.values():
        monkeypatch.delenv(opt.env, raising=False)
    return monkeypatch


@pytest.fixture
def conf(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> pytest.Pytester:
    return pytester


def test_defaults(conf: pytest.Pytester) -> None:
    assert build_bench(conf.parseconfig()) == DEFAULT
    assert DEFAULT.items == 3200 and DEFAULT.repeats == 10


def test_precedence_cli_env_ini(conf: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    conf.makeini("[pytest]\nedge_items = 100\nedge_repeats = 4\n")
    s = build_bench(conf.parseconfig())
    assert (s.items, s.repeats) == (100, 4)
    clean_env.setenv("EDGEENERGY_ITEMS", "200")
    assert build_bench(conf.parseconfig()).items == 200
    s = build_bench(conf.parseconfig("--edge-items=300", "--edge-min-window-s=0.25"))
    assert (s.items, s.repeats, s.min_window_s) == (300, 4, 0.25)


@pytest.mark.parametrize(
    ("args", "env", "ini", "message"),
    [
        (["--edge-items=abc"], {}, "", "--edge-items (command line): 'abc' is not a whole number"),
        ([], {"EDGEENERGY_REPEATS": "0"}, "", "EDGEENERGY_REPEATS (environment): '0' must be >= 1"),
        ([], {}, "edge_min_window_s = -1", "edge_min_window_s (ini file): '-1' must be >= 0"),
        ([], {"EDGEENERGY_QUICK": "maybe"}, "", "EDGEENERGY_QUICK (environment): 'maybe' is not"),
        (["--workload= , "], {}, "", "--workload (command line): ' , ' names no workload"),
        (["--edge-warmup=-1"], {}, "", "--edge-warmup (command line): '-1' must be >= 0"),
    ],
)
def test_errors_name_their_source(
    conf: pytest.Pytester,
    clean_env: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    ini: str,
    message: str,
) -> None:
    conf.makeini(f"[pytest]\n{ini}\n")
    for k, v in env.items():
        clean_env.setenv(k, v)
    with pytest.raises(SettingsError) as info:  # the plugin turns these into UsageError
        build_bench(conf.parseconfig(*args))
    assert message in str(info.value)


def test_quick_replaces_defaults_only(conf: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    s = build_bench(conf.parseconfig("--edge-quick"))
    assert s.quick and s.items is None and (s.repeats, s.warmup, s.min_window_s) == (2, 1, 0.1)
    assert s.items_for(16) == 32  # two calls' worth
    s = build_bench(conf.parseconfig("--edge-quick", "--edge-repeats=5", "--edge-items=7"))
    assert (s.repeats, s.items, s.items_for(16)) == (5, 7, 7)
    clean_env.setenv("EDGEENERGY_QUICK", "yes")
    assert build_bench(conf.parseconfig()).quick


def test_workload_filter(conf: pytest.Pytester) -> None:
    config = conf.parseconfig("--workload", "ResNet18, mobilenet*")
    s = build_bench(config)
    assert s.workloads == ("resnet18", "mobilenet*")
    assert s.selects("resnet18") and s.selects("MobileNet-V2") and not s.selects("resnet50")
    assert build_bench(conf.parseconfig()).selects("anything")


def test_workload_filter_reads_dashes_and_dots_as_underscores(conf: pytest.Pytester) -> None:
    config = conf.parseconfig("--workload", "mistral-7b,TinyLlama-1.1B")
    s = build_bench(config)
    assert s.selects("mistral_7b") and s.selects("tinyllama_1_1b")
    assert not s.selects("mistral_7b_instruct") and not s.selects("llama2_7b")


TEST_FILE = """
import hashlib

import pytest

DATA = b"x" * 512


def sha():
    return hashlib.sha256(DATA).digest()


@pytest.mark.workload("sha256")
def test_sha(benchmark, edge_bench):
    benchmark.pedantic(sha, rounds=3)
    r = edge_bench.run(sha, items_per_call=1, params={"workload": "sha256"})
    assert len(r.repeats) == 2  # --edge-quick
    assert r.items_requested == 2  # two calls' worth
    assert r.items_per_repeat >= 2
    assert benchmark.extra_info["energy_per_item_j"] == r.value("energy_per_item")


@pytest.mark.parametrize("workload", ["md5", "sha1"])
def test_other(edge_bench, workload):
    edge_bench.run(lambda: hashlib.new(workload, DATA).digest(), items_per_call=1)


def test_no_workload():
    pass
"""


def test_fixture_in_a_pytest_run(conf: pytest.Pytester) -> None:
    conf.makepyfile(test_bench_run=TEST_FILE)
    out = conf.path / "bm.json"
    result = conf.runpytest_subprocess(
        "--edge-board=sim:orin-nano",
        "--edge-idle-s=0.2",
        "--edge-quick",
        "--workload=sha*",
        f"--benchmark-json={out}",
        "-v",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*edge_bench *test_sha* [[]steady[]] repeat 1/2: * items in *",
            "*edge_bench *test_sha* [[]steady[]] repeat 2/2: * items in *",
        ]
    )
    result.stdout.fnmatch_lines(["*test_other[[]sha1[]] PASSED*"])
    result.stdout.no_fnmatch_line("*test_other[[]md5[]]*")
    benchmarks = json.loads(out.read_text())["benchmarks"]
    extra = benchmarks[0]["extra_info"]
    assert {"energy_per_item_j", "energy_valid", "edp_js", "throughput_items_s"} <= set(extra)
    assert extra["energy_simulated"] is True
