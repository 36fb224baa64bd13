"""Bad numbers (issue 19, section 5): every number a user gives has a finite allowed range.

A value outside it (``nan``, ``inf``, an extra digit) is a usage error that names the option,
where the value came from (command line, environment, ini file) and the range: exit 2 for
``edgeenergy``, pytest's usage error in pytest. Never a traceback (``time.sleep(nan)``), never
a run without end (``sim run --seconds nan``), never a value taken silently
(``--edge-repeats=99999999999999999999``).

The CLI cases run the installed console script in a subprocess with a timeout: before the
ranges, some of them slept or animated forever.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_edgeenergy import plugin
from pytest_edgeenergy.commands import _parser
from pytest_edgeenergy.plugin.bench_options import BENCH_OPTIONS
from pytest_edgeenergy.plugin.options import (
    CONTROL_OPTIONS,
    GATE_OPTIONS,
    GRID_OPTIONS,
    OPTIONS,
    SEARCH_OPTIONS,
    Option,
    SettingsError,
    Value,
    checked,
    parse_batch_sizes,
)
from pytest_edgeenergy.ranges import FloatRange, IntRange, shown
from pytest_edgeenergy.sim.tree import create

BIN = Path(sys.executable).parent
CLI = BIN / "edgeenergy"
RUN_TIMEOUT_S = 60.0
ALL_OPTIONS: list[Option] = [
    *OPTIONS.values(),
    *GRID_OPTIONS.values(),
    *CONTROL_OPTIONS.values(),
    *GATE_OPTIONS.values(),
    *SEARCH_OPTIONS.values(),
    *BENCH_OPTIONS.values(),
]
FLOAT_OPTIONS = [o for o in ALL_OPTIONS if isinstance(o.allowed, FloatRange)]
INT_OPTIONS = [o for o in ALL_OPTIONS if isinstance(o.allowed, IntRange)]

# The plugin's numeric options and their ranges, as the manual
# (docs/reference/options.md) documents them.
RANGES = {
    "--edge-interval-ms": ">= 0.1 and <= 1000 ms",
    "--edge-idle-s": ">= 0 and <= 600 s",
    "--edge-history-window": ">= 1 and <= 1000 runs",
    "--edge-study-heartbeat-s": ">= 1 and <= 3600 s",
    "--edge-settle-s": ">= 0 and <= 600 s",
    "--edge-lock-timeout": ">= 0 and <= 86400 s",
    "--batch-size": ">= 1 and <= 65536",
    "--edge-trials": ">= 1 and <= 10000",
    "--edge-power-budget-w": "> 0 and <= 5000 W",
    "--edge-latency-budget-s": "> 0 and <= 86400 s",
    "--edge-seed": ">= 0 and <= 4294967295",
    "--edge-items": ">= 1 and <= 10000000",
    "--edge-repeats": ">= 1 and <= 1000",
    "--edge-warmup": ">= 0 and <= 10000",
    "--edge-min-window-s": ">= 0 and <= 3600 s",
    "--edge-rate": ">= 0.01 and <= 100000 queries per second",
    "--edge-latency-bound-s": "> 0 and <= 3600 s",
    "--edge-workload-timeout": ">= 1 and <= 86400 s",
}
NUMERIC_METAVARS = {"N", "MS", "SECONDS", "S", "W", "K", "PER_S", "SIZES"}
"""Placeholders of options that take numbers (``--edge-sim-load`` takes host|FRACTION)."""
BOARD_RANGED = {"--cpu-cores"}
"""Numbers whose range is the board's: 1 to its CPU count (checked when the board is read)."""
COMPANIONS = {
    "--edge-trials": ["--edge-search=grid"],
    "--edge-power-budget-w": ["--edge-search=grid", "--edge-trials=2"],
    "--edge-latency-budget-s": ["--edge-search=grid", "--edge-trials=2"],
    "--edge-seed": ["--edge-search=grid", "--edge-trials=2"],
    "--edge-study-heartbeat-s": ["--edge-search=grid", "--edge-trials=2"],
    "--edge-rate": ["--edge-scenario=fixed-rate"],
    "--edge-latency-bound-s": ["--edge-scenario=single-stream"],
}
"""Options that are refused without another one: given with it, so that the value is read."""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's own EDGEENERGY_* settings must not leak into the runs."""
    for name in list(os.environ):
        if name.startswith("EDGEENERGY_"):
            monkeypatch.delenv(name)


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )


def assert_exit_2(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


# ------------------------------------------------------------------ edgeenergy (exit 2)


@pytest.fixture
def board(tmp_path: Path) -> Path:
    return create("orin-nano", tmp_path / "board")


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--seconds", "nan", "> 0 and <= 7200 s"),
        ("--seconds", "inf", "> 0 and <= 7200 s"),
        ("--seconds", "1e9", "> 0 and <= 7200 s"),
        ("--seconds", "-1", "> 0 and <= 7200 s"),
        ("--interval-ms", "1e9", ">= 0.1 and <= 1000 ms"),
        ("--interval-ms", "nan", ">= 0.1 and <= 1000 ms"),
        ("--interval-ms", "1e-320", ">= 0.1 and <= 1000 ms"),
    ],
)
def test_measure_refuses_numbers_outside_their_range(
    board: Path, flag: str, value: str, allowed: str
) -> None:
    done = run(CLI, "measure", "--root", board, "--seconds", "0.2", f"{flag}={value}")
    assert_exit_2(done, f"argument {flag}: {value!r} must be {allowed}")


def test_measure_refuses_a_word_naming_the_range(board: Path) -> None:
    done = run(CLI, "measure", "--root", board, "--seconds", "soon")
    assert_exit_2(
        done, "argument --seconds: 'soon' is not a number; allowed: a finite number > 0 and"
    )


@pytest.mark.parametrize("value", ["nan", "inf", "1e9", "0"])
@pytest.mark.parametrize("entry", ["edgeenergy", "python -m pytest_edgeenergy.sim"])
def test_sim_run_refuses_seconds_that_never_end(board: Path, value: str, entry: str) -> None:
    command = [CLI, "sim"] if entry == "edgeenergy" else [sys.executable, "-m", entry.split()[-1]]
    done = run(*command, "run", board, "--seconds", value)
    assert_exit_2(done, f"argument --seconds: {value!r} must be > 0 and <= 86400 s")


@pytest.mark.parametrize("value", ["nan", "0", "1e6"])
def test_sim_create_refuses_update_intervals_outside_hwmon_range(
    tmp_path: Path, value: str
) -> None:
    done = run(CLI, "sim", "create", "thor", tmp_path / "b", f"--update-interval-ms={value}")
    assert_exit_2(done, f"argument --update-interval-ms: {value!r} must be >= 1 and <= 1000 ms")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("value", ["-1", "4294967296"])
def test_search_refuses_a_seed_outside_numpys_range(tmp_path: Path, value: str) -> None:
    table = tmp_path / "t.csv"
    table.write_text("gpu_freq_hz,time_s,power_w\n1,1,1\n")
    argv = ["--replay", table, "--objective", "min-time", "--trials", "1", f"--seed={value}"]
    done = run(CLI, "search", *argv)
    assert_exit_2(done, f"argument --seed: {value!r} must be >= 0 and <= 4294967295")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(), st.floats(-1.0, 8000.0)))
def test_measure_seconds_type_accepts_exactly_its_range(x: float) -> None:
    """The parser itself: ``--seconds=X`` is taken iff 0 < X <= 7200, else exit 2."""
    inside = math.isfinite(x) and 0.0 < x <= 7200.0
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            args = _parser().parse_args(["measure", f"--seconds={x!r}"])
        except SystemExit as e:
            assert e.code == 2
            assert not inside, err.getvalue()
            assert f"argument --seconds: {repr(x)!r} must be > 0 and <= 7200 s" in err.getvalue()
            return
    assert inside and args.seconds == x


# ------------------------------------------------------------------ pytest (usage error)

INNER = """
def test_window(energy, operating_point):
    with energy.window("w"):
        pass
"""
BOARD_ARGS = ("--edge-board=sim:orin-nano", "--gpu-freq=max", "--edge-idle-s=0")


def assert_usage_error(result: pytest.RunResult, message: str) -> None:
    out, err = result.stdout.str(), result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, f"exit {result.ret}\n{out}\n{err}"
    assert message in err, err
    assert "Traceback" not in out + err and "INTERNALERROR" not in out + err
    assert "test_window" not in out


@pytest.mark.parametrize(
    ("args", "env", "ini", "message"),
    [
        (
            ["--edge-settle-s=inf"],
            {},
            "",
            "--edge-settle-s (command line): 'inf' must be >= 0 and <= 600 s",
        ),
        (
            [],
            {"EDGEENERGY_SETTLE_S": "1e10"},
            "",
            "EDGEENERGY_SETTLE_S (environment): '1e10' must be >= 0 and <= 600 s",
        ),
        ([], {}, "edge_settle_s = 1e10", "edge_settle_s (ini file): '1e10' must be >= 0 and"),
        (
            ["--edge-repeats=99999999999999999999"],
            {},
            "",
            "--edge-repeats (command line): '99999999999999999999' must be >= 1 and <= 1000",
        ),
        (
            ["--edge-interval-ms=100000"],
            {},
            "",
            "--edge-interval-ms (command line): '100000' must be >= 0.1 and <= 1000 ms",
        ),
    ],
    ids=["settle-inf", "settle-env", "settle-ini", "repeats", "interval"],
)
def test_the_reported_values_are_usage_errors(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    ini: str,
    message: str,
) -> None:
    pytester.makepyfile(test_inner=INNER)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess(*BOARD_ARGS, *args, timeout=RUN_TIMEOUT_S)
    assert_usage_error(result, message)


def test_every_numeric_option_has_a_range() -> None:
    ranged = {o.flag: o.allowed.bounds for o in ALL_OPTIONS if o.allowed is not None}
    assert ranged == RANGES
    numeric = {o.flag for o in ALL_OPTIONS if o.metavar in NUMERIC_METAVARS}
    assert numeric - set(RANGES) == BOARD_RANGED


def test_help_shows_every_range(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help", timeout=RUN_TIMEOUT_S)
    text = " ".join(result.stdout.str().split())
    for opt in ALL_OPTIONS:
        if opt.allowed is not None:
            assert f"allowed: {opt.allowed.describe()}" in text, opt.flag


@pytest.mark.parametrize("value", ["nan", "inf", "1e30", "-1e30"])
@pytest.mark.parametrize("flag", sorted(set(RANGES) - {"--batch-size"}))
def test_every_numeric_option_refuses_far_values(
    pytester: pytest.Pytester, flag: str, value: str
) -> None:
    config = pytester.parseconfig(*COMPANIONS.get(flag, []), f"{flag}={value}")
    with pytest.raises(pytest.UsageError) as info:
        plugin.pytest_configure(config)
    (opt,) = [o for o in ALL_OPTIONS if o.flag == flag]
    problem = (
        f"is not a whole number; allowed: a whole number {RANGES[flag]}"
        if isinstance(opt.allowed, IntRange)
        else f"must be {RANGES[flag]}"
    )
    assert str(info.value) == f"{flag} (command line): {value!r} {problem}"


@pytest.mark.parametrize("value", ["0", "65537", "99999999999999999999", "nan", "1e3"])
def test_batch_sizes_outside_the_range_are_refused(value: str) -> None:
    with pytest.raises(SettingsError) as info:
        parse_batch_sizes(Value(f"8,{value}", "--batch-size (command line)"))
    assert str(info.value) == (
        f"--batch-size (command line): batch size {value!r} is not a positive integer <= 65536"
    )
    assert parse_batch_sizes(Value("1,65536", "--batch-size (command line)")) == (1, 65536)


# ------------------------------------------------------------------ the range types


def _origin(opt: Option) -> str:
    return f"{opt.env} (environment)"


@settings(max_examples=300)
@given(st.sampled_from(FLOAT_OPTIONS), st.one_of(st.floats(), st.floats(-10.0, 1e5)))
def test_a_float_option_takes_exactly_its_range(opt: Option, x: float) -> None:
    allowed = opt.allowed
    assert isinstance(allowed, FloatRange)
    above = x > allowed.low if allowed.above_low else x >= allowed.low
    inside = math.isfinite(x) and above and x <= allowed.high
    v = Value(repr(x), _origin(opt))
    if inside:
        assert checked(v, allowed) == x
        return
    with pytest.raises(SettingsError) as info:
        checked(v, allowed)
    assert str(info.value) == f"{opt.env} (environment): {repr(x)!r} must be {allowed.bounds}"


@settings(max_examples=300)
@given(st.sampled_from(INT_OPTIONS), st.one_of(st.integers(), st.integers(-(10**40), 10**40)))
def test_a_whole_number_option_takes_exactly_its_range(opt: Option, n: int) -> None:
    allowed = opt.allowed
    assert isinstance(allowed, IntRange)
    v = Value(str(n), _origin(opt))
    if allowed.low <= n <= allowed.high:
        assert checked(v, allowed) == n
        return
    with pytest.raises(SettingsError) as info:
        checked(v, allowed)
    assert str(info.value) == f"{opt.env} (environment): {shown(str(n))} must be {allowed.bounds}"


@given(st.sampled_from(INT_OPTIONS), st.floats().filter(lambda x: not x.is_integer()))
def test_a_whole_number_option_refuses_fractions(opt: Option, x: float) -> None:
    assert isinstance(opt.allowed, IntRange)
    with pytest.raises(SettingsError) as info:
        checked(Value(repr(x), _origin(opt)), opt.allowed)
    assert f"is not a whole number; allowed: {opt.allowed.describe()}" in str(info.value)


@given(st.sampled_from([*FLOAT_OPTIONS, *INT_OPTIONS]), st.text())
def test_any_text_is_a_number_in_range_or_a_message(opt: Option, text: str) -> None:
    assert opt.allowed is not None
    try:
        x = checked(Value(text, _origin(opt)), opt.allowed)
    except SettingsError as e:
        message = str(e)
        assert message.startswith(f"{opt.env} (environment): ")
        assert opt.allowed.bounds in message
        assert len(message) < 200  # a pasted file is not echoed back
    else:
        assert math.isfinite(x) and opt.allowed.contains(x)


def test_a_long_value_is_not_echoed_whole() -> None:
    opt = CONTROL_OPTIONS["settle_s"]
    assert opt.allowed is not None
    with pytest.raises(SettingsError) as info:
        checked(Value("[" * 100_000, _origin(opt)), opt.allowed)
    assert str(info.value) == (
        "EDGEENERGY_SETTLE_S (environment): '" + "[" * 35 + "...' is not a number; "
        "allowed: a finite number >= 0 and <= 600 s"
    )


@pytest.mark.parametrize(
    ("flag", "accepted", "refused"),
    [
        ("--edge-interval-ms", ["0.1", "1000", " 10 "], ["0.0999", "1000.001", "0"]),
        ("--edge-settle-s", ["0", "600"], ["-0.001", "600.001"]),
        ("--edge-power-budget-w", ["1e-9", "5000"], ["0", "5000.5"]),
        ("--edge-repeats", ["1", "1000", "1_000"], ["0", "1001", "1e3", "2.0"]),
        ("--edge-seed", ["0", "4294967295"], ["-1", "4294967296"]),
    ],
)
def test_the_ends_of_the_ranges(flag: str, accepted: list[str], refused: list[str]) -> None:
    (opt,) = [o for o in ALL_OPTIONS if o.flag == flag]
    assert opt.allowed is not None
    for text in accepted:
        checked(Value(text, _origin(opt)), opt.allowed)
    for text in refused:
        with pytest.raises(SettingsError):
            checked(Value(text, _origin(opt)), opt.allowed)
