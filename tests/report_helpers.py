"""A report of given test entries on a virtual Orin Nano, for tests of what reads reports
(figures, tables). ``from report_helpers import virtual_report`` in a test module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_edgeenergy.board.types import Identity, RailMap
from pytest_edgeenergy.report.load import check_report
from pytest_edgeenergy.report.model import build_device, build_header


def virtual_report(tests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A finished, validated report of ``tests`` (entries of ``build_result``) measured on a
    virtual Orin Nano."""
    identity = Identity(
        model="NVIDIA Jetson Orin Nano", soc="tegra234", l4t="36.4.3", simulated=True,
        sim_model="orin-nano",
    )  # fmt: skip
    header = build_header(
        build_device(identity, RailMap(rails=(), total_rail=None)),
        software={"python": "3.11.0", "torch": None, "torchvision": None, "platform": None},
    )
    header["finished_at"] = header["started_at"]
    return check_report({**header, "tests": list(tests)}, "r.json")
