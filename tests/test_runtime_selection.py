"""``--runtime`` and ``--precision``: deselect parametrized tests by their ``runtime`` /
``precision`` parameter, as ``--workload`` does by workload; CLI > env > ini; an unknown
name is a usage error listing the allowed ones."""

from __future__ import annotations

import pytest

from pytest_edgeenergy.bench.settings import PRECISIONS, RUNTIMES
from pytest_edgeenergy.options_spec import BENCH_OPTIONS
from pytest_edgeenergy.plugin.options import SettingsError, build_bench
from pytest_edgeenergy.workloads.modes import PRECISIONS as INFERENCE_PRECISIONS
from pytest_edgeenergy.workloads.runtimes import RUNTIME_PRECISIONS

TEST_FILE = """
import pytest


@pytest.mark.parametrize(
    "runtime,precision",
    [("torch", "fp32"), ("torch", "int8"), ("onnxruntime", "fp32"), ("onnxruntime", "int8"),
     ("tensorrt", "fp16")],
)
def test_model(runtime, precision):
    pass


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_llm(precision):
    pass


def test_plain():
    pass
"""


@pytest.fixture
def conf(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for opt in BENCH_OPTIONS.values():
        monkeypatch.delenv(opt.env, raising=False)
    pytester.makepyfile(test_grid=TEST_FILE)
    return pytester


def _ran(result: pytest.RunResult) -> set[str]:
    return {
        line.split("::", 1)[1].split(" ", 1)[0]
        for line in result.outlines
        if "::" in line and " PASSED" in line
    }


def test_every_precision_and_runtime_the_suites_use_is_selectable() -> None:
    assert set(INFERENCE_PRECISIONS) <= set(PRECISIONS)
    assert set(RUNTIME_PRECISIONS) | {"torch"} == set(RUNTIMES)
    for precisions in RUNTIME_PRECISIONS.values():
        assert set(precisions) <= set(PRECISIONS)
    llm = pytest.importorskip("pytest_edgeenergy.workloads.llm_shapes")
    assert set(llm.LLM_PRECISIONS) <= set(PRECISIONS)


def test_runtime_and_precision_deselect_like_workload(conf: pytest.Pytester) -> None:
    result = conf.runpytest("--runtime=onnxruntime,TensorRT", "--precision", "fp32,fp16", "-v")
    result.assert_outcomes(passed=4, deselected=4)
    assert _ran(result) == {
        "test_model[onnxruntime-fp32]",
        "test_model[tensorrt-fp16]",
        "test_llm[fp32]",  # no runtime parameter: only --precision applies
        "test_plain",  # neither parameter: stays
    }


def test_precision_filter_is_generic_on_the_parameter(conf: pytest.Pytester) -> None:
    result = conf.runpytest("--precision=bf16,int8", "-v")
    result.assert_outcomes(passed=4, deselected=4)
    assert _ran(result) == {
        "test_model[torch-int8]",
        "test_model[onnxruntime-int8]",
        "test_llm[bf16]",
        "test_plain",
    }


def test_cli_beats_env_beats_ini(conf: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    conf.makeini("[pytest]\nedge_runtime = tensorrt\nedge_precision = int8\n")
    s = build_bench(conf.parseconfig())
    assert (s.runtimes, s.precisions) == (("tensorrt",), ("int8",))
    monkeypatch.setenv("EDGEENERGY_RUNTIME", "onnxruntime")
    assert build_bench(conf.parseconfig()).runtimes == ("onnxruntime",)
    s = build_bench(conf.parseconfig("--runtime=torch, torch", "--precision=FP16"))
    assert (s.runtimes, s.precisions) == (("torch",), ("fp16",))


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--runtime=onnx"],
            {},
            "--runtime (command line): unknown runtime 'onnx'; "
            "allowed: torch, onnxruntime, tensorrt",
        ),
        (
            [],
            {"EDGEENERGY_PRECISION": "fp32,fp8"},
            "EDGEENERGY_PRECISION (environment): unknown precision 'fp8'; "
            "allowed: fp32, fp16, bf16, int8, int4",
        ),
        (["--precision= , "], {}, "--precision (command line): no precision; allowed: fp32"),
    ],
)
def test_unknown_name_is_a_usage_error_listing_the_allowed(
    conf: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SettingsError, match="allowed"):
        build_bench(conf.parseconfig(*args))
    result = conf.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
