"""Training steps: timing breakdown (first minibatch discarded, epoch 0 apart), weights
change, synthetic JPEG cache created once, decodable and deterministic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_edgeenergy.workloads.errors import WorkloadError
from pytest_edgeenergy.workloads.jpeg_cache import (
    CACHE_ENV,
    MANIFEST,
    default_cache_root,
    ensure_synthetic_jpegs,
)
from pytest_edgeenergy.workloads.training import MinibatchTiming, summarize_timings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_times = st.floats(min_value=0, max_value=10, allow_nan=False, allow_infinity=False)


@st.composite
def _records(draw: st.DrawFn) -> list[MinibatchTiming]:
    per_epoch = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    out = []
    for epoch, n in enumerate(per_epoch):
        for i in range(n):
            fetch, compute = draw(_times), draw(_times)
            out.append(MinibatchTiming(epoch, i, fetch, compute, fetch + compute))
    return out


@given(_records())
def test_summary_discards_first_and_splits_epoch_zero(records: list[MinibatchTiming]) -> None:
    s = summarize_timings(records)
    assert s["first_minibatch_discarded"] is True
    assert s["minibatches_run"] == len(records)
    assert s["epochs_started"] == records[-1].epoch + 1
    e0, later = s["epoch_0"], s["epochs_1_plus"]
    n0 = sum(1 for r in records if r.epoch == 0) - 1
    n_later = sum(1 for r in records if r.epoch >= 1)
    assert (e0 is None) == (n0 == 0) and (later is None) == (n_later == 0)
    kept = records[1:]
    if e0 is not None:
        assert e0["minibatches"] == n0
        fetch0 = math.fsum(r.fetch_s for r in kept if r.epoch == 0)
        assert e0["fetch_s_total"] == pytest.approx(fetch0)
        assert e0["fetch_s_mean"] == pytest.approx(fetch0 / n0)
        assert 0 <= e0["fetch_stall_fraction"] <= 1
    if later is not None:
        assert later["minibatches"] == n_later
        e2e = math.fsum(r.e2e_s for r in records if r.epoch >= 1)
        assert later["e2e_s_total"] == pytest.approx(e2e)


def test_summary_of_nothing() -> None:
    s = summarize_timings([])
    assert s["minibatches_run"] == 0 and s["epoch_0"] is None and s["epochs_1_plus"] is None


def test_first_minibatch_is_not_in_the_means() -> None:
    slow_first = MinibatchTiming(0, 0, 5.0, 100.0, 105.0)
    rest = [MinibatchTiming(0, i, 0.1, 1.0, 1.1) for i in range(1, 4)]
    s = summarize_timings([slow_first, *rest])
    assert s["epoch_0"]["compute_s_mean"] == pytest.approx(1.0)
    assert s["epoch_0"]["fetch_stall_fraction"] == pytest.approx(0.1 / 1.1)


# ---- synthetic JPEGs -----------------------------------------------------------------


def test_jpeg_cache_is_created_once_and_decodable(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image", reason="needs Pillow")
    root = ensure_synthetic_jpegs(tmp_path, count=6, size_px=32, classes=2)
    files = sorted(root.rglob("*.jpg"))
    assert len(files) == 6
    assert sorted(p.name for p in root.iterdir()) == ["class_0", "class_1", MANIFEST]
    for f in files:
        with pil.open(f) as img:
            img.load()
            assert img.format == "JPEG" and img.size == (32, 32) and img.mode == "RGB"
    stamps = {f: f.stat().st_mtime_ns for f in files}
    assert ensure_synthetic_jpegs(tmp_path, count=6, size_px=32, classes=2) == root
    assert {f: f.stat().st_mtime_ns for f in files} == stamps  # not written again
    assert json.loads((root / MANIFEST).read_text())["count"] == 6
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left


def test_jpeg_cache_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("PIL.Image", reason="needs Pillow")
    a = ensure_synthetic_jpegs(tmp_path / "a", count=3, size_px=24, classes=1)
    b = ensure_synthetic_jpegs(tmp_path / "b", count=3, size_px=24, classes=1)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*.jpg"))
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*.jpg"))
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes()
    images = {(a / rel).read_bytes() for rel in files_a}
    assert len(images) == 3  # different images, not one copied


def test_an_incomplete_cache_is_rebuilt(tmp_path: Path) -> None:
    pytest.importorskip("PIL.Image", reason="needs Pillow")
    root = ensure_synthetic_jpegs(tmp_path, count=2, size_px=16, classes=1)
    (root / MANIFEST).unlink()
    (root / "class_0" / "img_0000.jpg").write_bytes(b"truncated")
    again = ensure_synthetic_jpegs(tmp_path, count=2, size_px=16, classes=1)
    assert again == root and (root / MANIFEST).is_file()
    assert (root / "class_0" / "img_0000.jpg").read_bytes()[:2] == b"\xff\xd8"


def test_jpeg_cache_arguments_and_default_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(WorkloadError, match="classes <= count"):
        ensure_synthetic_jpegs(tmp_path, count=2, classes=3)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert default_cache_root() == tmp_path / "c"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_root() == tmp_path / "x" / "pytest-edgeenergy"


# ---- training steps (need torch) -----------------------------------------------------


def _weights(model: object) -> dict[str, object]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}  # type: ignore[attr-defined]


def test_vision_training_step_trains_and_times_every_minibatch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="training needs torch")
    pytest.importorskip("torchvision", reason="vision training needs torchvision")
    from pytest_edgeenergy.workloads.training import TrainingData, build_trainer

    root = ensure_synthetic_jpegs(tmp_path, count=8, size_px=48, classes=2)
    data = TrainingData(root, "8 test JPEGs")
    step = build_trainer("mobilenet_v3_small_train", 4, data=data, num_workers=0, first_step=False)
    assert step.minibatches_per_epoch == 2
    before = _weights(step.model)
    for _ in range(5):  # epochs 0, 0, 1, 1, 2
        step()
    step.close()
    after = step.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if k.endswith("weight"))
    assert [(r.epoch, r.index) for r in step.records] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
    for r in step.records:
        assert r.fetch_s >= 0 and r.compute_s > 0
        assert r.e2e_s == pytest.approx(r.fetch_s + r.compute_s)
    t = step.timing()
    assert t["first_minibatch_discarded"] and t["minibatches_run"] == 5
    assert t["epoch_0"]["minibatches"] == 1 and t["epochs_1_plus"]["minibatches"] == 3
    assert math.isfinite(t["loss_first"]) and math.isfinite(t["loss_last"])
    p = step.params()
    assert p["workload"] == "mobilenet_v3_small_train" and p["batch_size"] == 4
    assert p["data"] == "8 test JPEGs" and p["loader_workers"] == 0


def test_lstm_language_model_is_8_6_m_params_and_learns() -> None:
    pytest.importorskip("torch", reason="training needs torch")
    from pytest_edgeenergy.workloads.training import (
        LSTM_MINIBATCHES_PER_EPOCH,
        LSTM_SEQ_TOKENS,
        build_trainer,
    )

    step = build_trainer("lstm_lm_train", 2)  # first_step: the first minibatch runs here
    assert len(step.records) == 1
    assert step.params()["model_params"] == pytest.approx(8.6e6, rel=0.01)
    for _ in range(LSTM_MINIBATCHES_PER_EPOCH):
        step()
    t = step.timing()
    assert t["epochs_started"] == 2 and t["minibatches_per_epoch"] == LSTM_MINIBATCHES_PER_EPOCH
    assert t["epoch_0"]["minibatches"] == LSTM_MINIBATCHES_PER_EPOCH - 1
    assert t["epochs_1_plus"]["minibatches"] == 1
    assert t["loss_last"] < t["loss_first"]  # same random corpus again: it learned
    inputs, targets = next(iter(step.batches))
    assert inputs.shape == targets.shape == (2, LSTM_SEQ_TOKENS)
    assert (inputs[:, 1:] == targets[:, :-1]).all()  # targets are the next tokens


def test_training_refuses_bad_arguments(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="training needs torch")
    pytest.importorskip("torchvision", reason="vision training needs torchvision")
    from pytest_edgeenergy.workloads.errors import LocalFileError
    from pytest_edgeenergy.workloads.training import TrainingData, build_trainer

    with pytest.raises(WorkloadError, match=r"resnet18'.*resnet18_train"):
        build_trainer("resnet18", 2)
    root = ensure_synthetic_jpegs(tmp_path, count=2, size_px=16, classes=1)
    with pytest.raises(LocalFileError, match="fewer than one batch of 4"):
        build_trainer("resnet18_train", 4, data=TrainingData(root, "x"), num_workers=0)
    with pytest.raises(LocalFileError, match="not usable as an ImageFolder"):
        build_trainer("resnet18_train", 1, data=TrainingData(tmp_path / "none", "x"))
