"""No result lost with exit 0 (issue 19, item 3).

A report that cannot be written (disk full, a read-only remount, a file size limit) keeps
every result: the writer holds them, a rescue copy holds all of them elsewhere (or, when no
directory takes it, the report is printed on stderr), the file on disk never looks finished,
and the run exits non-zero with one line saying how many results are missing and where.
A Ctrl-C during a report write or during the end-of-session restore lets that finish first.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_edgeenergy.report.load import load_report
from pytest_edgeenergy.sim.tree import create

MANY = """
import os, subprocess
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_w(energy, i):
    action = os.environ.get("AT_" + str(i))
    if action:
        subprocess.run(action, shell=True, check=True)
    with energy.window("w"):
        pass
"""

INTERNAL_ERROR = 3


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at ``path`` (root only: skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _run(
    pytester: pytest.Pytester,
    n: int,
    report: Path,
    rescue: Path,
    *,
    env: dict[str, str] | None = None,
    preexec: object = None,
) -> subprocess.CompletedProcess[str]:
    pytester.makepyfile(test_many=MANY.format(n=n))
    rescue.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_many.py",
            "--edge-board=sim:orin-nano",
            "--edge-idle-s=0",
            f"--edge-report={report}",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=pytester.path,
        env={**os.environ, "EDGEENERGY_RESCUE_DIR": str(rescue), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )


def _rescued(rescue: Path) -> dict[str, object]:
    (only,) = rescue.glob("edgeenergy-rescue-*.json")
    return load_report(only)


def test_disk_full_fails_the_run_and_rescues_every_result(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "small", "48k") as small:
        report = small / "r.json"
        run = _run(pytester, 30, report, tmp_path / "rescue")
        out = run.stdout + run.stderr
        assert run.returncode == INTERNAL_ERROR, out
        assert run.stderr.count("REPORT ERROR") == 1  # said at once, once per cause
        on_disk = json.loads(report.read_text())
        missing = 30 - len(on_disk["tests"])
        assert 0 < missing < 30
        assert on_disk["finished_at"] is None  # it does not look finished
        assert f"REPORT INCOMPLETE: {missing} of 30 results are not in the report {report}" in out
        assert "No space left on device" in out
        assert "30 passed" in out
    rescued = _rescued(tmp_path / "rescue")
    assert len(rescued["tests"]) == 30 and rescued["finished_at"] is not None  # type: ignore[arg-type]
    assert str(tmp_path / "rescue") in out


def test_read_only_remount_mid_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "4m") as disk:
        report = disk / "r.json"
        run = _run(
            pytester, 60, report, tmp_path / "rescue", env={"AT_14": f"mount -o remount,ro {disk}"}
        )
        out = run.stdout + run.stderr
        assert run.returncode == INTERNAL_ERROR, out
        on_disk = load_report(report)
        assert len(on_disk["tests"]) == 14 and on_disk["finished_at"] is None
        assert "REPORT INCOMPLETE: 46 of 60 results are not in the report" in out
        assert "Read-only file system" in out
    assert len(_rescued(tmp_path / "rescue")["tests"]) == 60  # type: ignore[arg-type]


def test_a_write_that_fails_for_a_while_loses_nothing(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Space runs out at test 5 and comes back at test 10: the final report holds all 15,
    the run passes, and the rescue copy made meanwhile is gone."""
    with tmpfs(tmp_path / "disk", "256k") as disk:
        filler = disk / "filler"
        env = {
            "AT_5": f"dd if=/dev/zero of={filler} bs=4k count=64 2>/dev/null || true",
            "AT_10": f"rm -f {filler}",
        }
        run = _run(pytester, 15, disk / "r.json", tmp_path / "rescue", env=env)
        out = run.stdout + run.stderr
        assert "REPORT ERROR" in out  # the failure was said...
        assert run.returncode == 0, out  # ...but nothing was lost
        final = load_report(disk / "r.json")
        assert len(final["tests"]) == 15 and final["finished_at"] is not None
        assert "incomplete" not in final
    assert list((tmp_path / "rescue").iterdir()) == []


def _limit_file_size(limit_b: int) -> object:
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_b, limit_b))

    return preexec


def test_no_rescue_anywhere_prints_the_whole_report(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A file size limit fails every large write, the rescue copies too: the complete
    report goes to stderr as the last resort (no root needed)."""
    report = tmp_path / "r.json"
    run = _run(pytester, 30, report, tmp_path / "rescue", preexec=_limit_file_size(20_000))
    assert run.returncode == INTERNAL_ERROR, run.stdout + run.stderr
    assert "no rescue copy could be written anywhere" in run.stdout
    assert "the complete report follows on stderr" in run.stdout
    start = run.stderr.index('{"schema_version"')
    document = json.JSONDecoder().raw_decode(run.stderr[start:])[0]
    assert len(document["tests"]) == 30 and document["finished_at"] is not None


_MARK_SCRIPT = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from pytest_edgeenergy.board.types import Identity, RailMap
    from pytest_edgeenergy.report.model import build_device, build_header, build_result, make_metric
    from pytest_edgeenergy.report.writer import ReportIncomplete, ReportWriteError, ReportWriter

    path, limit = Path(sys.argv[1]), int(sys.argv[2])
    device = build_device(Identity(model="m", simulated=True, sim_model="nano"),
                          RailMap(rails=(), total_rail=None))
    writer = ReportWriter(path, build_header(device))
    def entry(i):
        samples = [0.1 + 1e-4 * k for k in range(100)]
        return build_result(f"t.py::test[{i}]", status="passed",
                            metrics={"energy_j": make_metric("energy_j", samples)})
    if limit == 0:  # measure: the size with 3 and with 4 tests
        sizes = []
        for i in range(4):
            writer.add_test(entry(i))
            sizes.append(path.stat().st_size)
        print(json.dumps(sizes))
        sys.exit(0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for i in range(4):
        try:
            writer.add_test(entry(i))
        except ReportWriteError as e:
            print("WRITE", e)
    try:
        writer.finish()
    except ReportIncomplete as e:
        print("INCOMPLETE", e.missing)
    """
)


def test_report_on_disk_says_what_it_lacks(tmp_path: Path) -> None:
    script = tmp_path / "mark.py"
    script.write_text(_MARK_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "EDGEENERGY_RESCUE_DIR": str(tmp_path)}

    def run(path: Path, limit: int) -> str:
        done = subprocess.run(
            [sys.executable, str(script), str(path), str(limit)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    sizes = json.loads(run(tmp_path / "measure.json", 0))
    limit = (sizes[2] + sizes[3]) // 2  # 3 tests fit, 4 do not; the marker fits
    out = run(tmp_path / "r.json", limit)
    assert "INCOMPLETE ['t.py::test[3]']" in out
    report = load_report(tmp_path / "r.json")
    assert len(report["tests"]) == 3 and report["finished_at"] is None
    assert report["incomplete"]["missing"] == 1
    assert report["incomplete"]["tests"] == ["t.py::test[3]"]
    assert "File too large" in report["incomplete"]["reason"]


SIGINT_IN_WRITE = """
import os, signal

_real_fsync = os.fsync
_writes = []

def _fsync(fd):
    _real_fsync(fd)
    try:
        name = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return
    if ".r.json." in name:  # the report's temp file, being written
        _writes.append(name)
        if len(_writes) == 2:
            os.kill(os.getpid(), signal.SIGINT)

os.fsync = _fsync
"""


def test_sigint_during_a_report_write_keeps_that_test(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makeconftest(SIGINT_IN_WRITE)  # Ctrl-C lands while the 2nd write is in flight
    report = tmp_path / "r.json"
    run = _run(pytester, 5, report, tmp_path / "rescue")
    out = run.stdout + run.stderr
    assert "KeyboardInterrupt" in out  # pytest stopped...
    assert "2 passed" in out
    kept = load_report(report)
    assert [t["id"].split("::")[1] for t in kept["tests"]] == ["test_w[0]", "test_w[1]"]
    assert kept["finished_at"] is not None
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_sigint_during_the_final_restore_finishes_cleanly(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Ctrl-C while nvpmodel puts the power mode back at the end of the session."""
    board = create("orin-nano", tmp_path / "board")
    tool = board / "usr/bin/nvpmodel"
    original = tool.read_text()
    # Mode 1 is the board's mode before the run: only the restore selects it.
    tool.write_text(original.replace("\nroot=", '\n[ "$2" = "1" ] && kill -INT $PPID\nroot=', 1))
    status = (board / "var/lib/nvpmodel/status").read_text()
    pytester.makepyfile(test_p="def test_p(energy, operating_point):\n    pass\n")
    report = tmp_path / "r.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_p.py",
            f"--edge-root={board}",
            "--edge-idle-s=0",
            "--power-mode=15W",
            f"--edge-report={report}",
            "-p",
            "no:cacheprovider",
        ],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = run.stdout + run.stderr
    assert "SIGINT received while finishing" in out, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    assert run.returncode == 2  # interrupted
    assert (board / "var/lib/nvpmodel/status").read_text() == status  # restored
    assert load_report(report)["finished_at"] is not None


def test_temp_files_of_a_killed_writer_are_removed(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = reports / f".old.json.{dead.pid}.x1y2.tmp"
    stale.write_text('{"half": ')
    live = reports / f".other.json.{os.getpid()}.a1b2.tmp"  # a live writer's: kept
    live.write_text("{")
    run = _run(pytester, 1, reports / "r.json", tmp_path / "rescue")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not stale.exists() and live.exists()
