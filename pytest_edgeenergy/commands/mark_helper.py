"""``edgeenergy mark-helper``: print the one-file helper a measured command marks its own
windows with (``pytest_edgeenergy/run/mark_helper.py``: Python 3.6+, standard library only)."""

from __future__ import annotations

import argparse
import sys


def mark_helper_main(argv: list[str]) -> int:
    """``edgeenergy mark-helper``: print the one-file helper (Python 3.6+, stdlib only)."""
    from importlib import resources

    p = argparse.ArgumentParser(
        prog="edgeenergy mark-helper",
        description="Print edgeenergy_mark.py, a one-file helper (Python 3.6+, standard "
        "library only) with which a measured command marks its own windows: "
        "edgeenergy mark-helper > edgeenergy_mark.py",
    )
    p.parse_args(argv)
    text = resources.files("pytest_edgeenergy.run").joinpath("mark_helper.py").read_text("utf-8")
    sys.stdout.write(text)
    return 0
