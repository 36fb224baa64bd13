"""The ``edgeenergy`` command: one module per verb, and this dispatcher.

Exit codes: 0 success, 1 a gate failed (``compare --fail``, ``ab``) or a measured command
failed (``measure -- CMD``), 2 bad input or a board that cannot be used (the message names the
thing and what is allowed; never a traceback).
Every number has an allowed range (:mod:`..ranges`), checked by argparse.

Each verb's module holds its argument parser and its printing; the work it calls lives in
its own room (``sim/``, ``run/``, ``ab/``, ``history/``, ``search/``, ``verdict/``,
``present/``...). ``sim``, ``board`` and ``measure`` are subcommands of the parser here
(their modules add their arguments); the other verbs parse their arguments themselves
(``--help`` too). A verb's module is imported only when it runs (or, for the subcommands,
when the parser is built). Nothing outside this package parses an ``edgeenergy`` command
line, and the plugin never imports it.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from .._version import __version__
from ..errors import EdgeEnergyError
from ..extras import missing_extra

SUBCOMMANDS = ("sim", "board", "measure")
"""Verbs of the parser here: ``commands.<verb>`` has ``add_parser(sub)`` and ``run(args)``."""

OWN_PARSERS: dict[str, tuple[str, str, str]] = {
    "tegrastats-energy": (
        "tegrastats_energy",
        "tegrastats_energy_main",
        "integrate a tegrastats log (see its --help)",
    ),
    "compare": ("compare", "compare_main", "compare reports, gate regressions (see its --help)"),
    "ab": (
        "ab",
        "ab_main",
        "measure two versions interleaved on one board and gate (see its --help)",
    ),
    "search": ("search", "search_main", "search a replayed profile table (see its --help)"),
    "history": ("history", "history_main", "keep every run in a database (see its --help)"),
    "merge": ("merge", "merge_main", "merge shard reports of several boards (see its --help)"),
    "mark-helper": (
        "mark_helper",
        "mark_helper_main",
        "print the helper a measured command marks windows with",
    ),
}
"""Verbs with parsers of their own: the verb -> (module, entry function, help line). They get
their arguments untouched (``--help`` too)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="edgeenergy", description="Energy of deep-learning workloads on Jetson boards."
    )
    p.add_argument("--version", action="version", version=f"pytest-edgeenergy {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in SUBCOMMANDS:
        import_module(f"{__name__}.{verb}").add_parser(sub)
    # Listed for --help; main() hands their arguments to their own parsers.
    for verb, (_, _, help_line) in OWN_PARSERS.items():
        sub.add_parser(verb, help=help_line)
    return p


def _passthrough(verb: str, rest: list[str]) -> int:
    """Verbs with parsers of their own get their arguments untouched (``--help`` too)."""
    module, function, _ = OWN_PARSERS[verb]
    entry = getattr(import_module(f"{__name__}.{module}"), function)
    return int(entry(rest))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``edgeenergy``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in OWN_PARSERS:
            return _passthrough(argv[0], argv[1:])
        if argv[:1] == ["measure"] and "--" in argv:  # a command: its own parser
            from .measure import command_main

            return command_main(argv[1:])
        args = _parser().parse_args(argv)
        return int(import_module(f"{__name__}.{args.command}").run(args))
    except BrokenPipeError:  # output piped into `head`: not an error of ours
        sys.stderr.close()
        return 0
    except (EdgeEnergyError, OSError) as e:
        print(f"edgeenergy: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        missing = missing_extra(e)
        if missing is None:
            raise
        print(f"edgeenergy: {missing}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
