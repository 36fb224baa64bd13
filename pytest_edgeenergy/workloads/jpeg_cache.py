"""Synthetic JPEGs for training data loaders: images that really need decoding and
augmentation, written once to a cache directory in ImageFolder layout.

Deterministic: the same ``(count, size, classes, seed)`` gives byte-identical files on every
machine (pixels come from a seeded ``random.Random``, never from PIL's unseeded noise).
The directory appears atomically (written aside, then renamed) with a ``manifest.json``, so a
killed run never leaves a half-written set that a later run would trust.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import uuid
from pathlib import Path

from .errors import WorkloadError

CACHE_ENV = "EDGEENERGY_CACHE"
JPEG_CACHE_VERSION = 1
MANIFEST = "manifest.json"
JPEG_QUALITY = 90
SYNTHETIC_SIZE_PX = 256
SYNTHETIC_CLASSES = 4
_TEXTURE_PX = 12


def default_cache_root() -> Path:
    """``$EDGEENERGY_CACHE``, else ``$XDG_CACHE_HOME/pytest-edgeenergy``, else
    ``~/.cache/pytest-edgeenergy``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pytest-edgeenergy"


def synthetic_jpeg_dir(cache_root: Path, count: int, size_px: int, classes: int, seed: int) -> Path:
    """Where a set with these parameters lives under ``cache_root``."""
    name = f"synthetic-jpeg-v{JPEG_CACHE_VERSION}-{count}x{size_px}px-{classes}cls-seed{seed}"
    return cache_root / name


def _expected_manifest(count: int, size_px: int, classes: int, seed: int) -> dict[str, object]:
    return {
        "version": JPEG_CACHE_VERSION,
        "count": count,
        "size_px": size_px,
        "classes": classes,
        "seed": seed,
        "quality": JPEG_QUALITY,
    }


def _complete(path: Path, expected: dict[str, object]) -> bool:
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and all(manifest.get(k) == v for k, v in expected.items())


def _draw_image(rng: random.Random, size_px: int, label: int, classes: int) -> object:
    from PIL import Image, ImageDraw

    # smooth colour texture: a tiny random image upscaled (JPEG-friendly low frequencies)
    texture = Image.frombytes(
        "RGB",
        (_TEXTURE_PX, _TEXTURE_PX),
        bytes(rng.randrange(256) for _ in range(_TEXTURE_PX**2 * 3)),
    )
    img = texture.resize((size_px, size_px), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(img)
    hue = int(255 * label / max(1, classes))
    for _ in range(rng.randint(3, 8)):
        x0, y0 = rng.randrange(size_px), rng.randrange(size_px)
        x1 = min(size_px - 1, x0 + rng.randint(8, size_px // 2))
        y1 = min(size_px - 1, y0 + rng.randint(8, size_px // 2))
        colour = ((hue + rng.randrange(64)) % 256, rng.randrange(256), rng.randrange(256))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        else:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
    for _ in range(rng.randint(2, 6)):
        pts = [(rng.randrange(size_px), rng.randrange(size_px)) for _ in range(2)]
        draw.line(pts, fill=(rng.randrange(256),) * 3, width=rng.randint(1, 4))
    return img


def ensure_synthetic_jpegs(
    cache_root: Path | None = None,
    *,
    count: int = 64,
    size_px: int = SYNTHETIC_SIZE_PX,
    classes: int = SYNTHETIC_CLASSES,
    seed: int = 0,
) -> Path:
    """The ImageFolder root of ``count`` synthetic JPEGs (``class_K/img_NNNN.jpg``),
    writing them on first use only. Returns the directory."""
    if count < 1 or size_px < 16 or classes < 1 or classes > count:
        raise WorkloadError(
            f"synthetic JPEGs: need count >= 1, size_px >= 16, 1 <= classes <= count; "
            f"got count={count}, size_px={size_px}, classes={classes}"
        )
    root = cache_root if cache_root is not None else default_cache_root()
    final = synthetic_jpeg_dir(root, count, size_px, classes, seed)
    expected = _expected_manifest(count, size_px, classes, seed)
    if _complete(final, expected):
        return final
    root.mkdir(parents=True, exist_ok=True)
    if final.exists():  # an older or broken set: rebuild it
        shutil.rmtree(final, ignore_errors=True)
    tmp = root / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        for k in range(classes):
            (tmp / f"class_{k}").mkdir(parents=True)
        for i in range(count):
            label = i % classes
            rng = random.Random(f"{seed}:{i}")
            img = _draw_image(rng, size_px, label, classes)
            img.save(tmp / f"class_{label}" / f"img_{i:04d}.jpg", "JPEG", quality=JPEG_QUALITY)  # type: ignore[attr-defined]
        (tmp / MANIFEST).write_text(json.dumps(expected, indent=1) + "\n")
        try:
            tmp.rename(final)
        except OSError:
            if not _complete(final, expected):  # not a concurrent writer winning: a real error
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final
