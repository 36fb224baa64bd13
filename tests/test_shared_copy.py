"""tests/shared is a verbatim copy of the workplace's ../shared reference samples and data,
so the tests run from any clone; this test says when the copy has fallen behind."""

from __future__ import annotations

from pathlib import Path

import pytest

COPY = Path(__file__).resolve().parent / "shared"
ORIGINAL = Path(__file__).resolve().parents[2] / "shared"


@pytest.mark.parametrize("folder", ["reference/samples", "data"])
def test_copy_matches_the_original(folder: str) -> None:
    if not (ORIGINAL / folder).is_dir():
        pytest.skip(f"{ORIGINAL / folder} is not beside this clone; nothing to compare")
    original = {p.name: p.read_bytes() for p in (ORIGINAL / folder).iterdir() if p.is_file()}
    copy = {p.name: p.read_bytes() for p in (COPY / folder).iterdir() if p.is_file()}
    assert copy == original, f"refresh with: cp -r {ORIGINAL / folder}/. {COPY / folder}/"
