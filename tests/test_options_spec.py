"""Every option shared by pytest and ``edgeenergy`` is described once (options_spec), both
front ends are generated from that description, and the manual's options reference agrees
with it.

The front ends are read as they are: pytest's ``--help`` text, and the argparse parsers of
``edgeenergy compare``, ``search`` and ``measure``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.commands import _parser as cli_parser
from pytest_edgeenergy.commands.compare import _parser as compare_parser
from pytest_edgeenergy.commands.measure import parser as measure_command_parser
from pytest_edgeenergy.commands.search import _parser as search_parser
from pytest_edgeenergy.errors import InvalidValue
from pytest_edgeenergy.options_spec import (
    ALL_OPTIONS,
    CONTROL_OPTIONS,
    GATE_OPTIONS,
    GRID_OPTIONS,
    OPTIONS,
    SEARCH_OPTIONS,
    SIM_MODELS,
    Option,
    add_arguments,
    parse_board,
)
from pytest_edgeenergy.plugin import options as plugin_options
from pytest_edgeenergy.search.objective import OBJECTIVES

REPO = Path(__file__).resolve().parent.parent
OPTIONS_MD = REPO / "docs" / "reference" / "options.md"

SHARED = {
    "compare": ("fail", "baseline", "fail_insufficient"),
    "search": (
        "strategy",
        "objective",
        "trials",
        "power_budget_w",
        "latency_budget_s",
        "seed",
        "prior",
    ),
    "measure": ("interval_ms", "source"),
    "measure -- CMD": ("interval_ms", "source", "idle_s", "power_mode", "gpu_freq", "settle_s"),
}
"""The options each ``edgeenergy`` command shares with pytest (the issue's list)."""


def _subparser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in cli_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]  # type: ignore[no-any-return]


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return {
        "compare": compare_parser(),
        "search": search_parser(),
        "measure": _subparser("measure"),
        "measure -- CMD": measure_command_parser(),
    }


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    found = [a for a in parser._actions if flag in a.option_strings]
    assert found, f"{parser.prog} has no {flag}"
    return found[0]


def _words(text: str) -> str:
    return " ".join(text.split())


# -- one description ----------------------------------------------------------------------------


def test_the_plugin_reads_the_same_tables() -> None:
    """plugin/options.py keeps no table of its own: its names are the description's."""
    assert plugin_options.OPTIONS is OPTIONS
    assert plugin_options.GRID_OPTIONS is GRID_OPTIONS
    assert plugin_options.CONTROL_OPTIONS is CONTROL_OPTIONS
    assert plugin_options.GATE_OPTIONS is GATE_OPTIONS
    assert plugin_options.SEARCH_OPTIONS is SEARCH_OPTIONS
    assert len(ALL_OPTIONS) == sum(
        map(len, (OPTIONS, GRID_OPTIONS, CONTROL_OPTIONS, GATE_OPTIONS, SEARCH_OPTIONS))
    ), "keys are unique across the tables"


@pytest.mark.parametrize(
    ("command", "key"), [(c, k) for c, keys in SHARED.items() for k in keys], ids=str
)
def test_each_command_argument_is_generated_from_the_description(command: str, key: str) -> None:
    opt = ALL_OPTIONS[key]
    action = _action(_parsers()[command], opt.cli_flag)
    assert action.dest == key
    assert action.help == opt.help_text("cli")
    if opt.kind != "flag":
        assert action.metavar == opt.metavar
    if opt.allowed is not None:  # the range checks the value on both sides
        assert action.type is not None
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(opt.allowed.bounds)):
            action.type(str(opt.allowed.high * 10 + 1))
    if opt.default is not None:
        assert action.default == opt.read(opt.default), (command, key)


def test_help_texts_are_the_same_on_both_sides(pytester: pytest.Pytester) -> None:
    """The text pytest shows for --edge-X is the text edgeenergy shows for --X: the same
    words, each naming other options as that front end names them, then the front end's
    own note."""
    shown = _words(pytester.runpytest_inprocess("--help").stdout.str())
    parsers = _parsers()
    for command, keys in SHARED.items():
        for key in keys:
            opt = ALL_OPTIONS[key]
            pytest_text = opt.help_text("pytest").replace("%%", "%")
            assert _words(pytest_text) in shown, opt.flag
            cli_help = _action(parsers[command], opt.cli_flag).help
            assert cli_help is not None and cli_help.startswith(opt.shared_help("cli"))
            assert _unnamed(opt.shared_help("pytest"), "pytest") == _unnamed(
                cli_help.removesuffix(f"; {(opt.notes or {}).get('cli', '')}"), "cli"
            ), key


def _unnamed(text: str, front: str) -> str:
    """``text`` with every option's flag on ``front`` replaced by its key."""
    for key, opt in sorted(ALL_OPTIONS.items(), key=lambda kv: -len(kv[1].flag)):
        flag = opt.flag if front == "pytest" else opt.cli_flag
        text = re.sub(rf"{re.escape(flag)}(?![\w-])", f"<{key}>", text)
    return text


def test_a_reference_names_the_option_as_each_front_end_does() -> None:
    board = ALL_OPTIONS["board"]
    assert "under --edge-root" in board.help_text("pytest")
    assert "under --root" in board.help_text("cli")
    assert "{" not in "".join(
        o.help_text("cli") + o.help_text("pytest") for o in ALL_OPTIONS.values()
    )


def test_objective_names_are_in_its_help() -> None:
    """Objectives are the search's own (not an extension point): their names are passed to
    the command's choices and listed in the shared help."""
    text = ALL_OPTIONS["objective"].help_text("cli")
    assert all(name in text for name in OBJECTIVES)


def test_search_command_takes_the_plugins_default_objective(tmp_path: Path) -> None:
    """Was required; now min-energy, as --edge-objective."""
    args = search_parser().parse_args(["--replay", "t.csv", "--trials", "3"])
    assert (args.objective, args.strategy, args.seed) == ("min-energy", "auto", 0)


def test_add_arguments_builds_every_kind() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(
        parser,
        ["board", "root", "interval_ms", "source", "sim_load", "gpu_freq", "report_overwrite"],
        defaults={"root": Path("/")},
    )
    args = parser.parse_args(
        ["--board", "sim:thor", "--gpu-freq", "min", "--gpu-freq", "max", "--sim-load", "0.3"]
    )
    assert args.board == "sim:thor" and args.root == Path("/") and args.interval_ms == 10.0
    assert args.source == "auto" and args.sim_load == 0.3 and args.gpu_freq == ["min", "max"]
    assert args.report_overwrite is False
    assert parser.parse_args(["--sim-load", "host"]).sim_load is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--board", "sim:nope"], "argument --board: 'sim:nope' is not a board; use 'auto'"),
        (["--interval-ms", "0"], "argument --interval-ms: '0' must be >= 0.1 and <= 1000 ms"),
        (["--source", "nope"], "argument --source: invalid choice: 'nope'"),
        (["--sim-load", "2"], "argument --sim-load: '2' is not 'host' nor a fraction 0..1"),
    ],
)
def test_a_bad_value_is_the_commands_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="edgeenergy measure")
    add_arguments(parser, ["board", "interval_ms", "source", "sim_load"])
    with pytest.raises(SystemExit) as done:
        parser.parse_args(argv)
    assert done.value.code == 2
    assert message in capsys.readouterr().err


@given(st.text(max_size=30))
def test_parse_board_accepts_only_auto_and_sim_models(text: str) -> None:
    try:
        model = parse_board(text)
    except InvalidValue as e:
        assert text != "auto" and not (text.startswith("sim:") and text[4:] in SIM_MODELS)
        assert "is not a board; use 'auto' or 'sim:MODEL'" in str(e)
        return
    assert (text == "auto" and model is None) or text == f"sim:{model}"


# -- the manual's reference agrees with the description ------------------------------------------


def _row(reference: str, opt: Option) -> str:
    pattern = re.compile(rf"^\| `{re.escape(opt.flag)}[=` ]")
    rows = [line for line in reference.splitlines() if pattern.match(line)]
    assert len(rows) == 1, f"docs/reference/options.md: one row for {opt.flag}, found {len(rows)}"
    return rows[0]


def _number_forms(x: float) -> set[str]:
    if float(x).is_integer():
        n = int(x)
        return {str(n), f"{n:,}"}
    return {f"{x:g}"}


def _has_number(text: str, x: float) -> bool:
    return any(
        re.search(rf"(?<![\d.,]){re.escape(form)}(?!\d|[.,]\d)", text) for form in _number_forms(x)
    )


def reference_problems(row: str, opt: Option) -> list[str]:
    """What the reference's row of ``opt`` lacks: the env var, the ini key, the default, an
    end of a number's range, its unit."""
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
    problems = []
    if f"`{opt.env}" not in cells[1]:
        problems.append(f"env {opt.env}")
    if f"`{opt.ini}`" not in cells[2]:
        problems.append(f"ini {opt.ini}")
    if opt.default is not None and opt.default not in cells[3]:
        problems.append(f"default {opt.default}")
    if opt.allowed is not None:
        problems += [
            f"range end {end:g}"
            for end in (opt.allowed.low, opt.allowed.high)
            if not _has_number(cells[4], end)
        ]
        if opt.allowed.unit and opt.allowed.unit not in cells[4]:
            problems.append(f"unit {opt.allowed.unit}")
    return problems


@pytest.mark.parametrize("key", sorted(ALL_OPTIONS))
def test_the_options_reference_describes_each_option_as_described(key: str) -> None:
    """Its row names the flag, env var and ini key, the default, and both ends of a
    number's range with its unit."""
    opt = ALL_OPTIONS[key]
    row = _row(OPTIONS_MD.read_text(encoding="utf-8"), opt)
    assert reference_problems(row, opt) == [], row


def test_the_reference_check_finds_what_is_wrong() -> None:
    opt = ALL_OPTIONS["interval_ms"]
    cells = ("`--edge-interval-ms=MS`", "`EDGEENERGY_INTERVAL_MS`", "`edge_interval_ms`")
    row = "| " + " | ".join((*cells, "10", "0.1\N{EN DASH}1000 ms")) + " |"
    assert reference_problems(row, opt) == []
    wrong = row.replace("_INTERVAL_MS`", "_INTERVAL`").replace("| 10 |", "| 20 |")
    wrong = wrong.replace("0.1\N{EN DASH}1000 ms", "1\N{EN DASH}10000 s")
    assert reference_problems(wrong, opt) == [
        "env EDGEENERGY_INTERVAL_MS",
        "default 10",
        "range end 0.1",
        "range end 1000",
        "unit ms",
    ]


def test_help_lists_the_builtin_names_without_loading_them() -> None:
    """The help names the registered built-ins from the package's metadata: no module of a
    strategy or a source is imported for it."""
    code = (
        "import sys\n"
        "from pytest_edgeenergy.options_spec import ALL_OPTIONS\n"
        "print(ALL_OPTIONS['strategy'].help_text('pytest'))\n"
        "print(ALL_OPTIONS['source'].help_text('cli'))\n"
        "loaded = [m for m in sys.modules if m.startswith(('pytest_edgeenergy.search', "
        "'pytest_edgeenergy.meters', 'pytest_edgeenergy.plugin'))]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "search strategy: auto, binary, grid, optuna, random, or one a plugin" in done.stdout
    assert "power source: auto, ina, jtop, nvml, rapl, tegrastats, or one a plugin" in done.stdout
