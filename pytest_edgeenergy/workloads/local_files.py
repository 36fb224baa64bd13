"""User-supplied local files: weights (``--edge-weights DIR`` / ``EDGEENERGY_WEIGHTS``) and
training data (``--edge-data DIR`` / ``EDGEENERGY_DATA``). Nothing is ever downloaded.

Weights: ``<DIR>/<workload>.pt`` holding a ``state_dict`` (or ``{"state_dict": ...}``) of the
architecture the builder makes; when the file is absent the model keeps random weights and
the result's params say ``weights: random``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LocalFileError

if TYPE_CHECKING:
    import torch

WEIGHTS_ENV = "EDGEENERGY_WEIGHTS"
DATA_ENV = "EDGEENERGY_DATA"
RANDOM_WEIGHTS = "random"


def resolve_dir(cli_value: str | os.PathLike[str] | None, env: str, flag: str) -> Path | None:
    """The directory given on the command line, else in environment variable ``env``;
    None when neither is set. A path that is not a directory is an error naming its source."""
    if cli_value is not None and str(cli_value) != "":
        raw, origin = str(cli_value), f"{flag} (command line)"
    else:
        value = os.environ.get(env)
        if not value:
            return None
        raw, origin = value, f"{env} (environment)"
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise LocalFileError(f"{origin}: {raw!r} is not a directory")
    return path


def weights_file(weights_dir: Path | None, workload: str) -> Path | None:
    """``<weights_dir>/<workload>.pt`` when it exists, else None."""
    if weights_dir is None:
        return None
    path = weights_dir / f"{workload}.pt"
    return path if path.is_file() else None


def load_state_dict_file(model: torch.nn.Module, path: Path, device: str = "cpu") -> None:
    """Load a state_dict file into ``model`` strictly (every key, every shape).

    ``weights_only=True``: a weights file is data, never code to run.
    """
    import torch

    try:
        obj: Any = torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # torch raises many types for corrupt or foreign files
        raise LocalFileError(f"weights file {path}: cannot be read as a state_dict ({e})") from e
    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise LocalFileError(
            f"weights file {path}: holds a {type(obj).__name__}, not a state_dict "
            "(a dict of parameter name -> tensor; save it with torch.save(model.state_dict()))"
        )
    try:
        model.load_state_dict(obj, strict=True)
    except RuntimeError as e:
        first = str(e).strip().splitlines()
        detail = " ".join(line.strip() for line in first[:4])
        raise LocalFileError(
            f"weights file {path}: does not match the {type(model).__name__} architecture "
            f"built here: {detail}"
        ) from e


def load_local_weights(
    model: torch.nn.Module, workload: str, weights_dir: Path | None, device: str = "cpu"
) -> str:
    """Load ``<weights_dir>/<workload>.pt`` into ``model`` when present.

    Returns what the result's ``weights`` param should say: the file's path, or ``random``.
    """
    path = weights_file(weights_dir, workload)
    if path is None:
        return RANDOM_WEIGHTS
    load_state_dict_file(model, path, device)
    return str(path)
