"""Image classifiers from their torchvision architecture (random weights, nothing downloaded)
and their inputs: batches of 3x224x224 images."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import WorkloadError

if TYPE_CHECKING:
    import torch

CLASSIFIERS = ("alexnet", "resnet18", "mobilenet_v2")
IMAGE_SIZE_PX = 224
NUM_CLASSES = 1000


def build_classifier(name: str, num_classes: int = NUM_CLASSES) -> torch.nn.Module:
    """``torchvision.models.<name>(weights=None)``: the architecture with random weights."""
    if name not in CLASSIFIERS:
        raise WorkloadError(
            f"classifier {name!r} is not known; use one of {', '.join(CLASSIFIERS)}"
        )
    import torchvision  # type: ignore[import-untyped, import-not-found, unused-ignore]

    builder = getattr(torchvision.models, name)
    model: torch.nn.Module = builder(weights=None, num_classes=num_classes)
    return model


def build_mobilenet_v3_small(num_classes: int = NUM_CLASSES) -> torch.nn.Module:
    """``torchvision.models.mobilenet_v3_small(weights=None)`` (the training study's MobileNet)."""
    import torchvision  # type: ignore[import-untyped, import-not-found, unused-ignore]

    model: torch.nn.Module = torchvision.models.mobilenet_v3_small(
        weights=None, num_classes=num_classes
    )
    return model


def make_images(
    batch_size: int,
    *,
    size_px: int = IMAGE_SIZE_PX,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> torch.Tensor:
    """A deterministic batch of normalised-looking images, shape (batch, 3, size, size)."""
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    if size_px < 1:
        raise WorkloadError(f"size_px must be >= 1, got {size_px}")
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    # generated on the CPU for the same values on every device, then created once on the target
    x = torch.randn(batch_size, 3, size_px, size_px, generator=gen)
    return x.to(device=device, dtype=dtype or torch.float32)
