"""A real object detector from its torchvision architecture definition: SSDLite320 with a
MobileNet-V3-Large backbone, random weights, nothing downloaded.

In eval mode its ``forward`` resizes and normalises the images, runs backbone and head, then
decodes boxes and applies score threshold, top-k and batched NMS per class. All of that is
INSIDE the measured window: on a board the postprocess is part of the cost of a detection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import WorkloadError

if TYPE_CHECKING:
    import torch

DETECTORS = ("ssdlite320",)
DETECTION_SIZE_PX = 320
NUM_CLASSES = 91
"""COCO's 91 category ids (torchvision's detection convention, background included)."""
NMS_IOU_THRESHOLD = 0.55
DETECTIONS_PER_IMAGE = 300
TORCHVISION_BUILDERS = {"ssdlite320": "ssdlite320_mobilenet_v3_large"}
"""Each detector's builder in ``torchvision.models.detection``."""
DETECTOR_KWARGS: dict[str, float | int] = {
    "num_classes": NUM_CLASSES,
    "nms_thresh": NMS_IOU_THRESHOLD,
    "detections_per_img": DETECTIONS_PER_IMAGE,
}
"""The builder's arguments besides the (absent) weights (also what a workload worker uses)."""


def build_detector(name: str = "ssdlite320") -> torch.nn.Module:
    """``ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)``."""
    if name not in DETECTORS:
        raise WorkloadError(f"detector {name!r} is not known; use one of {', '.join(DETECTORS)}")
    from torchvision.models import detection  # type: ignore[import-untyped, import-not-found, unused-ignore]

    builder = getattr(detection, TORCHVISION_BUILDERS[name])
    model: torch.nn.Module = builder(weights=None, weights_backbone=None, **DETECTOR_KWARGS)
    return model


def make_detection_images(
    batch_size: int,
    *,
    size_px: int = DETECTION_SIZE_PX,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> list[torch.Tensor]:
    """A list of ``batch_size`` images, each (3, size, size) in [0, 1] (what the model takes)."""
    if batch_size < 1:
        raise WorkloadError(f"batch_size must be >= 1, got {batch_size}")
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    batch = torch.rand(batch_size, 3, size_px, size_px, generator=gen)
    batch = batch.to(device=device, dtype=dtype or torch.float32)
    return list(batch.unbind(0))


def detections_of(output: Any) -> list[dict[str, torch.Tensor]]:
    """The per-image detections of a call: eager returns them, TorchScript returns
    ``(losses, detections)``."""
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[1], list):
        output = output[1]
    if not isinstance(output, list):
        raise WorkloadError(f"detector output is {type(output).__name__}, not a list of dicts")
    return output
