"""Shapes of causal language models (``llm_shapes.json``) and what follows from a shape alone:
parameter count and the memory pre-flight estimate. Plain Python: nothing is built or loaded.

Memory a generation run adds (bytes), at the precision's bytes per value:

* weights: parameters x bytes per parameter (fp32 4, fp16/bf16 2; int8 is built in fp32 and
  quantised, so its peak holds the fp32 weights AND the int8 copy of the Linear weights;
  int4 through llama.cpp: the GGUF file's size, else 4.5 bits per parameter as Q4_0);
* KV cache: 2 (keys and values) x layers x KV heads x head size x (prompt + new tokens)
  x batch x bytes (fp32 on CPU, fp16 on CUDA and in llama.cpp), plus one layer's copy (the
  cache grows by concatenation);
* activations of the prefill (its peak): batch x prompt x (4 x hidden + 3 x intermediate)
  (residual, normed, attention output, queries; MLP gate, up and product) + the attention
  scores batch x heads x prompt x prompt, at the compute precision; + the last position's
  logits batch x vocab x 4 B, twice (fp32 logits and the argmax input);
* the CUDA context (:data:`~pytest_edgeenergy.bench.memory.CUDA_CONTEXT_BYTES`) on cuda.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .errors import LocalFileError, WorkloadError

SHAPES_FILE = "llm_shapes.json"
FAMILIES = ("llama", "mistral", "qwen2", "phi")
"""transformers ``model_type`` values the builder supports."""
GATED_MLP_FAMILIES = ("llama", "mistral", "qwen2")
"""gate, up and down projections and RMSNorm; ``phi``: fc1, fc2 with biases and LayerNorm."""
Q4_BITS_PER_PARAM = 4.5
"""GGUF Q4_0: 32 weights in 16 bytes plus an fp16 scale, when no GGUF file gives the size."""
LOGIT_BYTES = 4


@dataclass(frozen=True)
class LlmShape:
    """The numbers of a decoder-only transformer that decide its size and its KV cache."""

    name: str
    title: str
    family: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    tied_embeddings: bool
    max_positions: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    published_params: int | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def config_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the transformers config of this shape (``model_type`` =
        :attr:`family`); Mistral's sliding window is off: it is longer than any context
        these benchmarks use, so the result is the same and the cache stays croppable."""
        kw: dict[str, Any] = {
            "vocab_size": self.vocab,
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "max_position_embeddings": self.max_positions,
            "rope_theta": self.rope_theta,
            "tie_word_embeddings": self.tied_embeddings,
        }
        if self.family == "phi":
            kw["layer_norm_eps"] = self.norm_eps
            kw["partial_rotary_factor"] = 0.4
        else:
            kw["rms_norm_eps"] = self.norm_eps
        if self.family == "mistral":
            kw["sliding_window"] = None
        return kw


def _shape(name: str, raw: Mapping[str, Any]) -> LlmShape:
    family = str(raw["family"])
    if family not in FAMILIES:
        raise WorkloadError(f"{name}: family {family!r} is not supported; use one of {FAMILIES}")
    shape = LlmShape(
        name=name,
        title=str(raw.get("title", name)),
        family=family,
        layers=int(raw["layers"]),
        hidden=int(raw["hidden"]),
        intermediate=int(raw["intermediate"]),
        heads=int(raw["heads"]),
        kv_heads=int(raw["kv_heads"]),
        vocab=int(raw["vocab"]),
        tied_embeddings=bool(raw["tied_embeddings"]),
        max_positions=int(raw["max_positions"]),
        rope_theta=float(raw.get("rope_theta", 10000.0)),
        norm_eps=float(raw.get("norm_eps", 1e-5)),
        published_params=int(raw["params"]) if raw.get("params") is not None else None,
    )
    if shape.hidden % shape.heads or shape.heads % shape.kv_heads:
        raise WorkloadError(
            f"{name}: hidden ({shape.hidden}) must divide by heads ({shape.heads}) and heads "
            f"by KV heads ({shape.kv_heads})"
        )
    return shape


@functools.cache
def llm_shapes() -> dict[str, LlmShape]:
    """Every shipped shape by workload name, in file order."""
    text = resources.files(__package__).joinpath(SHAPES_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return {k: _shape(k, v) for k, v in data.items() if not k.startswith("_")}


def llm_shape(name: str) -> LlmShape:
    """The shipped shape of workload ``name``; :class:`WorkloadError` names the known ones."""
    shapes = llm_shapes()
    if name not in shapes:
        raise WorkloadError(f"llm {name!r} is not known; use one of {', '.join(shapes)}")
    return shapes[name]


def shape_from_hf_config(name: str, config: Mapping[str, Any], *, source: str) -> LlmShape:
    """The shape a local model directory's ``config.json`` describes (for the pre-flight of
    ``--edge-weights``); :class:`LocalFileError` names ``source`` and the missing field."""
    try:
        family = str(config["model_type"])
        raw = {
            "family": family,
            "layers": config["num_hidden_layers"],
            "hidden": config["hidden_size"],
            "intermediate": config["intermediate_size"],
            "heads": config["num_attention_heads"],
            "kv_heads": config.get("num_key_value_heads") or config["num_attention_heads"],
            "vocab": config["vocab_size"],
            "tied_embeddings": config.get("tie_word_embeddings", family == "qwen2"),
            "max_positions": config.get("max_position_embeddings", 2048),
            "rope_theta": config.get("rope_theta", 10000.0),
            "norm_eps": config.get("rms_norm_eps", config.get("layer_norm_eps", 1e-5)),
        }
    except KeyError as e:
        raise LocalFileError(f"{source}: config.json has no {e.args[0]!r} field") from None
    try:
        return _shape(name, raw)
    except (WorkloadError, TypeError, ValueError) as e:
        raise LocalFileError(f"{source}: {e}") from None


def _layer_params(s: LlmShape) -> tuple[int, int]:
    """Parameters of one decoder layer: (all, those in Linear weights)."""
    q_out = s.heads * s.head_dim
    kv_out = s.kv_heads * s.head_dim
    attn_linear = s.hidden * q_out + 2 * s.hidden * kv_out + q_out * s.hidden
    if s.family == "phi":
        attn_bias = q_out + 2 * kv_out + s.hidden
        mlp_linear = 2 * s.hidden * s.intermediate
        mlp_bias = s.intermediate + s.hidden
        norms = 2 * s.hidden  # one LayerNorm (weight, bias): attention and MLP in parallel
        linear = attn_linear + mlp_linear
        return linear + attn_bias + mlp_bias + norms, linear
    attn_bias = q_out + 2 * kv_out if s.family == "qwen2" else 0
    mlp_linear = 3 * s.hidden * s.intermediate
    linear = attn_linear + mlp_linear
    return linear + attn_bias + 2 * s.hidden, linear


def param_count(s: LlmShape) -> int:
    """Parameters of the model of shape ``s`` (embedding, layers, final norm, LM head)."""
    per_layer, _ = _layer_params(s)
    embed = s.vocab * s.hidden
    final_norm = 2 * s.hidden if s.family == "phi" else s.hidden
    head = 0 if s.tied_embeddings else s.vocab * s.hidden
    head_bias = s.vocab if s.family == "phi" else 0
    return embed + s.layers * per_layer + final_norm + head + head_bias


def linear_param_count(s: LlmShape) -> int:
    """Parameters in Linear weights (what dynamic int8 quantisation converts), LM head
    included (a tied head shares the embedding's weight but is quantised as a Linear)."""
    _, per_layer = _layer_params(s)
    return s.layers * per_layer + s.vocab * s.hidden


WEIGHT_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 4.0, "int4": Q4_BITS_PER_PARAM / 8}
"""Bytes per parameter of the weights as built (int8: the fp32 build, quantised after)."""
COMPUTE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 4, "int4": 4}
"""Bytes per activation value (int8 dynamic quantisation keeps fp32 activations)."""
KV_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 4, "int4": 2}
"""Bytes per KV-cache value (llama.cpp keeps an f16 cache)."""
LLM_PRECISIONS = tuple(WEIGHT_BYTES)


@dataclass(frozen=True)
class LlmMemoryEstimate:
    """The pre-flight estimate of one generation run, by part (bytes)."""

    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    cuda_context_bytes: int

    @property
    def total_bytes(self) -> int:
        return (
            self.weights_bytes
            + self.kv_cache_bytes
            + self.activation_bytes
            + self.cuda_context_bytes
        )

    def describe(self) -> str:
        """``weights 13.49 GiB + KV cache 32 MiB + ...`` for the pre-flight's message."""
        from ..bench.memory import format_gib

        parts = [
            f"weights {format_gib(self.weights_bytes)}",
            f"KV cache {format_gib(self.kv_cache_bytes)}",
            f"activations {format_gib(self.activation_bytes)}",
        ]
        if self.cuda_context_bytes:
            parts.append(f"CUDA context {format_gib(self.cuda_context_bytes)}")
        return " + ".join(parts)

    def to_json(self) -> dict[str, int]:
        return {
            "weights_bytes": self.weights_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "activation_bytes": self.activation_bytes,
            "cuda_context_bytes": self.cuda_context_bytes,
            "total_bytes": self.total_bytes,
        }


def _check_counts(batch_size: int, prompt_tokens: int, new_tokens: int) -> None:
    for what, value, minimum in (
        ("batch_size", batch_size, 1),
        ("prompt_tokens", prompt_tokens, 1),
        ("new_tokens", new_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise WorkloadError(f"{what} must be a whole number >= {minimum}, got {value!r}")


def kv_cache_bytes(
    s: LlmShape, *, batch_size: int, prompt_tokens: int, new_tokens: int, precision: str
) -> int:
    """2 x layers x KV heads x head size x (prompt + new tokens) x batch x bytes."""
    _check_counts(batch_size, prompt_tokens, new_tokens)
    per_value = KV_BYTES[_precision(precision)]
    return (
        2
        * s.layers
        * s.kv_heads
        * s.head_dim
        * (prompt_tokens + new_tokens)
        * batch_size
        * per_value
    )


def _precision(precision: str) -> str:
    if precision not in WEIGHT_BYTES:
        raise WorkloadError(
            f"llm precision {precision!r} is not known; use one of {', '.join(WEIGHT_BYTES)}"
        )
    return precision


def estimate_llm_memory(
    s: LlmShape,
    *,
    batch_size: int,
    prompt_tokens: int,
    new_tokens: int,
    precision: str,
    device: str,
    weights_file_bytes: int | None = None,
) -> LlmMemoryEstimate:
    """The memory a generation run of shape ``s`` adds (see the module docstring).

    ``weights_file_bytes``: the size of a GGUF file (int4), which llama.cpp maps whole.
    """
    from ..bench.memory import CUDA_CONTEXT_BYTES

    _check_counts(batch_size, prompt_tokens, new_tokens)
    precision = _precision(precision)
    params = param_count(s)
    if precision == "int4" and weights_file_bytes is not None:
        weights = int(weights_file_bytes)
    else:
        weights = math.ceil(params * WEIGHT_BYTES[precision])
    if precision == "int8":
        weights += linear_param_count(s)  # the int8 copy made while the fp32 weights exist
    kv = kv_cache_bytes(
        s,
        batch_size=batch_size,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        precision=precision,
    )
    kv += kv // s.layers  # one layer's cache is copied when it grows
    act = COMPUTE_BYTES[precision]
    activations = act * batch_size * prompt_tokens * (4 * s.hidden + 3 * s.intermediate)
    activations += act * batch_size * s.heads * prompt_tokens * prompt_tokens
    activations += 2 * LOGIT_BYTES * batch_size * s.vocab
    cuda = CUDA_CONTEXT_BYTES if device.startswith("cuda") else 0
    return LlmMemoryEstimate(weights, kv, activations, cuda)
