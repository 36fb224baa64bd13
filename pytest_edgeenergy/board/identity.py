"""Who the board is: L4T release, device-tree model and compatible, SoC, module, kernel.

Missing or unreadable files give None fields; nothing here raises on a strange root.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .sysfs import read_text
from .types import Identity

VIRTUAL_BOARD_MARKER = "etc/edgeenergy-virtual-board.json"
"""Written by :mod:`pytest_edgeenergy.sim`: ``{"simulated": true, "model": "<sim model>"}``."""

DEVICE_TREE_DIRS = ("proc/device-tree", "sys/firmware/devicetree/base")

# Exact pairs only (keys normalised to MAJOR.MINOR.PATCH); an L4T release that is not here
# has no JetPack answer rather than a guessed one.
L4T_TO_JETPACK: dict[str, str] = {
    "32.7.1": "4.6.1",
    "32.7.2": "4.6.2",
    "32.7.3": "4.6.3",
    "32.7.4": "4.6.4",
    "32.7.5": "4.6.5",
    "32.7.6": "4.6.6",
    "35.1.0": "5.0.2",
    "35.2.1": "5.1",
    "35.3.1": "5.1.1",
    "35.4.1": "5.1.2",
    "35.5.0": "5.1.3",
    "35.6.0": "5.1.4",
    "36.2.0": "6.0DP",
    "36.3.0": "6.0",
    "36.4.0": "6.1",
    "36.4.3": "6.2",
    "36.4.4": "6.2.1",
    "36.4.7": "6.2.1",
    "36.5.0": "6.2.2",
    "38.2.0": "7.0",
    "38.4.0": "7.1",
    "39.2.0": "7.2",
}

_RELEASE_RE = re.compile(r"^#\s*R(?P<major>\d+)\s*\([^)]*\),\s*REVISION:\s*(?P<rev>\d+(?:\.\d+)*)")
_SOC_RE = re.compile(r"^nvidia,(tegra\d+)$")
_MODULE_RE = re.compile(r"^p\d{4}-\d{4}$")
_BOARDID_RE = re.compile(r"(\d{4}):(\d{4})")


def _normalise_version(version: str) -> str:
    parts = version.split(".")
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts)


def parse_nv_tegra_release(text: str) -> str | None:
    """L4T release from ``/etc/nv_tegra_release`` text, e.g. ``# R36 (release), REVISION:
    4.7, ...`` -> ``36.4.7``; None when no release line is found."""
    for line in text.splitlines():
        match = _RELEASE_RE.match(line.strip())
        if match is not None:
            return _normalise_version(f"{match.group('major')}.{match.group('rev')}")
    return None


def jetpack_for_l4t(l4t: str | None) -> str | None:
    """JetPack release for an L4T release (``36.4.7`` -> ``6.2.1``); None when unknown."""
    if l4t is None or not re.fullmatch(r"\d+(\.\d+){0,2}", l4t.strip()):
        return None
    return L4T_TO_JETPACK.get(_normalise_version(l4t.strip()))


def split_nul_strings(raw: bytes) -> tuple[str, ...]:
    """Split a device-tree string list (NUL-separated, NUL-terminated) into strings."""
    decoded = (part.decode("utf-8", errors="replace").strip() for part in raw.split(b"\0"))
    return tuple(part for part in decoded if part)


def _read_dt(root: Path, name: str) -> bytes | None:
    for base in DEVICE_TREE_DIRS:
        try:
            return (root / base / name).read_bytes()
        except OSError:
            continue
    return None


def soc_from_compatible(compatible: tuple[str, ...]) -> str | None:
    """SoC family (``tegra234``) from device-tree compatible strings."""
    for entry in compatible:
        match = _SOC_RE.match(entry.strip().lower())
        if match is not None:
            return match.group(1)
    return None


def module_from_compatible(compatible: tuple[str, ...]) -> str | None:
    """Module P-number (``p3767-0005``) from compatible strings.

    Entries like ``nvidia,p3768-0000+p3767-0005`` name carrier+module; the module is the
    part after the last ``+``. A plain ``nvidia,pNNNN-NNNN`` entry wins over a combined one.
    """
    combined: str | None = None
    for entry in compatible:
        vendor, _, name = entry.strip().lower().partition(",")
        if vendor != "nvidia":
            continue
        if _MODULE_RE.match(name):
            return name
        last = name.rsplit("+", 1)[-1]
        if "+" in name and combined is None and _MODULE_RE.match(last):
            combined = last
    return combined


def module_from_boardids(text: str) -> str | None:
    """Module P-number from ``nvidia,boardids`` (e.g. ``3448:0000:A02`` -> ``p3448-0000``)."""
    match = _BOARDID_RE.search(text)
    return None if match is None else f"p{match.group(1)}-{match.group(2)}"


def _read_marker(root: Path) -> tuple[bool, str | None]:
    text = read_text(root / VIRTUAL_BOARD_MARKER)
    if text is None:
        return False, None
    try:
        data = json.loads(text)
    except ValueError:
        return False, None
    if not isinstance(data, dict) or data.get("simulated") is not True:
        return False, None
    model = data.get("model")
    return True, model if isinstance(model, str) else None


def read_identity(root: Path) -> Identity:
    """Read the board's identity from files under ``root``."""
    release_text = read_text(root / "etc/nv_tegra_release")
    l4t = parse_nv_tegra_release(release_text) if release_text is not None else None

    model_raw = _read_dt(root, "model")
    model_parts = split_nul_strings(model_raw) if model_raw is not None else ()
    model = model_parts[0] if model_parts else None

    compatible_raw = _read_dt(root, "compatible")
    compatible = split_nul_strings(compatible_raw) if compatible_raw is not None else ()

    module = module_from_compatible(compatible)
    if module is None:
        boardids = _read_dt(root, "nvidia,boardids")
        if boardids is not None:
            module = module_from_boardids(boardids.decode("utf-8", errors="replace"))

    simulated, sim_model = _read_marker(root)
    return Identity(
        model=model,
        compatible=compatible,
        soc=soc_from_compatible(compatible),
        module=module,
        l4t=l4t,
        jetpack=jetpack_for_l4t(l4t),
        kernel=read_text(root / "proc/sys/kernel/osrelease") or None,
        simulated=simulated,
        sim_model=sim_model,
    )
