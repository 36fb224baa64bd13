"""Extension points used from outside the project: packages installed into a temporary
virtual environment add a search strategy and a power source through entry points, and
``--edge-search=NAME``, ``edgeenergy search --strategy NAME`` and ``--edge-source=NAME`` use
them. The registry's rules hold for them: an unknown name lists every registered name, a
plugin that cannot be imported is named, a built-in name cannot be taken over, and a name
two packages register is refused.

The packages: ``tests/data/edgeenergy_ext_demo`` (the example of docs/how-to/extensions.md:
strategy ``demo-first``, source ``demo-usb``), and two written here that misbehave
(``edgeenergy-ext-rogue``, whose module raises on import and which registers ``grid`` and
``ina`` too, and ``edgeenergy-ext-twin``, which registers ``twin`` as the rogue does).
One virtual environment serves the module: it sees this environment's packages (the
project included) through a ``.pth`` file, and pip installs the packages into it offline
(``--no-build-isolation``, setuptools from this environment).
"""

from __future__ import annotations

import csv
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sysconfig
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_edgeenergy.sim.tree import create

DEMO = Path(__file__).parent / "data" / "edgeenergy_ext_demo"
MANUAL = Path(__file__).parents[1] / "docs" / "how-to" / "extensions.md"
RUN_TIMEOUT_S = 240.0
USAGE_ERROR = 4  # pytest's exit code for a usage error
BOARD = ("--edge-board=sim:orin-nano", "--edge-idle-s=0", "--edge-quick", "-p", "no:cacheprovider")

ROGUE_MESSAGE = "edgeenergy_ext_rogue needs a USB meter firmware update"
ROGUE_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "edgeenergy-ext-rogue"
version = "0.1.0"

[project.entry-points."pytest_edgeenergy.strategies"]
broken = "edgeenergy_ext_rogue:create"
grid = "edgeenergy_ext_rogue:create"

[project.entry-points."pytest_edgeenergy.sources"]
rogue-meter = "edgeenergy_ext_rogue:open_meter"
ina = "edgeenergy_ext_rogue:open_meter"
twin = "edgeenergy_ext_rogue:open_meter"

[tool.setuptools]
py-modules = ["edgeenergy_ext_rogue"]
"""
TWIN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "edgeenergy-ext-twin"
version = "0.1.0"

[project.entry-points."pytest_edgeenergy.sources"]
twin = "edgeenergy_ext_twin:open_meter"

[tool.setuptools]
py-modules = ["edgeenergy_ext_twin"]
"""

WORKLOAD = """
import time


def test_work(operating_point, edge_bench):
    gpu_hz = operating_point.gpu_freq_hz or 1_020_000_000  # slower at lower GPU clocks
    edge_bench.run(lambda: time.sleep(0.01 * 1e9 / gpu_hz), items_per_call=4)
"""

# Two demo meters count 2.5 J and 0.5 J while the window is open (the file written whole,
# then renamed over the old one, as a driver's attribute changes at once).
METERED = """
import os
import time
from pathlib import Path


def add_uj(root, meter, energy_uj):
    path = Path(root) / "sys/class/demo_usb_meter" / meter / "energy_uj"
    new = path.with_name("energy_uj.new")
    new.write_text(str(int(path.read_text()) + energy_uj))
    os.replace(new, path)


def test_charge(energy):
    with energy.window("charge"):
        time.sleep(0.3)
        add_uj(energy.board.root, "meter0", 2_500_000)
        add_uj(energy.board.root, "meter1", 500_000)
        time.sleep(0.3)
"""

# A table for `edgeenergy search --replay`: GPU frequency x batch size, per-item figures.
TABLE = [
    (306_000_000, 1, 0.030, 4.0),
    (306_000_000, 4, 0.020, 4.4),
    (612_000_000, 1, 0.016, 5.5),
    (612_000_000, 4, 0.011, 6.0),
    (918_000_000, 1, 0.012, 7.5),
    (918_000_000, 4, 0.008, 8.4),
]


@dataclass(frozen=True)
class Venv:
    """The temporary environment: its interpreter and an ``edgeenergy`` command in it."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("EDGEENERGY_", "PYTEST_", "PIP_"))
        }
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        return env

    def run(self, cwd: Path, *argv: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in argv],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )

    def pytest(self, cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return self.run(cwd, self.python, "-m", "pytest", *args)

    def edgeenergy(self, cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return self.run(cwd, "edgeenergy", *args)


def _project_site_dirs() -> list[str]:
    """Where this environment's packages are (the project, pytest, pip, setuptools)."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _write_package(base: Path, pyproject: str, module: str, source: str) -> Path:
    base.mkdir(parents=True)
    (base / "pyproject.toml").write_text(pyproject)
    (base / f"{module}.py").write_text(source)
    return base


def _make_venv(base: Path) -> Venv:
    env = Venv(base / "venv")
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env.root)
    site = Path(
        subprocess.run(
            [env.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # addsitedir, not a bare path: the project's editable install is itself a .pth file.
    lines = [f"import site; site.addsitedir({d!r})" for d in _project_site_dirs()]
    (site / "_edgeenergy_project.pth").write_text("\n".join(lines) + "\n")
    script = env.root / "bin" / "edgeenergy"  # the console script pip writes for the project
    script.write_text(
        f"#!{env.python}\nimport sys\nfrom pytest_edgeenergy.commands import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    return env


@pytest.fixture(scope="module")
def ext(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    """A virtual environment holding the demo, rogue and twin packages."""
    if importlib.util.find_spec("setuptools") is None:  # the build backend pip uses, offline
        pytest.fail("setuptools is missing: install the test extra (pip install -e '.[test]')")
    base = tmp_path_factory.mktemp("extensions")
    env = _make_venv(base)
    src = base / "src"
    demo = src / DEMO.name
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    rogue = _write_package(
        src / "rogue",
        ROGUE_PYPROJECT,
        "edgeenergy_ext_rogue",
        f"raise RuntimeError({ROGUE_MESSAGE!r})\n",
    )
    twin = _write_package(
        src / "twin",
        TWIN_PYPROJECT,
        "edgeenergy_ext_twin",
        "def open_meter(request):\n    raise NotImplementedError\n",
    )
    pip = env.run(
        base,
        env.python,
        "-m",
        "pip",
        "install",
        "--isolated",
        "--no-index",
        "--no-deps",
        "--no-build-isolation",
        "--disable-pip-version-check",
        "-q",
        demo,
        rogue,
        twin,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    yield env


def _report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _fastest_first(space: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every point of ``space``, each knob at its highest value first (product order
    reversed): the order ``demo-first`` promises."""
    names = list(space)
    product = itertools.product(*(sorted(space[n]) for n in names))
    return [dict(zip(names, point, strict=True)) for point in reversed(list(product))]


def _write_table(path: Path) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["gpu_freq_hz", "batch_size", "time_s", "power_w"])
        writer.writerows(TABLE)
    return path


def test_the_demo_package_installs_with_pip(ext: Venv, tmp_path: Path) -> None:
    listed = ext.run(
        tmp_path,
        ext.python,
        "-c",
        "from importlib import metadata\n"
        "from pytest_edgeenergy.meters.factory import source_names\n"
        "from pytest_edgeenergy.search import strategy_names\n"
        "dist = metadata.distribution('edgeenergy-ext-demo')\n"
        "print(sorted(f'{e.group} {e.name} {e.value}' for e in dist.entry_points))\n"
        "print(strategy_names())\n"
        "print(source_names())\n",
    )
    assert listed.returncode == 0, listed.stderr
    entry_points, strategies, sources = listed.stdout.splitlines()
    assert entry_points == str(
        [
            "pytest_edgeenergy.sources demo-usb edgeenergy_ext_demo:open_usb_meter",
            "pytest_edgeenergy.strategies demo-first edgeenergy_ext_demo:create_strategy",
        ]
    )
    assert "'demo-first'" in strategies and "'grid'" in strategies
    assert "'demo-usb'" in sources and "'ina'" in sources
    # Into the temporary environment only: this one does not have it.
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.distribution("edgeenergy-ext-demo")


def _manual_blocks(first_line: str) -> list[str]:
    """The python and toml blocks of the manual page that start with ``first_line``."""
    blocks = re.findall(r"^```(?:python|toml)\n(.*?)^```", MANUAL.read_text(), re.S | re.M)
    return [b.partition("\n")[2] for b in blocks if b.startswith(first_line + "\n")]


@pytest.mark.parametrize("name", ["edgeenergy_ext_demo.py", "pyproject.toml"])
def test_the_manual_shows_the_demo_package_as_it_is(name: str) -> None:
    shown = _manual_blocks(f"# {name}")
    assert shown, f"{MANUAL} shows no block of {name}"
    source = (DEMO / name).read_text()
    for block in shown:
        assert block in source, f"{MANUAL} shows a part of {name} that is not in {DEMO}"


def test_outside_strategy_searches_on_the_board(ext: Venv, tmp_path: Path) -> None:
    (tmp_path / "test_search_demo.py").write_text(WORKLOAD)
    result = ext.pytest(
        tmp_path,
        "test_search_demo.py",
        *BOARD,
        "--edge-search=demo-first",
        "--edge-trials=3",
        "--gpu-freq=min,max",
        "--cpu-freq=min,max",
        "--edge-report=r.json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test_search_demo.py::test_work: strategy demo-first" in result.stdout
    (search,) = _report(tmp_path / "r.json")["search"]
    assert search["strategy"] == "demo-first"
    order = _fastest_first(search["space"])
    assert [t["knobs"] for t in search["trials"]] == order[:3]
    # The fastest point first: what grid (slowest first) and auto (corners) do not promise.
    fastest = {"cpu_freq_hz": 1_728_000_000, "gpu_freq_hz": 1_020_000_000}
    assert search["trials"][0]["knobs"] == fastest


def test_outside_strategy_searches_a_replayed_table(ext: Venv, tmp_path: Path) -> None:
    _write_table(tmp_path / "profiles.csv")
    args = ("search", "--replay", "profiles.csv", "--objective", "min-energy", "--trials", "4")
    text = ext.edgeenergy(tmp_path, *args, "--strategy", "demo-first")
    assert text.returncode == 0, text.stderr
    assert [" ".join(line.split()) for line in text.stdout.splitlines()[:3]] == [
        "strategy demo-first, objective min-energy: 4 of 6 points profiled",
        "trial0 gpu_freq=918MHz batch_size=4 0.008 s 8.4 W 0.0672 J",
        "trial1 gpu_freq=918MHz batch_size=1 0.012 s 7.5 W 0.09 J",
    ]
    result = ext.edgeenergy(tmp_path, *args, "--strategy", "demo-first", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["strategy"] == "demo-first"
    space = {"gpu_freq_hz": [306_000_000, 612_000_000, 918_000_000], "batch_size": [1, 4]}
    assert [t["knobs"] for t in data["trials"]] == _fastest_first(space)[:4]
    assert data["best"]["knobs"] == {"gpu_freq_hz": 612_000_000, "batch_size": 4}


def _board_with_meters(root: Path, energies_uj: dict[str, int]) -> Path:
    create("orin-nano", root)
    for meter, energy_uj in energies_uj.items():
        path = root / "sys/class/demo_usb_meter" / meter / "energy_uj"
        path.parent.mkdir(parents=True)
        path.write_text(f"{energy_uj}\n")
    return root


def test_outside_source_measures_the_window(ext: Venv, tmp_path: Path) -> None:
    board = _board_with_meters(tmp_path / "board", {"meter0": 7_000_000, "meter1": 0})
    (tmp_path / "test_metered.py").write_text(METERED)
    result = ext.pytest(
        tmp_path,
        "test_metered.py",
        f"--edge-root={board}",
        "--edge-idle-s=0",
        "--edge-quick",
        "-p",
        "no:cacheprovider",
        "--edge-source=demo-usb",
        "--edge-report=r.json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    doc = _report(tmp_path / "r.json")
    assert doc["settings"]["edge_source"] == "demo-usb"
    (test,) = doc["tests"]
    assert test["status"] == "passed" and test["validity"]["valid"] is True
    metrics = test["metrics"]
    # What the meters counted inside the window, channel by channel, and their sum.
    assert metrics["energy_j.meter0"]["value"] == pytest.approx(2.5)
    assert metrics["energy_j.meter1"]["value"] == pytest.approx(0.5)
    assert metrics["energy_j"]["value"] == pytest.approx(3.0)
    assert not any(name.startswith("energy_j.VDD") for name in metrics)  # not the INA rails


def test_unknown_names_list_the_outside_ones(ext: Venv, tmp_path: Path) -> None:
    (tmp_path / "test_search_demo.py").write_text(WORKLOAD)
    search = ext.pytest(
        tmp_path, "test_search_demo.py", *BOARD, "--edge-search=nope", "--edge-trials=2"
    )
    assert search.returncode == USAGE_ERROR
    allowed = "allowed: auto, binary, broken, demo-first, grid, optuna, random"
    assert f"unknown strategy 'nope'; {allowed}" in search.stderr
    source = ext.pytest(tmp_path, "test_search_demo.py", *BOARD, "--edge-source=nope")
    assert source.returncode == USAGE_ERROR
    assert "'nope' is not a source; use one of auto, demo-usb, ina," in source.stderr
    assert "rogue-meter" in source.stderr
    _write_table(tmp_path / "profiles.csv")
    cli = ext.edgeenergy(
        tmp_path, "search", "--replay", "profiles.csv", "--trials", "2", "--strategy", "nope"
    )
    assert cli.returncode == 2 and cli.stdout == ""
    assert "'nope'" in cli.stderr and "'demo-first'" in cli.stderr


@pytest.mark.parametrize(
    ("option", "what"),
    [
        (("--edge-search=broken", "--edge-trials=2", "--gpu-freq=min,max"), "strategy 'broken'"),
        (("--edge-source=rogue-meter",), "power source 'rogue-meter'"),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_named(
    ext: Venv, tmp_path: Path, option: tuple[str, ...], what: str
) -> None:
    (tmp_path / "test_search_demo.py").write_text(WORKLOAD)
    result = ext.pytest(tmp_path, "test_search_demo.py", *BOARD, *option)
    assert result.returncode == USAGE_ERROR
    assert f"{what} (" in result.stderr
    assert "of edgeenergy-ext-rogue) cannot be loaded" in result.stderr
    assert f"RuntimeError: {ROGUE_MESSAGE}" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_the_offline_search_names_a_plugin_that_cannot_be_imported(
    ext: Venv, tmp_path: Path
) -> None:
    _write_table(tmp_path / "profiles.csv")
    result = ext.edgeenergy(
        tmp_path, "search", "--replay", "profiles.csv", "--trials", "2", "--strategy", "broken"
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("edgeenergy: strategy 'broken' (")
    assert "edgeenergy-ext-rogue" in result.stderr and ROGUE_MESSAGE in result.stderr


def test_builtin_names_cannot_be_taken_over(ext: Venv, tmp_path: Path) -> None:
    # The rogue registers `grid` and `ina` too; its module raises on import, so a run that
    # passes never imported it.
    (tmp_path / "test_search_demo.py").write_text(WORKLOAD)
    result = ext.pytest(
        tmp_path,
        "test_search_demo.py",
        *BOARD,
        "--edge-search=grid",
        "--edge-trials=2",
        "--gpu-freq=min,max",
        "--edge-source=ina",
        "--edge-report=r.json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    doc = _report(tmp_path / "r.json")
    (search,) = doc["search"]
    assert search["strategy"] == "grid"
    assert search["trials"][0]["knobs"] == {"gpu_freq_hz": 306_000_000}  # grid: lowest first
    assert doc["settings"]["edge_source"] == "ina"
    assert any("energy_j.VDD_IN" in t["metrics"] for t in doc["tests"])  # the INA rails


def test_one_name_of_two_packages_is_refused(ext: Venv, tmp_path: Path) -> None:
    (tmp_path / "test_search_demo.py").write_text(WORKLOAD)
    result = ext.pytest(tmp_path, "test_search_demo.py", *BOARD, "--edge-source=twin")
    assert result.returncode == USAGE_ERROR
    assert "power source 'twin' is registered by more than one package" in result.stderr
    assert "of edgeenergy-ext-rogue" in result.stderr and "of edgeenergy-ext-twin" in result.stderr
