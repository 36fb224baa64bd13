"""Training steps as callables for ``edge_bench.run(step, items_per_call=batch_size)``, with
the training study's per-minibatch breakdown.

Each call is one minibatch: FETCH (waiting for the loader: JPEG decode and augmentation in
DataLoader workers, or slicing token batches) then COMPUTE (copy to the device, forward,
loss, backward, optimizer step; CUDA synchronised before the clock stops) and END-TO-END
(fetch + compute). The first minibatch of the whole run is discarded (kernel selection and
allocator warm-up), and epoch 0 is reported apart from epochs 1+ (cold caches, worker
start). Every minibatch the step ran counts, warm-up calls included: they are real training.

Workloads: ``resnet18_train`` and ``mobilenet_v3_small_train`` read an ImageFolder (the
user's ``--edge-data`` directory, else cached synthetic JPEGs) through
RandomResizedCrop(224) + horizontal flip + ToTensor + Normalize; ``lstm_lm_train`` is a
2-layer LSTM language model (8.6 M parameters, WikiText-2 vocabulary, tied embedding) on
random token batches of 35 tokens.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LocalFileError, WorkloadError
from .local_files import load_local_weights
from .modes import require_supported

if TYPE_CHECKING:
    import torch

IMAGE_MEAN = (0.485, 0.456, 0.406)
IMAGE_STD = (0.229, 0.224, 0.225)
CROP_PX = 224
VISION_CLASSES = 1000
MAX_LOADER_WORKERS = 4
"""The training study's DataLoader used 4 workers; fewer on a machine with fewer cores."""

LSTM_VOCAB = 33278
"""WikiText-2's vocabulary size."""
LSTM_EMBED = 232
LSTM_HIDDEN = 232
LSTM_LAYERS = 2
LSTM_SEQ_TOKENS = 35
LSTM_MINIBATCHES_PER_EPOCH = 8
LSTM_CLIP_NORM = 0.25
LSTM_DROPOUT = 0.2
LSTM_SGD = {"lr": 1.0}
VISION_SGD = {"lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4}

TRAINING_WORKLOADS = ("resnet18_train", "mobilenet_v3_small_train", "lstm_lm_train")


# ---- timing --------------------------------------------------------------------------


@dataclass(frozen=True)
class MinibatchTiming:
    """Wall times of one training minibatch, s."""

    epoch: int
    index: int
    """Position in its epoch, from 0."""
    fetch_s: float
    compute_s: float
    e2e_s: float


def _phase_summary(records: list[MinibatchTiming]) -> dict[str, float | int] | None:
    if not records:
        return None
    n = len(records)
    fetch = math.fsum(r.fetch_s for r in records)
    compute = math.fsum(r.compute_s for r in records)
    e2e = math.fsum(r.e2e_s for r in records)
    return {
        "minibatches": n,
        "fetch_s_mean": fetch / n,
        "compute_s_mean": compute / n,
        "e2e_s_mean": e2e / n,
        "fetch_s_total": fetch,
        "compute_s_total": compute,
        "e2e_s_total": e2e,
        "fetch_stall_fraction": fetch / e2e if e2e > 0 else 0.0,
    }


def summarize_timings(records: list[MinibatchTiming]) -> dict[str, Any]:
    """Per-phase means and totals: the first minibatch dropped, epoch 0 apart from 1+."""
    kept = records[1:]
    return {
        "first_minibatch_discarded": bool(records),
        "minibatches_run": len(records),
        "epochs_started": (records[-1].epoch + 1) if records else 0,
        "epoch_0": _phase_summary([r for r in kept if r.epoch == 0]),
        "epochs_1_plus": _phase_summary([r for r in kept if r.epoch >= 1]),
    }


# ---- the step ------------------------------------------------------------------------


@dataclass
class TrainingStep:
    """One call = one training minibatch; :attr:`records` holds every minibatch's times."""

    workload: str
    batch_size: int
    device: str
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    loss_fn: Callable[[Any, Any], torch.Tensor]
    batches: Iterable[tuple[Any, Any]]
    """Re-iterable: one iteration is one epoch."""
    minibatches_per_epoch: int
    clip_grad_norm: float | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    records: list[MinibatchTiming] = field(default_factory=list)
    epoch: int = 0
    _iter: Iterator[tuple[Any, Any]] | None = field(default=None, repr=False)
    _index: int = 0
    _loss_first: torch.Tensor | None = field(default=None, repr=False)
    _loss_last: torch.Tensor | None = field(default=None, repr=False)
    _sync: Callable[[], None] | None = field(default=None, repr=False)

    def __call__(self) -> None:
        t0 = time.perf_counter()
        batch = self._next_batch()
        t1 = time.perf_counter()
        self._train_on(batch)
        if self._sync is not None:
            self._sync()
        t2 = time.perf_counter()
        self.records.append(MinibatchTiming(self.epoch, self._index, t1 - t0, t2 - t1, t2 - t0))
        self._index += 1

    def _next_batch(self) -> tuple[Any, Any]:
        if self._iter is None:
            self._iter = iter(self.batches)
        try:
            return next(self._iter)
        except StopIteration:
            # epoch boundary: the new iterator's start-up (worker processes) is a real stall
            self.epoch += 1
            self._index = 0
            self._iter = iter(self.batches)
            return next(self._iter)

    def _train_on(self, batch: tuple[Any, Any]) -> None:
        import torch

        inputs, targets = batch
        inputs = inputs.to(self.device, non_blocking=True)
        targets = targets.to(self.device, non_blocking=True)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(inputs), targets)
        loss.backward()  # type: ignore[no-untyped-call]
        if self.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
        self.optimizer.step()
        # kept as tensors: reading them (.item()) here would synchronise every step
        self._loss_last = loss.detach()
        if self._loss_first is None:
            self._loss_first = self._loss_last

    def timing(self) -> dict[str, Any]:
        """The per-minibatch breakdown (see :func:`summarize_timings`) and loss first/last."""
        out = summarize_timings(self.records)
        out["minibatches_per_epoch"] = self.minibatches_per_epoch
        out["loss_first"] = float(self._loss_first) if self._loss_first is not None else None
        out["loss_last"] = float(self._loss_last) if self._loss_last is not None else None
        return out

    def params(self) -> dict[str, object]:
        """What the result's ``params`` should say about this workload."""
        return {
            "workload": self.workload,
            "batch_size": self.batch_size,
            "graph_mode": "eager",
            "precision": "fp32",
            "device": self.device,
            **self.facts,
        }

    def close(self) -> None:
        """Stop DataLoader workers now rather than at garbage collection."""
        self._iter = None


# ---- data ----------------------------------------------------------------------------


def default_num_workers() -> int:
    """DataLoader workers: 4 as in the training study, at most the machine's cores."""
    return max(1, min(MAX_LOADER_WORKERS, os.cpu_count() or 1))


def image_folder_loader(
    root: Path,
    batch_size: int,
    *,
    num_workers: int | None = None,
    pin_memory: bool = False,
    seed: int = 0,
    persistent_workers: bool = False,
) -> Any:
    """A shuffling DataLoader over ImageFolder ``root`` with the ImageNet training
    augmentation; full batches only (``drop_last``) so every call trains ``batch_size``.
    ``persistent_workers``: keep the workers from epoch to epoch (no start-up stall)."""
    import torch
    from torchvision import datasets, transforms  # type: ignore[import-untyped, import-not-found, unused-ignore]

    transform = transforms.Compose(
        [
            transforms.RandomResizedCrop(CROP_PX),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(IMAGE_MEAN, IMAGE_STD),
        ]
    )
    try:
        dataset = datasets.ImageFolder(str(root), transform=transform)
    except (FileNotFoundError, OSError) as e:
        raise LocalFileError(f"image folder {root}: not usable as an ImageFolder ({e})") from e
    if len(dataset) < batch_size:
        raise LocalFileError(
            f"image folder {root}: {len(dataset)} images, fewer than one batch of {batch_size}"
        )
    workers = default_num_workers() if num_workers is None else num_workers
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=workers,
        pin_memory=pin_memory,
        generator=torch.Generator().manual_seed(seed),
        persistent_workers=persistent_workers and workers > 0,
    )


@dataclass
class TokenBatches:
    """Random token minibatches for a language model: ``(tokens, next tokens)`` slices of
    a fixed random corpus, ``minibatches`` per epoch. Re-iterable."""

    corpus: torch.Tensor
    """(batch, minibatches * seq + 1) token ids."""
    seq_tokens: int
    minibatches: int

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for i in range(self.minibatches):
            start = i * self.seq_tokens
            chunk = self.corpus[:, start : start + self.seq_tokens + 1]
            yield chunk[:, :-1], chunk[:, 1:]

    def __len__(self) -> int:
        return self.minibatches


def make_token_batches(
    batch_size: int,
    *,
    vocab: int = LSTM_VOCAB,
    seq_tokens: int = LSTM_SEQ_TOKENS,
    minibatches: int = LSTM_MINIBATCHES_PER_EPOCH,
    seed: int = 0,
) -> TokenBatches:
    """A deterministic random corpus cut into minibatches of (batch, seq_tokens)."""
    if batch_size < 1 or seq_tokens < 1 or minibatches < 1:
        raise WorkloadError(
            f"token batches: batch_size, seq_tokens and minibatches must be >= 1, got "
            f"{batch_size}, {seq_tokens}, {minibatches}"
        )
    import torch

    gen = torch.Generator().manual_seed(seed)
    corpus = torch.randint(0, vocab, (batch_size, minibatches * seq_tokens + 1), generator=gen)
    return TokenBatches(corpus, seq_tokens, minibatches)


@dataclass(frozen=True)
class TrainingData:
    """An ImageFolder a vision training workload reads, and how the result names it."""

    root: Path
    description: str


def prepare_training_data(
    workload: str,
    batch_size: int,
    *,
    data_dir: Path | None = None,
    cache_root: Path | None = None,
) -> TrainingData | None:
    """The image data of ``workload``: the user's ImageFolder ``data_dir``, else synthetic
    JPEGs cached under ``cache_root`` (64, or two batches' worth when more), written on first
    use. None for workloads without image data. Call it before the load window: writing the
    cache is data preparation, not model loading."""
    if workload == "lstm_lm_train":
        return None
    if data_dir is not None:
        return TrainingData(data_dir, f"local ImageFolder {data_dir}")
    from .jpeg_cache import ensure_synthetic_jpegs

    count = synthetic_jpeg_count(batch_size)
    root = ensure_synthetic_jpegs(cache_root, count=count)
    return TrainingData(root, synthetic_description(count))


def synthetic_jpeg_count(batch_size: int) -> int:
    """How many synthetic JPEGs a vision training workload reads: 64, or two batches."""
    return max(64, 2 * batch_size)


def synthetic_description(count: int) -> str:
    """How the result's ``data`` param names ``count`` synthetic JPEGs."""
    from .jpeg_cache import SYNTHETIC_SIZE_PX as px

    return f"{count} synthetic {px}x{px} JPEGs"


# ---- models --------------------------------------------------------------------------


def build_lstm_lm(
    vocab: int = LSTM_VOCAB,
    embed: int = LSTM_EMBED,
    hidden: int = LSTM_HIDDEN,
    layers: int = LSTM_LAYERS,
    dropout: float = LSTM_DROPOUT,
) -> torch.nn.Module:
    """The word-level LSTM language model (PyTorch's word_language_model shape) with the
    decoder tied to the embedding: ``tokens (B, T) -> logits (B, T, vocab)``."""
    import torch

    class LSTMLanguageModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = torch.nn.Dropout(dropout)
            self.encoder = torch.nn.Embedding(vocab, embed)
            self.rnn = torch.nn.LSTM(embed, hidden, layers, dropout=dropout, batch_first=True)
            self.decoder = torch.nn.Linear(hidden, vocab)
            if embed == hidden:
                self.decoder.weight = self.encoder.weight

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            out, _ = self.rnn(self.drop(self.encoder(tokens)))
            logits: torch.Tensor = self.decoder(self.drop(out))
            return logits

    return LSTMLanguageModel()


def training_facts(
    workload: str, data_description: str | None = None, loader_workers: int | None = None
) -> dict[str, Any]:
    """What a training workload's params say of its input, data and optimizer."""
    if workload == "lstm_lm_train":
        return {
            "input": f"{LSTM_SEQ_TOKENS} random tokens (vocabulary {LSTM_VOCAB})",
            "data": "random tokens",
            "optimizer": "SGD lr=1.0, grad clip 0.25",  # as reports have always said
        }
    return {
        "input": "3x224x224 RandomResizedCrop + flip of a decoded JPEG",
        "data": data_description,
        "loader_workers": loader_workers,
        "optimizer": "SGD lr=0.01 momentum=0.9 wd=1e-4",
    }


def _lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    )


def _cuda_sync(device: str) -> Callable[[], None] | None:
    if not device.startswith("cuda"):
        return None
    import torch

    return torch.cuda.synchronize


def build_trainer(
    workload: str,
    batch_size: int,
    *,
    device: str = "cpu",
    data: TrainingData | None = None,
    cache_root: Path | None = None,
    num_workers: int | None = None,
    weights_dir: Path | None = None,
    seed: int = 0,
    first_step: bool = True,
    persistent_workers: bool = False,
) -> TrainingStep:
    """A :class:`TrainingStep` for ``workload`` (one of :data:`TRAINING_WORKLOADS`).

    Vision workloads read ``data`` (see :func:`prepare_training_data`; prepared here from
    ``cache_root`` when None). With ``first_step`` the first minibatch runs here, so a suite's
    load window holds it, as inference loading holds the first call; it is the minibatch the
    timing breakdown discards. ``persistent_workers``: the loader keeps its workers between
    epochs (the interleaved workload: no epoch-boundary stall longer than a deadline).
    """
    if workload not in TRAINING_WORKLOADS:
        raise WorkloadError(
            f"training workload {workload!r} is not known; "
            f"use one of {', '.join(TRAINING_WORKLOADS)}"
        )
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    require_supported(workload, "eager", "fp32", device)
    import torch

    torch.manual_seed(seed)
    if workload == "lstm_lm_train":
        with torch.device(device):
            model = build_lstm_lm()
        weights = load_local_weights(model, workload, weights_dir, device)
        batches: Iterable[tuple[Any, Any]] = make_token_batches(batch_size, seed=seed)
        optimizer: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=LSTM_SGD["lr"])
        facts: dict[str, Any] = training_facts(workload)
        loss_fn: Callable[[Any, Any], torch.Tensor] = _lm_loss
        clip: float | None = LSTM_CLIP_NORM
        per_epoch = LSTM_MINIBATCHES_PER_EPOCH
    else:
        from .vision import build_classifier, build_mobilenet_v3_small

        if data is None:
            data = prepare_training_data(workload, batch_size, cache_root=cache_root)
        if data is None:
            raise WorkloadError(f"{workload}: no image data prepared")
        root = data.root
        workers = default_num_workers() if num_workers is None else num_workers
        loader = image_folder_loader(
            root,
            batch_size,
            num_workers=workers,
            pin_memory=device.startswith("cuda"),
            seed=seed,
            persistent_workers=persistent_workers,
        )
        n_classes = max(VISION_CLASSES, len(loader.dataset.classes))
        with torch.device(device):
            if workload == "resnet18_train":
                model = build_classifier("resnet18", num_classes=n_classes)
            else:
                model = build_mobilenet_v3_small(num_classes=n_classes)
        weights = load_local_weights(model, workload, weights_dir, device)
        batches = loader
        sgd = VISION_SGD
        optimizer = torch.optim.SGD(
            model.parameters(),
            lr=sgd["lr"],
            momentum=sgd["momentum"],
            weight_decay=sgd["weight_decay"],
        )
        facts = training_facts(workload, data.description, workers)
        loss_fn = torch.nn.functional.cross_entropy
        clip = None
        per_epoch = len(loader)
    model.train()
    facts.update(
        {
            "weights": weights,
            "model_params": sum(p.numel() for p in model.parameters()),
            "timing": "per minibatch fetch/compute/e2e in params.training_timing",
        }
    )
    step = TrainingStep(
        workload=workload,
        batch_size=batch_size,
        device=device,
        model=model,
        optimizer=optimizer,
        loss_fn=loss_fn,
        batches=batches,
        minibatches_per_epoch=per_epoch,
        clip_grad_norm=clip,
        facts=facts,
        _sync=_cuda_sync(device),
    )
    if first_step:
        step()
    return step
