"""The workload worker in other interpreters: Python 3.6 and 3.8 (the system Pythons of
JetPack 4 and 5, from pyenv) with the standard-library workload (zlib), and how the harness
ends it when it dies, hangs, raises or cannot import torch."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from worker_pythons import alive, group_members, old_python, write_user_workloads

from pytest_edgeenergy.bench.remote import RemoteWorkload
from pytest_edgeenergy.bench.settings import WorkloadPlacement
from pytest_edgeenergy.bench.worker import (
    WORKER_SOURCE,
    WorkerFailed,
    WorkerProcess,
    WorkerUnavailable,
    worker_environment,
)

ZLIB = {"kind": "zlib", "bytes": 32768, "level": 6, "seed": 1}


def _worker_module() -> ModuleType:
    """The worker's source as a module of this interpreter (its pure helpers)."""
    spec = importlib.util.spec_from_file_location("edgeenergy_workload_worker", WORKER_SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def started() -> list[WorkerProcess]:
    """Workers a test starts: killed at its end whatever happened."""
    workers: list[WorkerProcess] = []
    yield workers
    for w in workers:
        w.kill()


def _start(started: list[WorkerProcess], python: Path | str, **kw: object) -> WorkerProcess:
    worker = WorkerProcess(WorkloadPlacement(python=str(python), **kw))  # type: ignore[arg-type]
    started.append(worker)
    return worker


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_zlib_calls_in_an_old_python(started: list[WorkerProcess], version: str) -> None:
    """The worker's source reaches an interpreter that has nothing of this package, runs
    there, builds the workload and times each call with its own clock."""
    python = old_python(version)
    worker = _start(started, python)
    assert worker.hello["python_version"].startswith(version + ".")
    assert worker.where == f"{python} (Python {worker.hello['python_version']})"
    work = RemoteWorkload(worker, worker.build(ZLIB), params={"workload": "zlib"})
    assert work.facts["bytes"] == 32768 and work.params()["workload"] == "zlib"
    work.prepare_window()
    batch = work.run_calls(7)
    assert len(batch.latencies_s) == 7 and all(x > 0 for x in batch.latencies_s)
    assert work.memory_reset is True and batch.memory_peak_bytes is not None
    assert batch.memory_peak_bytes > 1 << 20 and batch.cuda_peak_bytes is None
    work()  # one call, one round trip
    described = worker.describe()
    assert described["python_version"] == worker.hello["python_version"]
    assert described["prefixed"] is False and "torch" not in described  # not probed
    pgid = worker.pid
    worker.close()
    assert worker.closed and group_members(pgid) == []


@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_no_torch_there_is_one_line_naming_the_interpreter(
    started: list[WorkerProcess], version: str
) -> None:
    python = old_python(version)
    worker = _start(started, python)
    with pytest.raises(WorkerUnavailable) as info:
        worker.probe(["torchvision"])
    message = str(info.value)
    assert message.startswith(f"workload worker {python} (Python {version}.")
    assert "cannot import torch: ModuleNotFoundError: No module named 'torch'" in message
    assert "\n" not in message
    assert not worker.closed  # the worker stays usable: a skip, not a failure


def test_a_worker_that_dies_names_its_status_and_last_stderr(
    started: list[WorkerProcess], tmp_path: Path
) -> None:
    python = old_python("3.6")
    path = write_user_workloads(tmp_path)
    worker = _start(started, python)
    spec = {"kind": "callable", "module": "user_workloads", "name": "dies", "path": [path]}
    work = RemoteWorkload(worker, worker.build(spec))
    with pytest.raises(WorkerFailed) as info:
        work.run_calls(5)
    message = str(info.value)
    assert message.startswith(f"workload worker {python} (Python 3.6.")
    assert "exited with status 3 during 5 calls" in message
    assert "last stderr: the workload gives up" in message
    assert worker.closed and group_members(worker.pid) == []


def test_a_hung_worker_and_its_children_are_killed(
    started: list[WorkerProcess], tmp_path: Path
) -> None:
    """No answer for the timeout: the whole process group goes, the child the workload
    started included."""
    python = old_python("3.8")
    path = write_user_workloads(tmp_path)
    pid_file = tmp_path / "child.pid"
    worker = _start(started, python, timeout_s=1.0)
    spec = {
        "kind": "callable",
        "module": "user_workloads",
        "name": "hangs",
        "kwargs": {"pid_file": str(pid_file)},
        "path": [path],
    }
    work = RemoteWorkload(worker, worker.build(spec))
    with pytest.raises(WorkerFailed) as info:
        work.run_calls(2)
    assert "no answer for 1 s during 2 calls (--edge-workload-timeout)" in str(info.value)
    assert "its process group was killed" in str(info.value)
    child = int(pid_file.read_text())
    assert not alive(child) and not alive(worker.pid)
    assert group_members(worker.pid) == []


def test_a_long_batch_is_not_a_hang(started: list[WorkerProcess]) -> None:
    """Calls that finish keep the worker alive through its beats, whatever the batch's
    length: 3 s of 0.2 s calls with a 2 s timeout (a beat at least every 0.5 s)."""
    worker = _start(started, old_python("3.8"), timeout_s=2.0)
    work = RemoteWorkload(worker, worker.build({"kind": "sleep", "seconds": 0.2}))
    batch = work.run_calls(15)
    assert len(batch.latencies_s) == 15 and min(batch.latencies_s) >= 0.2


def test_a_raising_workload_fails_the_request_and_keeps_the_worker(
    started: list[WorkerProcess], tmp_path: Path
) -> None:
    path = write_user_workloads(tmp_path)
    worker = _start(started, old_python("3.6"))
    spec = {"kind": "callable", "module": "user_workloads", "name": "raises", "path": [path]}
    work = RemoteWorkload(worker, worker.build(spec))
    with pytest.raises(WorkerFailed, match=r"3 calls raised ValueError: bad input shape"):
        work.run_calls(3)
    assert not worker.closed
    again = RemoteWorkload(worker, worker.build(ZLIB))
    assert len(again.run_calls(2).latencies_s) == 2


def test_prints_of_a_workload_do_not_break_the_protocol(
    started: list[WorkerProcess], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The worker's stdout is moved to its stderr before the protocol starts."""
    path = write_user_workloads(tmp_path)
    worker = _start(started, old_python("3.8"))
    spec = {"kind": "callable", "module": "user_workloads", "name": "chatty", "path": [path]}
    work = RemoteWorkload(worker, worker.build(spec))
    assert work.facts["prints"] is True
    assert len(work.run_calls(4).latencies_s) == 4
    worker.close()
    assert "workload worker: a workload printing to stdout" in capfd.readouterr().err


def test_unknown_kind_and_missing_modules_are_unsupported(started: list[WorkerProcess]) -> None:
    worker = _start(started, old_python("3.6"))
    with pytest.raises(WorkerUnavailable, match=r"no workload kind 'gpt' here; known: callable"):
        worker.build({"kind": "gpt"})
    spec = {"kind": "classification", "arch": "resnet18"}
    with pytest.raises(WorkerUnavailable, match=r"No module named 'torch'"):
        worker.build(spec)


def test_an_interpreter_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(WorkerFailed, match=r"^workload worker /nonexistent/python3: cannot start"):
        WorkerProcess(WorkloadPlacement(python="/nonexistent/python3"))


def test_python2_is_refused_with_its_own_words(started: list[WorkerProcess]) -> None:
    """An interpreter too old for the bootstrap exits; the message carries its stderr."""
    python = old_python("2.7")
    with pytest.raises(WorkerFailed) as info:
        _start(started, python)
    assert "exited with status 1 during start" in str(info.value)
    assert "AttributeError" in str(info.value)


def test_a_prefix_runs_the_worker(started: list[WorkerProcess]) -> None:
    """``env -i`` stands in for a container runtime: a command whose last words are the
    worker's interpreter, with none of this environment."""
    python = old_python("3.8")
    worker = _start(started, python, prefix=("env", "-i", "LANG=C.UTF-8"))
    assert worker.where.startswith(f"{python} behind --edge-workload-prefix (env) (Python 3.8.")
    work = RemoteWorkload(worker, worker.build(ZLIB))
    assert len(work.run_calls(3).latencies_s) == 3
    assert worker.describe()["prefixed"] is True


def test_the_worker_environment_leaves_out_this_interpreters_home() -> None:
    env = worker_environment({"PATH": "/bin", "PYTHONHOME": "/x", "PYTHONPATH": "/y"})
    assert env == {"PATH": "/bin", "PYTHONPATH": "/y"}


# -- the builders' choices for old torch and torchvision ----------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("1.10.0a0+git36449ea", (1, 10, 0)),  # JetPack 4's wheel for Python 3.6
        ("2.1.0a0+41361538.nv23.06", (2, 1, 0)),  # JetPack 5
        ("0.11.1", (0, 11, 1)),
        ("0.28.0+cu130", (0, 28, 0)),
        ("2", (2, 0, 0)),
        ("1.x", (1, 0, 0)),
    ],
)
def test_version_tuple(text: str, parsed: tuple[int, int, int]) -> None:
    assert _worker_module().version_tuple(text) == parsed


def test_old_torchvision_gets_pretrained_false() -> None:
    worker = _worker_module()
    assert worker.classifier_kwargs("0.11.1") == {"pretrained": False}
    assert worker.classifier_kwargs("0.12.0") == {"pretrained": False}
    assert worker.classifier_kwargs("0.13.0") == {"weights": None}
    assert worker.detector_kwargs("0.10.0") == {
        "pretrained": False,
        "pretrained_backbone": False,
    }
    assert worker.detector_kwargs("0.15.2a0") == {"weights": None, "weights_backbone": None}
    assert worker.load_kwargs("1.10.0") == {}
    assert worker.load_kwargs("1.13.0") == {"weights_only": True}


def test_torch_before_inference_mode_uses_no_grad() -> None:
    worker = _worker_module()

    class OldTorch:
        @staticmethod
        def no_grad() -> str:
            return "no_grad"

    class NewTorch(OldTorch):
        @staticmethod
        def inference_mode() -> str:
            return "inference_mode"

    assert worker.no_grad_factory(OldTorch)() == "no_grad"
    assert worker.no_grad_factory(NewTorch)() == "inference_mode"


def test_harness_and_worker_agree_on_the_protocol() -> None:
    from pytest_edgeenergy.bench import worker as harness

    assert _worker_module().PROTOCOL == harness.PROTOCOL


def test_this_interpreter_is_the_default(started: list[WorkerProcess]) -> None:
    worker = WorkerProcess(WorkloadPlacement())
    started.append(worker)
    assert worker.hello["python"] == sys.executable or Path(worker.hello["python"]).samefile(
        sys.executable
    )


def test_a_worker_left_running_is_killed_at_exit(tmp_path: Path) -> None:
    """A session that ends without closing its worker (a crash) kills it at exit."""
    code = (
        "from pytest_edgeenergy.bench.worker import WorkerProcess\n"
        "from pytest_edgeenergy.bench.settings import WorkloadPlacement\n"
        f"w = WorkerProcess(WorkloadPlacement(python={str(old_python('3.8'))!r}))\n"
        "print(w.pid, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    pid = int(done.stdout.split()[0])
    assert not alive(pid) and group_members(pid) == []
