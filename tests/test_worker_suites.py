"""The suites with their workloads in a worker, from a harness whose Python has no torch (as
a standalone CPython beside JetPack's system Python): real torchvision and training
workloads and the paced camera stream measured on a virtual board, each result saying
where it ran; the same harness without a worker skips them naming what it lacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from suite_runs import ONE_ITEM_BATCHES, QUIET_FLAGS, SUITES, clean_env, needs

pytestmark = needs("torch", "torchvision", reason="the worker here runs this Python's torch")

NO_TORCH_HARNESS = """
import sys


class NoDeepLearning:
    \"\"\"This harness has no torch, torchvision nor transformers.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoDeepLearning())
import pytest

sys.exit(pytest.main(sys.argv[1:]))
"""
"""``python -c NO_TORCH_HARNESS ARGS``: pytest in a Python where torch does not import (the
worker, another process, is not affected)."""

SELECTED = "resnet18-eager-fp32-cpu or lstm_lm_train-eager-fp32-cpu or camera_stream"


def _harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH_HARNESS, *args, *QUIET_FLAGS],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def _entries(report: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(report.read_text())
    return {t["params"].get("workload", t["name"]): t for t in data["tests"]}


def test_suites_run_in_a_worker_from_a_harness_without_torch(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = _harness(
        tmp_path,
        str(SUITES / "test_classification.py"),
        str(SUITES / "test_training.py"),
        str(SUITES / "test_stream.py"),
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        ONE_ITEM_BATCHES,
        "--edge-sim-load=0.3",
        "-k",
        SELECTED,
        f"--edge-workload-python={sys.executable}",
        f"--edge-report={report}",
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    data = json.loads(report.read_text())
    tests = {t["id"].split("::")[-1]: t for t in data["tests"]}
    resnet = tests["test_classification[bs1-dvfs-resnet18-eager-fp32-cpu]"]
    assert resnet["status"] == "passed", resnet["reason"]
    params = resnet["params"]
    assert params["model_params"] == 11_689_512 and params["weights"] == "random"
    assert params["input"] == "3x224x224 image" and params["load_includes_first_call"] is True
    where = resnet["extra"]["workload_process"]
    assert where["python"] == sys.executable or Path(where["python"]).samefile(sys.executable)
    import torch
    import torchvision

    assert where["torch"] == torch.__version__
    assert where["torchvision"] == torchvision.__version__
    assert where["cuda_available"] == torch.cuda.is_available()
    assert resnet["metrics"]["energy_per_item"]["value"] > 0
    training = tests["test_training[bs1-dvfs-lstm_lm_train-eager-fp32-cpu]"]
    assert training["status"] == "passed", training["reason"]
    timing = training["params"]["training_timing"]
    assert timing["first_minibatch_discarded"] and timing["minibatches_run"] >= 2
    assert training["params"]["optimizer"] == "SGD lr=1.0, grad clip 0.25"
    stream = tests["test_camera_stream[dvfs]"]
    assert stream["status"] == "passed", stream["reason"]
    assert stream["params"]["scenario"] == "fixed-rate"
    assert all(r["schedule"] for r in stream["extra"]["runs"][0]["repeats"])
    skipped = [t for t in data["tests"] if t["status"] == "skipped"]
    assert all("workload worker" in t["reason"] or "runs on cuda" in t["reason"] for t in skipped)


def test_without_a_worker_that_harness_skips_naming_what_it_lacks(tmp_path: Path) -> None:
    """Skipped before the board is pinned or a window opened: no report is written."""
    report = tmp_path / "report.json"
    proc = _harness(
        tmp_path,
        str(SUITES / "test_classification.py"),
        "--edge-board=sim:orin-nano",
        "--edge-quick",
        "-k",
        "resnet18-eager-fp32-cpu",
        "-rs",
        f"--edge-report={report}",
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 skipped" in proc.stdout
    assert "the benchmark suites need torch (pip install torch)" in proc.stdout
    assert not report.exists()


NO_TRANSFORMERS = """
import sys


class NoTransformers:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "transformers":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoTransformers())
"""
"""A ``sitecustomize`` for the worker's interpreter: torch there, transformers not."""


def test_a_module_the_worker_lacks_skips_naming_it(tmp_path: Path) -> None:
    """Behind a prefix (``env PYTHONPATH=...`` standing in for an image without
    transformers) the NLP suite's worker has torch but no transformers: one skip line names
    the interpreter and the module."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_TRANSFORMERS)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(SUITES / "test_nlp.py"),
            "--edge-board=sim:orin-nano",
            "--edge-quick",
            "-k",
            "bert_tiny-eager-fp32-cpu",
            f"--edge-workload-prefix=env PYTHONPATH={site}",
            f"--edge-workload-python={sys.executable}",
            "-rs",
            *QUIET_FLAGS,
        ],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 skipped" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("SKIPPED"))
    assert f"workload worker {sys.executable} behind --edge-workload-prefix (env) (Python" in line
    assert "bert_tiny needs transformers, which does not import there" in line
    assert "No module named 'transformers'" in line
