"""--edge-sim-load pins a virtual board's utilisation; a bad value is a usage error."""

from __future__ import annotations

import pytest

PROBE = """
from pathlib import Path

from pytest_edgeenergy.plugin import SESSION_KEY

def test_probe(energy, request):
    root = request.config.stash[SESSION_KEY].engine.root
    override = (Path(root) / "{path}").read_text().strip()
    print("LOAD_OVERRIDE=" + override)
"""


def test_a_bad_fraction_names_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--edge-board=sim:orin-nano", "--edge-sim-load=1.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--edge-sim-load*'1.5'*'host' nor a fraction 0..1*"])


@pytest.mark.parametrize(("given", "written"), [(None, "host"), ("0.25", "0.25")])
def test_the_virtual_board_gets_the_pinned_load(
    pytester: pytest.Pytester, given: str | None, written: str
) -> None:
    from pytest_edgeenergy.sim.runner import LOAD_OVERRIDE

    pytester.makepyfile(test_probe=PROBE.replace("{path}", LOAD_OVERRIDE))
    args = ["--edge-board=sim:orin-nano", "--edge-idle-s=0", "-s"]
    if given is not None:
        args.append(f"--edge-sim-load={given}")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"*LOAD_OVERRIDE={written}*"])
