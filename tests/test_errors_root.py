"""Every error meant for users derives from EdgeEnergyError; internal ones are listed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tempfile
from pathlib import Path

import pytest

import pytest_edgeenergy
from pytest_edgeenergy.errors import EdgeEnergyError

# Raised and caught inside the project (control flow), never shown to a user as such;
# Terminated is SIGTERM raised as a KeyboardInterrupt so that cleanup runs as after Ctrl-C.
INTERNAL = {"ReadError", "PartialReading", "NotDrawn", "_Need", "Terminated"}
# Modules that import optional heavy dependencies at import time.
SKIP_MODULES = ("pytest_edgeenergy.workloads.", "pytest_edgeenergy.meters._")


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(pytest_edgeenergy.__path__, "pytest_edgeenergy."):
        if info.name.startswith(SKIP_MODULES) and not info.name.endswith(".errors"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
            ):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_user_error_has_the_root() -> None:
    classes = _exception_classes()
    assert len(classes) > 30  # the walk really found the project's errors
    stray = [
        qual
        for qual, cls in classes.items()
        if cls.__name__ not in INTERNAL and not issubclass(cls, EdgeEnergyError)
    ]
    assert stray == [], f"derive these from EdgeEnergyError or list them as internal: {stray}"


def test_internal_errors_are_not_user_errors() -> None:
    internal = [cls for cls in _exception_classes().values() if cls.__name__ in INTERNAL]
    assert {cls.__name__ for cls in internal} == INTERNAL
    assert not any(issubclass(cls, EdgeEnergyError) for cls in internal)


def test_cli_user_error_is_one_line_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_edgeenergy.commands import main

    # A user error met by a command: one line, exit 2.
    not_a_board = Path(tempfile.mkdtemp())
    try:
        assert main(["sim", "run", str(not_a_board)]) == 2
    finally:
        not_a_board.rmdir()
    err = capsys.readouterr().err
    assert err.startswith("edgeenergy sim: ") and "not a virtual board" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    # One met by an option's own type: argparse's usage line and one error line, exit 2.
    with pytest.raises(SystemExit) as stopped:
        main(["board", "--root", "/nonexistent/board-root"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "edgeenergy board: error: argument --root: '/nonexistent/board-root' is not a directory"
    )
    assert "Traceback" not in err
