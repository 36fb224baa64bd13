"""Transformer encoders built from their configs (random weights, nothing downloaded):
BERT-Tiny and DistilBERT, fed 512-token inputs (random ids and an attention mask).

The model the suites call is :func:`wrap_encoder`'s module: ``(input_ids, attention_mask) ->
last_hidden_state``, one tensor, so TorchScript can trace it. Local weights are loaded into
the encoder itself (Hugging Face key names) before wrapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import CombinationUnsupported, WorkloadError

if TYPE_CHECKING:
    import torch

ENCODERS = ("bert_tiny", "distilbert")
SEQ_LEN_TOKENS = 512
VOCAB_SIZE = 30522
"""The uncased BERT WordPiece vocabulary size (both configs' default)."""
CLS_ID = 101
SEP_ID = 102
FIRST_WORD_ID = 1000
"""Ids below this are special and unused tokens in the BERT vocabulary."""
ENCODER_CONFIGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "bert_tiny": (
        "BertConfig",
        "BertModel",
        {
            "vocab_size": VOCAB_SIZE,
            "hidden_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 512,
            "max_position_embeddings": SEQ_LEN_TOKENS,
        },
    ),
    "distilbert": (
        "DistilBertConfig",
        "DistilBertModel",
        {"vocab_size": VOCAB_SIZE, "max_position_embeddings": SEQ_LEN_TOKENS},
    ),
}
"""Each encoder as transformers builds it: config class, model class, config arguments
(also what a workload worker builds)."""


def token_spec() -> dict[str, int]:
    """How :func:`make_tokens` makes a batch, for a workload worker making the same."""
    return {
        "seq_len": SEQ_LEN_TOKENS,
        "vocab_size": VOCAB_SIZE,
        "cls_id": CLS_ID,
        "sep_id": SEP_ID,
        "first_word_id": FIRST_WORD_ID,
    }


def transformers_available() -> tuple[bool, str]:
    """``(True, "")`` when transformers imports, else ``(False, reason)``."""
    try:
        import transformers  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError as e:
        return False, f"transformers is not installed or does not import ({e})"
    return True, ""


def build_encoder(name: str) -> torch.nn.Module:
    """The bare encoder of ``name`` from its config, random weights."""
    if name not in ENCODERS:
        raise WorkloadError(f"encoder {name!r} is not known; use one of {', '.join(ENCODERS)}")
    ok, reason = transformers_available()
    if not ok:
        raise CombinationUnsupported(reason)
    import transformers  # type: ignore[import-untyped, import-not-found, unused-ignore]

    config_class, model_class, kwargs = ENCODER_CONFIGS[name]
    config = getattr(transformers, config_class)(**kwargs)
    model: torch.nn.Module = getattr(transformers, model_class)(config)
    return model


def encoder_facts(model: torch.nn.Module) -> dict[str, object]:
    """Shape facts of an encoder for the result's params and memory estimates."""
    config = getattr(model, "config", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "dim", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layers", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_heads", None)
    attn = getattr(config, "_attn_implementation", None)
    return {"hidden_size": hidden, "layers": layers, "heads": heads, "attn_implementation": attn}


def wrap_encoder(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` as ``(input_ids, attention_mask) -> last_hidden_state`` (one tensor)."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
            hidden: torch.Tensor = out[0]
            return hidden

    return LastHiddenState(model)


def make_tokens(
    batch_size: int,
    *,
    seq_len: int = SEQ_LEN_TOKENS,
    vocab_size: int = VOCAB_SIZE,
    device: str = "cpu",
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, each (batch, seq_len): ``[CLS] words... [SEP]`` with
    random word ids and a mask of ones (every sequence is a full 512 tokens)."""
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    if seq_len < 2:
        raise WorkloadError(f"seq_len must be >= 2 (room for [CLS] and [SEP]), got {seq_len}")
    if vocab_size <= FIRST_WORD_ID:
        raise WorkloadError(f"vocab_size must be > {FIRST_WORD_ID}, got {vocab_size}")
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(FIRST_WORD_ID, vocab_size, (batch_size, seq_len), generator=gen)
    ids[:, 0] = CLS_ID
    ids[:, -1] = SEP_ID
    mask = torch.ones(batch_size, seq_len, dtype=torch.long)
    return ids.to(device), mask.to(device)
