"""``edgeenergy ab``'s own options never reach its sessions, however they are given.

The options ab gives its sessions itself, or that would make a session gate, record or
search on its own (``options_spec.AB_REFUSED``, derived from the option tables), are refused
in PYTEST_ARGS and ``PYTEST_ADDOPTS`` in every spelling pytest reads (flag with ``=`` or a
separate value, ``-o``/``--override-ini`` ini overrides alone or in a cluster of one-letter
flags); their environment variables are left out of the sessions' environment. A session
run by ab (given the board lock's hand-off token, as ab gives it) refuses them in its ini
file's ``addopts`` naming the file, and does not read their ini keys nor environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_edgeenergy.ab import AbError
from pytest_edgeenergy.ab.pytest_args import (
    read_pytest_args,
    session_environment,
)
from pytest_edgeenergy.commands.ab import ab_main
from pytest_edgeenergy.handoff import HANDOFF_ENV, give, new_token
from pytest_edgeenergy.options_spec import (
    AB_REFUSED,
    ALL_OPTIONS,
    GATE_OPTIONS,
    SEARCH_OPTIONS,
)

RUN_TIMEOUT_S = 120

READ_BY_AB = {"board", "root", "sim_load", "lock_timeout_s"}
"""Options ab reads itself (the one board and the lock wait)."""
PASSED_ON = {
    "interval_ms",
    "source",
    "idle_s",
    "shard",
    "shard_durations",
    "power_mode",
    "cpu_freq",
    "gpu_freq",
    "emc_freq",
    "cpu_cores",
    "governor",
    "batch_size",
    "dry_run",
    "force_mode",
    "settle_s",
}
"""Options every session of both sides gets as given: they say what and how to measure."""


def spellings(key: str) -> list[list[str]]:
    """Every way pytest reads option ``key`` from its arguments."""
    opt = ALL_OPTIONS[key]
    value = "1" if opt.kind == "flag" else "x"
    as_flag = [[opt.flag]] if opt.kind == "flag" else [[f"{opt.flag}=x"], [opt.flag, "x"]]
    setting = f"{opt.ini}={value}"
    return [
        *as_flag,
        ["-o", setting],
        [f"-o{setting}"],
        ["--override-ini", setting],
        [f"--override-ini={setting}"],
        ["-q", "-vo", setting],
        [f"-xqo{setting}"],
    ]


CASES = [(key, argv) for key in AB_REFUSED for argv in spellings(key)]


def test_every_option_is_refused_read_or_passed_on() -> None:
    # A new option must be placed here; one added to the gate's or the search's table is
    # refused without that.
    assert set(GATE_OPTIONS) | set(SEARCH_OPTIONS) <= set(AB_REFUSED)
    assert set(ALL_OPTIONS) == set(AB_REFUSED) | READ_BY_AB | PASSED_ON
    assert not set(AB_REFUSED) & (READ_BY_AB | PASSED_ON)


@pytest.mark.parametrize(("key", "argv"), CASES, ids=[" ".join(a) for _, a in CASES])
def test_refused_in_the_pytest_arguments_in_any_spelling(key: str, argv: list[str]) -> None:
    flag = ALL_OPTIONS[key].flag
    with pytest.raises(AbError, match=r"^pytest arguments: ") as caught:
        read_pytest_args(["tests/", "-p", "no:randomly", *argv], {})
    assert f"({flag}) is not allowed here: {AB_REFUSED[key]}" in str(caught.value)


@pytest.mark.parametrize(("key", "argv"), CASES, ids=[" ".join(a) for _, a in CASES])
def test_refused_in_pytest_addopts(key: str, argv: list[str]) -> None:
    import shlex

    environ = {"PYTEST_ADDOPTS": shlex.join(["-p", "no:randomly", *argv])}
    with pytest.raises(AbError, match=r"^PYTEST_ADDOPTS \(environment\): "):
        read_pytest_args(["tests/"], environ)


@pytest.mark.parametrize(
    "argv",
    [
        ["-k", "edge_fail"],  # a -k expression, not an option
        ["-o", "edge_board_note=x"],  # another ini key
        ["-o", "edge_interval_ms=5"],  # an option every session gets
        ["-px", "-o", "addopts="],
        ["--", "--edge-fail=x"],  # after --: a path
        ["--edge-failing-soon"],  # not ours (pytest takes no abbreviations)
    ],
)
def test_what_is_not_those_options_is_passed_on(argv: list[str]) -> None:
    assert read_pytest_args(argv, {}).rest == argv


def test_their_environment_variables_are_left_out_of_the_sessions() -> None:
    environ = {ALL_OPTIONS[key].env: "1" for key in AB_REFUSED}
    environ["EDGEENERGY_INTERVAL_MS"] = "5"
    assert session_environment(environ) == {"EDGEENERGY_INTERVAL_MS": "5"}
    said = read_pytest_args([], environ).dropped_env
    assert "EDGEENERGY_HISTORY_ADD" in said and "EDGEENERGY_SEARCH_STORAGE" in said


@pytest.mark.parametrize(
    "argv",
    [
        ["-o", "edge_save_baseline=keep"],
        ["--edge-history-add"],
        ["-oedge_fail=energy_per_item:mean:5%"],
    ],
)
def test_ab_exits_2_before_making_anything(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    status = ab_main(["--base", ".", "--fail", "energy_per_item:mean:5%", "--", *argv])
    assert status == 2
    err = capsys.readouterr().err
    assert "is not allowed here" in err and "Traceback" not in err
    assert not (tmp_path / "reports").exists()


# -- inside a session run by ab ------------------------------------------------------------

INNER = """
import os

from pytest_edgeenergy.plugin import SESSION_KEY


def test_settings(request):
    s = request.config.stash[SESSION_KEY]
    print("GATE", s.gate.fail, s.gate.baseline, s.gate.save_baseline, s.gate.history_add)
    print("REPORT", s.settings.report)
    print("HANDOFF", s.handoff, os.environ.get("{env}"))
""".replace("{env}", HANDOFF_ENV)


def session(
    cwd: Path, *argv: str, token: str | None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` in ``cwd``, given ``token`` as ab gives it (None: a plain run)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EDGEENERGY_")}
    environ.pop("PYTEST_ADDOPTS", None)
    environ.update(env or {})
    fds = () if token is None else (give(token, environ),)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", *argv],
            cwd=cwd,
            env=environ,
            pass_fds=fds,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
    finally:
        for fd in fds:
            os.close(fd)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_inner.py").write_text(INNER, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("ini", "env", "origin"),
    [
        (
            "addopts = --edge-save-baseline=keep",
            {},
            "--edge-save-baseline (addopts of the ini file {ini})",
        ),
        (
            "addopts = -p no:randomly --edge-history=h.db --edge-history-add",
            {},
            "--edge-history (addopts",
        ),
        ("", {"PYTEST_ADDOPTS": "--edge-fail=energy_per_item:mean:5%"}, "(PYTEST_ADDOPTS"),
        ("addopts = --edge-only=only.txt", {}, "--edge-only (addopts"),
    ],
)
def test_a_session_of_ab_refuses_them_in_addopts_naming_where(
    project: Path, ini: str, env: dict[str, str], origin: str
) -> None:
    (project / "pytest.ini").write_text(f"[pytest]\n{ini}\n", encoding="utf-8")
    (project / "only.txt").write_text("test_inner.py::test_settings\n", encoding="utf-8")
    done = session(project, token=new_token(), env=env)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert origin.format(ini=project / "pytest.ini") in done.stderr
    assert "is not allowed in a session of edgeenergy ab" in done.stderr
    assert "Traceback" not in done.stderr
    # Without the token (a plain run) the same settings are taken as given.
    plain = session(project, token=None, env=env)
    assert "edgeenergy ab" not in plain.stdout + plain.stderr


def test_a_session_of_ab_does_not_read_their_ini_keys_nor_environment(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'edge_fail = ["energy_per_item:mean:5%"]\n'
        'edge_baseline = "baselines"\n',
        encoding="utf-8",
    )
    env = {"EDGEENERGY_SAVE_BASELINE": "keep", "EDGEENERGY_HISTORY_ADD": "1"}
    token = new_token()
    argv = ["-o", "edge_report=elsewhere.json", f"--edge-report={project / 'ab.json'}"]
    done = session(project, *argv, token=token, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GATE () None None False" in done.stdout  # no gate, no baseline, no history
    assert f"REPORT {project / 'ab.json'}" in done.stdout  # ab's own --edge-report
    assert f"HANDOFF {token} None" in done.stdout  # taken, and gone from the environment
    said = done.stdout + done.stderr
    for name in ("EDGEENERGY_SAVE_BASELINE (environment)", "edge_fail (ini file"):
        assert name in said
    # A plain run reads them all.
    plain = session(project, token=None, env={"EDGEENERGY_SAVE_BASELINE": "keep"})
    assert "GATE ('energy_per_item:mean:5%',) baselines keep False" in plain.stdout, (
        plain.stdout + plain.stderr
    )
