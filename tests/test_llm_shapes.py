"""LLM shapes: parameter counts from the shape alone against a meta-device model of the same
config and the published counts, the KV-cache and pre-flight arithmetic, token-count
options and the estimate against the measured peak of the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_edgeenergy.bench.memory import CUDA_CONTEXT_BYTES, GIB
from pytest_edgeenergy.workloads.errors import LocalFileError, WorkloadError
from pytest_edgeenergy.workloads.llm_grid import parse_token_counts
from pytest_edgeenergy.workloads.llm_shapes import (
    estimate_llm_memory,
    kv_cache_bytes,
    linear_param_count,
    llm_shape,
    llm_shapes,
    param_count,
    shape_from_hf_config,
)
from pytest_edgeenergy.workloads.registry import workload_names

SHAPES = list(llm_shapes())
PUBLISHED_B = {  # model cards, billions
    "tinyllama_1_1b": 1.1,
    "qwen2_5_0_5b": 0.49,
    "phi_2": 2.78,
    "llama2_7b": 6.74,
    "mistral_7b": 7.24,
    "llama3_8b": 8.03,
}


def _meta_model(name: str) -> object:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    s = llm_shape(name)
    config = transformers.AutoConfig.for_model(s.family, **s.config_kwargs())
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


@pytest.mark.parametrize("name", SHAPES)
def test_param_count_matches_a_meta_model_of_the_same_config(name: str) -> None:
    model = _meta_model(name)
    params = list(model.parameters())  # type: ignore[attr-defined]
    counted = sum(p.numel() for p in params)
    assert param_count(llm_shape(name)) == pytest.approx(counted, rel=0.01)
    linear = sum(
        m.weight.numel()
        for m in model.modules()  # type: ignore[attr-defined]
        if type(m).__name__ == "Linear"
    )
    assert linear_param_count(llm_shape(name)) == pytest.approx(linear, rel=0.01)


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_param_count_matches_the_published_count(name: str) -> None:
    s = llm_shape(name)
    assert param_count(s) / 1e9 == pytest.approx(PUBLISHED_B[name], rel=0.02)
    assert s.published_params is not None
    assert param_count(s) == pytest.approx(s.published_params, rel=0.01)


def test_registry_lists_every_shape_as_an_llm_workload() -> None:
    assert workload_names("llm") == tuple(SHAPES)
    assert "llm_tiny" in SHAPES and "mistral_7b" in SHAPES


def test_kv_cache_is_two_x_layers_x_kv_heads_x_head_dim_x_tokens_x_batch_x_bytes() -> None:
    s = llm_shape("tinyllama_1_1b")  # 22 layers, 4 KV heads of 64
    got = kv_cache_bytes(s, batch_size=3, prompt_tokens=100, new_tokens=28, precision="fp16")
    assert got == 2 * 22 * 4 * 64 * 128 * 3 * 2
    fp32 = kv_cache_bytes(s, batch_size=3, prompt_tokens=100, new_tokens=28, precision="fp32")
    assert fp32 == 2 * got


def test_mistral_fp16_on_cuda_needs_about_14_gib() -> None:
    s = llm_shape("mistral_7b")
    est = estimate_llm_memory(
        s, batch_size=1, prompt_tokens=32, new_tokens=8, precision="fp16", device="cuda"
    )
    assert est.weights_bytes == 2 * param_count(s)
    assert est.cuda_context_bytes == CUDA_CONTEXT_BYTES
    assert 14 * GIB < est.total_bytes < 15 * GIB
    assert "CUDA context" in est.describe() and "weights 13.49 GiB" in est.describe()
    cpu = estimate_llm_memory(
        s, batch_size=1, prompt_tokens=32, new_tokens=8, precision="fp32", device="cpu"
    )
    assert cpu.cuda_context_bytes == 0 and cpu.weights_bytes == 4 * param_count(s)


def test_int8_peak_holds_the_fp32_build_and_the_int8_copy() -> None:
    s = llm_shape("tinyllama_1_1b")
    kw = {"batch_size": 1, "prompt_tokens": 8, "new_tokens": 2, "device": "cpu"}
    int8 = estimate_llm_memory(s, precision="int8", **kw)  # type: ignore[arg-type]
    assert int8.weights_bytes == 4 * param_count(s) + linear_param_count(s)


def test_gguf_size_replaces_the_weights_estimate() -> None:
    s = llm_shape("llama3_8b")
    kw = {"batch_size": 1, "prompt_tokens": 8, "new_tokens": 2, "device": "cpu"}
    est = estimate_llm_memory(s, precision="int4", weights_file_bytes=4_920_000_000, **kw)  # type: ignore[arg-type]
    assert est.weights_bytes == 4_920_000_000


def test_bad_counts_and_precisions_are_errors_naming_them() -> None:
    s = llm_shape("llm_tiny")
    with pytest.raises(WorkloadError, match="batch_size"):
        kv_cache_bytes(s, batch_size=0, prompt_tokens=1, new_tokens=1, precision="fp32")
    with pytest.raises(WorkloadError, match=r"'fp8'.*fp32"):
        estimate_llm_memory(
            s, batch_size=1, prompt_tokens=1, new_tokens=2, precision="fp8", device="cpu"
        )
    with pytest.raises(WorkloadError, match=r"gpt_9.*llm_tiny"):
        llm_shape("gpt_9")


def test_shape_from_a_local_config_json_round_trips() -> None:
    transformers = pytest.importorskip("transformers")
    for name in ("tinyllama_1_1b", "qwen2_5_0_5b", "phi_2"):
        s = llm_shape(name)
        config = transformers.AutoConfig.for_model(s.family, **s.config_kwargs()).to_dict()
        back = shape_from_hf_config(name, config, source="x/config.json")
        assert param_count(back) == param_count(s), name
    with pytest.raises(LocalFileError, match=r"x/config\.json.*'hidden_size'"):
        shape_from_hf_config(
            "m", {"model_type": "llama", "num_hidden_layers": 2}, source="x/config.json"
        )


@pytest.mark.parametrize(
    ("text", "expected"), [("16", (16,)), (" 16, 64 ,16", (16, 64)), ("8,", (8,))]
)
def test_token_lists_parse(text: str, expected: tuple[int, ...]) -> None:
    assert parse_token_counts(text, "--edge-new-tokens (command line)", 2) == expected


@pytest.mark.parametrize(
    ("text", "match"), [("1", ">= 2"), ("x", "'x' is not"), (" ,", "no token")]
)
def test_bad_token_lists_name_the_option(text: str, match: str) -> None:
    with pytest.raises(WorkloadError, match=match) as e:
        parse_token_counts(text, "--edge-new-tokens (command line)", 2)
    assert "--edge-new-tokens" in str(e.value)


PEAK_SCRIPT = """
import gc, json, sys
from dataclasses import replace
from pytest_edgeenergy.bench.memory import ProcessPeak
from pytest_edgeenergy.workloads.llm import (
    LlmWeights, TorchGenerator, build_causal_lm, load_generator, make_prompts)
from pytest_edgeenergy.workloads.llm_shapes import estimate_llm_memory, llm_shape

bs, p, n = (int(x) for x in sys.argv[1:4])
shape = llm_shape("llm_tiny")
# the same code paths on a 1-layer toy first: imports and kernel set-up are not the model's
small = replace(shape, vocab=1000, hidden=64, intermediate=128, layers=1)
warm = TorchGenerator(build_causal_lm(small), "cpu", bs, p, n, make_prompts(bs, p, 1000))
warm.start_decode(); warm.decode()
del warm; gc.collect()
peak = ProcessPeak()
base = peak.rss_bytes()
if not peak.reset():
    print(json.dumps({"skip": "VmHWM cannot be reset here"})); sys.exit(0)
gen = load_generator("llm_tiny", precision="fp32", device="cpu", batch_size=bs,
                     prompt_tokens=p, new_tokens=n, weights=LlmWeights("random"))
gen.prefill(); gen.start_decode(); gen.decode()
est = estimate_llm_memory(shape, batch_size=bs, prompt_tokens=p, new_tokens=n,
                          precision="fp32", device="cpu")
print(json.dumps({"measured": peak.peak_bytes() - base, "estimate": est.total_bytes,
                  "weights": est.weights_bytes}))
"""


@pytest.mark.parametrize(("batch", "prompt", "new"), [(1, 32, 8), (8, 16, 4)])
def test_estimate_is_within_15_percent_of_the_measured_peak_of_the_tiny_model(
    batch: int, prompt: int, new: int
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(batch), str(prompt), str(new)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got["weights"] > 0.8 * got["estimate"]  # the weights dominate: the test means something
    assert abs(got["estimate"] - got["measured"]) <= 0.15 * got["measured"], got
