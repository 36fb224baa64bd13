"""One validated Settings value built from the command line, environment and ini file.

Precedence is CLI > environment > ini > default. Every error names where the bad value
came from, e.g. ``EDGEENERGY_INTERVAL_MS=abc (environment): not a number``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

SIM_MODELS = (
    "nano",
    "tx2",
    "xavier-nx",
    "agx-xavier",
    "orin-nano",
    "orin-nx",
    "agx-orin",
    "thor",
)
SOURCES = ("auto", "ina", "tegrastats", "jtop", "nvml", "rapl")


class SettingsError(ValueError):
    """A bad option value; the message names the option, its source and what is allowed.

    The plugin turns it into ``pytest.UsageError`` so pytest prints it without a traceback.
    """


@dataclass(frozen=True)
class Option:
    """One option known by its CLI flag, ini key and environment variable."""

    flag: str
    ini: str
    env: str
    help: str
    default: str | None


OPTIONS: dict[str, Option] = {
    "board": Option(
        "--edge-board",
        "edge_board",
        "EDGEENERGY_BOARD",
        "board to measure: 'auto' (the machine's own sysfs under --edge-root) or "
        f"'sim:MODEL' for a virtual board, MODEL one of {', '.join(SIM_MODELS)}",
        None,
    ),
    "root": Option(
        "--edge-root",
        "edge_root",
        "EDGEENERGY_ROOT",
        "directory holding the board's tree (/ on a Jetson; a virtual board's directory)",
        None,
    ),
    "interval_ms": Option(
        "--edge-interval-ms",
        "edge_interval_ms",
        "EDGEENERGY_INTERVAL_MS",
        "sampling interval of the power sampler in ms (never faster than the sensor updates)",
        "10",
    ),
    "source": Option(
        "--edge-source",
        "edge_source",
        "EDGEENERGY_SOURCE",
        f"power source: {', '.join(SOURCES)}",
        "auto",
    ),
    "report": Option(
        "--edge-report",
        "edge_report",
        "EDGEENERGY_REPORT",
        "JSON report path (default: reports/<device>-<time>.json when energy was measured)",
        None,
    ),
    "idle_s": Option(
        "--edge-idle-s",
        "edge_idle_s",
        "EDGEENERGY_IDLE_S",
        "seconds of idle power measured at the session's operating point (0 = none)",
        "2",
    ),
}


def add_options(parser: pytest.Parser) -> None:
    """Register every option as a CLI flag and an ini key sharing one help text."""
    group = parser.getgroup("edgeenergy", "energy measurement on Jetson boards")
    for opt in OPTIONS.values():
        group.addoption(opt.flag, dest=f"edge_{opt.ini[5:]}", default=None, help=opt.help)
        parser.addini(opt.ini, help=f"{opt.help} (env {opt.env})", default=None)


@dataclass(frozen=True)
class Value:
    """A raw option value and where it came from."""

    text: str
    origin: str


def _raw(config: pytest.Config, key: str) -> Value | None:
    opt = OPTIONS[key]
    cli = config.getoption(f"edge_{opt.ini[5:]}")
    if cli is not None:
        return Value(str(cli), f"{opt.flag} (command line)")
    env = os.environ.get(opt.env)
    if env:
        return Value(env, f"{opt.env} (environment)")
    ini = config.getini(opt.ini)
    if ini:
        return Value(str(ini), f"{opt.ini} (ini file)")
    if opt.default is not None:
        return Value(opt.default, f"{opt.flag} (default)")
    return None


@dataclass(frozen=True)
class Settings:
    """The energy options of one pytest session, validated."""

    sim_model: str | None
    root: Path | None
    interval_s: float
    source: str
    report: Path | None
    idle_s: float
    requested: bool
    """True when any board option was given: then the board is set up at session start."""

    @property
    def wants_board(self) -> bool:
        return self.requested


def _positive_float(v: Value, *, allow_zero: bool = False) -> float:
    try:
        x = float(v.text)
    except ValueError:
        raise SettingsError(f"{v.origin}: {v.text!r} is not a number") from None
    if x < 0 or (x == 0 and not allow_zero) or x != x:
        raise SettingsError(f"{v.origin}: {v.text!r} must be {'>= 0' if allow_zero else '> 0'}")
    return x


def build(config: pytest.Config) -> Settings:
    """Read and validate the options; raise :class:`SettingsError` naming the source."""
    sim_model: str | None = None
    board = _raw(config, "board")
    if board is not None and board.text != "auto":
        kind, _, model = board.text.partition(":")
        if kind != "sim" or model not in SIM_MODELS:
            raise SettingsError(
                f"{board.origin}: {board.text!r} is not a board; use 'auto' or 'sim:MODEL' "
                f"with MODEL one of {', '.join(SIM_MODELS)}"
            )
        sim_model = model
    root_v = _raw(config, "root")
    root = Path(root_v.text) if root_v is not None else None
    if root is not None and not root.is_dir():
        assert root_v is not None
        raise SettingsError(f"{root_v.origin}: {root_v.text!r} is not a directory")
    if sim_model is not None and root is not None:
        raise SettingsError(
            "--edge-board=sim:MODEL makes its own virtual board; to measure an existing "
            "tree (e.g. one made by `edgeenergy sim create`) pass only --edge-root"
        )
    interval = _raw(config, "interval_ms")
    assert interval is not None
    source = _raw(config, "source")
    assert source is not None
    if source.text not in SOURCES:
        raise SettingsError(
            f"{source.origin}: {source.text!r} is not a source; use one of {', '.join(SOURCES)}"
        )
    report_v = _raw(config, "report")
    idle = _raw(config, "idle_s")
    assert idle is not None
    return Settings(
        sim_model=sim_model,
        root=root,
        interval_s=_positive_float(interval) / 1000.0,
        source=source.text,
        report=Path(report_v.text) if report_v is not None else None,
        idle_s=_positive_float(idle, allow_zero=True),
        requested=board is not None or root is not None,
    )
