"""Causal language models ready to measure prefill and decode separately.

* torch (transformers): built from the shape's config with random weights, or loaded from a
  local model directory ``<weights_dir>/<workload>/`` (config.json + safetensors,
  ``local_files_only``); fp32 and int8 (dynamic quantisation of Linear) on cpu, fp32, fp16
  and bf16 on cuda (built directly in that dtype on the device).
* llama.cpp (``llama-cpp-python``): int4 from a local GGUF ``<weights_dir>/<workload>.gguf``,
  one sequence at a time.

Greedy decoding with a fixed number of new tokens (no EOS stop): every call does the same
work. ``new_tokens`` counts the generated tokens per sequence: the prefill's forward pass
yields the first, each of the ``new_tokens - 1`` decode steps one more.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import CombinationUnsupported, LocalFileError, WorkloadError
from .llm_shapes import LlmShape, llm_shape, shape_from_hf_config
from .local_files import RANDOM_WEIGHTS
from .modes import importable

if TYPE_CHECKING:
    import torch

LLM_COMBINATIONS: tuple[tuple[str, str], ...] = (
    ("fp32", "cpu"),
    ("int8", "cpu"),
    ("fp32", "cuda"),
    ("fp16", "cuda"),
    ("bf16", "cuda"),
    ("int4", "cpu"),
    ("int4", "cuda"),
)
"""(precision, device) pairs that run somewhere: fp16/bf16 on CPU and int8 (torch dynamic
quantisation, CPU kernels only) on CUDA are not offered."""
FIRST_TOKEN_ID = 100
"""Prompt ids are drawn from [100, vocab): clear of the special tokens of every family."""
SEED = 0


@dataclass(frozen=True)
class LlmWeights:
    """Where a workload's weights come from."""

    kind: str
    """``random``, ``safetensors`` (a local model directory) or ``gguf``."""
    path: Path | None = None

    @property
    def label(self) -> str:
        """What the result's ``params.weights`` says: the path, or ``random``."""
        return str(self.path) if self.path is not None else RANDOM_WEIGHTS


def local_weights(workload: str, weights_dir: Path | None, precision: str) -> LlmWeights:
    """``<dir>/<workload>.gguf`` for int4, ``<dir>/<workload>/`` (a model directory with a
    config.json) otherwise, when present; else random weights."""
    if weights_dir is None:
        return LlmWeights(RANDOM_WEIGHTS)
    if precision == "int4":
        gguf = weights_dir / f"{workload}.gguf"
        return LlmWeights("gguf", gguf) if gguf.is_file() else LlmWeights(RANDOM_WEIGHTS)
    folder = weights_dir / workload
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise LocalFileError(
                f"{folder}: a local model directory needs config.json (and *.safetensors); "
                "save one with model.save_pretrained(DIR)"
            )
        return LlmWeights("safetensors", folder)
    return LlmWeights(RANDOM_WEIGHTS)


def resolve_shape(workload: str, weights: LlmWeights) -> LlmShape:
    """The shape the run will have: a local directory's config.json, else the shipped one."""
    if weights.kind != "safetensors" or weights.path is None:
        return llm_shape(workload)
    source = weights.path / "config.json"
    try:
        config = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LocalFileError(f"{source}: cannot be read as JSON ({e})") from e
    return shape_from_hf_config(workload, config, source=str(source))


def llm_skip_reason(
    precision: str, device: str, batch_size: int, weights: LlmWeights
) -> str | None:
    """Why this combination cannot run here (None: it runs). Asked after the pre-flight."""
    if (precision, device) not in LLM_COMBINATIONS:
        offered = ", ".join(f"{p}-{d}" for p, d in LLM_COMBINATIONS)
        return f"llm {precision} on {device} is not offered; offered: {offered}"
    if precision == "int4":
        if weights.kind != "gguf":
            return (
                "int4 runs through llama.cpp from a local GGUF file: give --edge-weights DIR "
                "holding DIR/<workload>.gguf"
            )
        if not importable("llama_cpp"):
            return (
                "int4 needs llama-cpp-python, which is not installed (pip install llama-cpp-python)"
            )
        if batch_size != 1:
            return (
                f"int4 (llama.cpp) runs one sequence at a time: batch_size 1 only, got {batch_size}"
            )
    else:
        if not importable("torch"):
            return "torch is not installed (pip install torch)"
        if not importable("transformers"):
            return "the llm suite needs transformers, which is not installed"
    if device == "cuda":
        from .modes import NO_CUDA_REASON, cuda_available

        if precision != "int4" and not cuda_available():
            return NO_CUDA_REASON
    if precision == "int8":
        from .modes import quant_engine

        if quant_engine() is None:
            return "int8: this torch build has no quantised-kernel engine"
    return None


class Generator(Protocol):
    """What the suite measures: a prefill, and a decode from a freshly prefilled cache."""

    step_times_s: list[list[float]]

    def prefill(self) -> None: ...

    def start_decode(self) -> None: ...

    def decode(self) -> None: ...

    def params(self) -> dict[str, object]: ...


def _torch_dtype(precision: str) -> torch.dtype:
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)


def build_causal_lm(shape: LlmShape, *, precision: str = "fp32", device: str = "cpu") -> Any:
    """The transformers model of ``shape`` with random weights, directly on ``device`` in
    the precision's float dtype (int8: fp32, quantised by :func:`load_generator`)."""
    import torch
    import transformers  # type: ignore[import-untyped, import-not-found, unused-ignore]

    torch.manual_seed(SEED)
    config = transformers.AutoConfig.for_model(shape.family, **shape.config_kwargs())
    auto: Any = transformers.AutoModelForCausalLM
    with torch.device(device):
        return auto.from_config(config, dtype=_torch_dtype(precision))


@dataclass
class TorchGenerator:
    """Prefill / decode of a transformers causal LM with a DynamicCache."""

    model: Any
    device: str
    batch_size: int
    prompt_tokens: int
    new_tokens: int
    input_ids: Any
    facts: dict[str, object] = field(default_factory=dict)
    step_times_s: list[list[float]] = field(default_factory=list)
    """Wall time of each decode step, one list per :meth:`start_decode`."""
    _cache: Any = None
    _first: Any = None

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()

    def prefill(self) -> None:
        """One forward pass over the prompts into a fresh KV cache; the first new token is
        the argmax of the last position's logits."""
        import torch
        import transformers

        with torch.inference_mode():
            cache = transformers.DynamicCache(config=self.model.config)
            out = self.model(
                input_ids=self.input_ids, past_key_values=cache, use_cache=True, logits_to_keep=1
            )
            self._first = out.logits[:, -1].argmax(-1, keepdim=True)
        self._cache = out.past_key_values
        self._sync()

    def start_decode(self) -> None:
        """Unmeasured: prefill, and start a new list of step times."""
        self.prefill()
        self.step_times_s.append([])

    def decode(self) -> None:
        """``new_tokens - 1`` greedy steps from the prefilled cache (cropped back to the
        prompt first, so repeated calls do the same work)."""
        import torch

        if self._cache is None or self._first is None:
            raise RuntimeError("decode before prefill: call start_decode() first")
        grown = self._cache.get_seq_length() - self.prompt_tokens
        if grown > 0:
            self._cache.crop(-grown)
        if not self.step_times_s:
            self.step_times_s.append([])
        times = self.step_times_s[-1]
        tok = self._first
        perf = time.perf_counter
        with torch.inference_mode():
            for _ in range(self.new_tokens - 1):
                t0 = perf()
                out = self.model(input_ids=tok, past_key_values=self._cache, use_cache=True)
                tok = out.logits[:, -1].argmax(-1, keepdim=True)
                self._sync()
                times.append(perf() - t0)

    def params(self) -> dict[str, object]:
        return dict(self.facts)


@dataclass
class LlamaCppGenerator:
    """Prefill / decode of a GGUF model through llama-cpp-python (one sequence)."""

    llm: Any
    prompt: list[int]
    new_tokens: int
    facts: dict[str, object] = field(default_factory=dict)
    step_times_s: list[list[float]] = field(default_factory=list)
    _first: int | None = None

    def prefill(self) -> None:
        self.llm.reset()
        self.llm.eval(self.prompt)
        self._first = int(self.llm.scores[self.llm.n_tokens - 1].argmax())

    def start_decode(self) -> None:
        self.prefill()
        self.step_times_s.append([])

    def decode(self) -> None:
        if self._first is None:
            raise RuntimeError("decode before prefill: call start_decode() first")
        self.llm.n_tokens = len(self.prompt)  # eval() drops the cache beyond n_tokens
        if not self.step_times_s:
            self.step_times_s.append([])
        times = self.step_times_s[-1]
        tok = self._first
        perf = time.perf_counter
        for _ in range(self.new_tokens - 1):
            t0 = perf()
            self.llm.eval([tok])
            tok = int(self.llm.scores[self.llm.n_tokens - 1].argmax())
            times.append(perf() - t0)

    def params(self) -> dict[str, object]:
        return dict(self.facts)


def make_prompts(batch_size: int, prompt_tokens: int, vocab: int, *, seed: int = SEED) -> Any:
    """(batch, prompt_tokens) int64 ids, uniform in [:data:`FIRST_TOKEN_ID`, vocab)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(FIRST_TOKEN_ID, vocab, (batch_size, prompt_tokens), generator=gen)


def _load_llama_cpp(
    shape: LlmShape, weights: LlmWeights, device: str, prompt_tokens: int, new_tokens: int
) -> LlamaCppGenerator:
    from llama_cpp import Llama  # type: ignore[import-not-found, unused-ignore]

    assert weights.path is not None
    llm = Llama(
        model_path=str(weights.path),
        n_ctx=prompt_tokens + new_tokens,
        n_batch=max(prompt_tokens, 8),
        n_gpu_layers=-1 if device.startswith("cuda") else 0,
        seed=SEED,
        verbose=False,
    )
    vocab = int(llm.n_vocab())
    prompt = make_prompts(1, prompt_tokens, vocab)[0].tolist()
    facts: dict[str, object] = {"runtime": "llama.cpp", "gguf_bytes": weights.path.stat().st_size}
    return LlamaCppGenerator(llm, prompt, new_tokens, facts)


def load_generator(
    workload: str,
    *,
    precision: str,
    device: str,
    batch_size: int,
    prompt_tokens: int,
    new_tokens: int,
    weights: LlmWeights,
) -> Generator:
    """The model of ``workload`` ready to measure, after one prefill and one decode call
    (first calls belong to loading, as for the other suites).

    Raises :class:`CombinationUnsupported` for a combination that cannot run here.
    """
    if new_tokens < 2:
        raise WorkloadError(
            f"new_tokens must be >= 2 (one from prefill, one decoded), got {new_tokens}"
        )
    reason = llm_skip_reason(precision, device, batch_size, weights)
    if reason is not None:
        raise CombinationUnsupported(reason)
    shape = resolve_shape(workload, weights)
    gen: Generator
    if precision == "int4":
        gen = _load_llama_cpp(shape, weights, device, prompt_tokens, new_tokens)
    else:
        gen = _load_torch(shape, weights, precision, device, batch_size, prompt_tokens, new_tokens)
    gen.start_decode()
    gen.decode()
    gen.step_times_s.clear()
    return gen


def _load_torch(
    shape: LlmShape,
    weights: LlmWeights,
    precision: str,
    device: str,
    batch_size: int,
    prompt_tokens: int,
    new_tokens: int,
) -> TorchGenerator:
    model: Any
    if weights.kind == "safetensors":
        import transformers

        assert weights.path is not None
        auto: Any = transformers.AutoModelForCausalLM
        try:
            # loaded on the CPU, then moved: a device_map would need accelerate
            model = auto.from_pretrained(
                weights.path, local_files_only=True, dtype=_torch_dtype(precision)
            ).to(device)
        except (OSError, ValueError) as e:
            raise LocalFileError(f"{weights.path}: cannot load the local model ({e})") from e
    else:
        model = build_causal_lm(shape, precision=precision, device=device)
    model.eval()
    model.requires_grad_(False)
    facts: dict[str, object] = {
        "runtime": "torch",
        "model_params": sum(p.numel() for p in model.parameters()),
        "attn_implementation": str(getattr(model.config, "_attn_implementation", None)),
    }
    if precision == "int8":
        from .modes import apply_precision

        model, precision_facts = apply_precision(model, "int8")
        facts.update(precision_facts)
    ids = make_prompts(batch_size, prompt_tokens, shape.vocab).to(device)
    return TorchGenerator(model, device, batch_size, prompt_tokens, new_tokens, ids, facts)
