"""Model builders and inference loading: each builds and runs a forward pass on small inputs,
detection output after NMS, 512-token NLP inputs, local weights files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from suite_runs import needs

from pytest_edgeenergy.workloads.detection import (
    DETECTIONS_PER_IMAGE,
    NMS_IOU_THRESHOLD,
    build_detector,
    detections_of,
    make_detection_images,
)
from pytest_edgeenergy.workloads.errors import LocalFileError, WorkloadError
from pytest_edgeenergy.workloads.inference import (
    describe_output,
    load_inference,
    make_inputs,
)
from pytest_edgeenergy.workloads.vision import (
    CLASSIFIERS,
    build_classifier,
    make_images,
)

pytestmark = [
    needs("torch", "torchvision", reason="the workload builders need torch and torchvision"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_builds_and_classifies(name: str) -> None:
    import torch

    model = build_classifier(name, num_classes=10).eval()
    x = make_images(2, size_px=64)
    with torch.no_grad():
        out = model(x)
    assert out.shape == (2, 10)
    assert torch.isfinite(out).all()


def test_images_are_deterministic_with_the_requested_shape_and_dtype() -> None:
    import torch

    a = make_images(3, size_px=32, seed=7)
    b = make_images(3, size_px=32, seed=7)
    assert a.shape == (3, 3, 32, 32) and a.dtype == torch.float32
    assert torch.equal(a, b)
    assert not torch.equal(a, make_images(3, size_px=32, seed=8))
    assert make_images(1, size_px=8, dtype=torch.float16).dtype == torch.float16
    with pytest.raises(WorkloadError, match="batch_size"):
        make_images(0)


def test_unknown_builder_names_are_errors() -> None:
    with pytest.raises(WorkloadError, match="vgg16"):
        build_classifier("vgg16")
    with pytest.raises(WorkloadError, match="yolo"):
        build_detector("yolo")


def _iou(a: Any, b: Any) -> Any:
    from torchvision.ops import box_iou

    return box_iou(a, b)


def test_detector_returns_boxes_and_scores_after_nms() -> None:
    import torch

    model = build_detector().eval()
    images = make_detection_images(1)
    assert images[0].shape == (3, 320, 320)
    with torch.no_grad():
        (det,) = detections_of(model(images))
    boxes, scores, labels = det["boxes"], det["scores"], det["labels"]
    n = boxes.shape[0]
    assert 0 < n <= DETECTIONS_PER_IMAGE
    assert boxes.shape == (n, 4) and scores.shape == (n,) and labels.shape == (n,)
    assert (boxes[:, 2] >= boxes[:, 0]).all() and (boxes[:, 3] >= boxes[:, 1]).all()
    assert ((scores >= 0) & (scores <= 1)).all()
    # NMS ran: boxes kept for the same class overlap no more than the IoU threshold
    for label in labels.unique():
        same = boxes[labels == label]
        iou = _iou(same, same)
        iou.fill_diagonal_(0)
        assert float(iou.max()) <= NMS_IOU_THRESHOLD + 1e-4


def test_scripted_detector_output_is_unwrapped() -> None:
    import torch

    det = {"boxes": torch.zeros(0, 4), "scores": torch.zeros(0), "labels": torch.zeros(0)}
    assert detections_of(({}, [det])) == [det]
    assert describe_output(({}, [det, det])) == {
        "images": 2,
        "boxes_per_image": [0, 0],
        "keys": ["boxes", "labels", "scores"],
    }
    with pytest.raises(WorkloadError, match="not a list"):
        detections_of(torch.zeros(1))


def test_load_inference_torchscript_int8_runs_and_records_facts() -> None:
    model = load_inference("mobilenet_v2", graph_mode="torchscript", precision="int8", batch_size=2)
    assert model.output == {"shape": [2, 1000]}
    out = model()
    assert out.shape == (2, 1000)
    p = model.params()
    assert p["workload"] == "mobilenet_v2" and p["batch_size"] == 2
    assert p["graph_mode"] == "torchscript" and p["precision"] == "int8"
    assert p["torchscript"] == "trace" and p["weights"] == "random"
    assert p["quantized_modules"] == 1 and 0 < p["quantized_param_fraction"] < 1
    assert p["model_params"] == 3504872


def test_load_inference_refuses_unsupported_combinations() -> None:
    from pytest_edgeenergy.workloads.errors import CombinationUnsupported

    with pytest.raises(CombinationUnsupported, match="fp16"):
        load_inference("resnet18", precision="fp16", device="cpu")
    with pytest.raises(WorkloadError, match="not an inference"):
        make_inputs("lstm_lm_train", 1)


def test_local_weights_are_loaded_and_named(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(123)
    source = build_classifier("mobilenet_v2")
    path = tmp_path / "mobilenet_v2.pt"
    torch.save(source.state_dict(), path)
    model = load_inference("mobilenet_v2", batch_size=1, weights_dir=tmp_path)
    assert model.params()["weights"] == str(path)
    loaded = model.model.state_dict()  # type: ignore[attr-defined]
    for key, value in source.state_dict().items():
        assert torch.equal(loaded[key], value), key
    # without a file for the workload: random weights, and params say so
    other = load_inference("resnet18", batch_size=1, weights_dir=tmp_path, first_call=False)
    assert other.params()["weights"] == "random" and other.output is None


def test_weights_of_another_architecture_are_refused(tmp_path: Path) -> None:
    import torch

    torch.save(build_classifier("mobilenet_v2").state_dict(), tmp_path / "resnet18.pt")
    with pytest.raises(LocalFileError, match=r"resnet18\.pt.*does not match"):
        load_inference("resnet18", weights_dir=tmp_path, first_call=False)


def test_a_weights_file_that_is_not_a_state_dict_is_refused(tmp_path: Path) -> None:
    import torch

    torch.save([1, 2, 3], tmp_path / "resnet18.pt")
    with pytest.raises(LocalFileError, match="not a state_dict"):
        load_inference("resnet18", weights_dir=tmp_path, first_call=False)
    (tmp_path / "alexnet.pt").write_bytes(b"not a torch file")
    with pytest.raises(LocalFileError, match="cannot be read"):
        load_inference("alexnet", weights_dir=tmp_path, first_call=False)


# ---- NLP -----------------------------------------------------------------------------


def test_tokens_are_512_long_with_cls_sep_and_mask() -> None:
    import torch

    from pytest_edgeenergy.workloads.nlp import CLS_ID, SEP_ID, SEQ_LEN_TOKENS, make_tokens

    ids, mask = make_tokens(2)
    assert ids.shape == mask.shape == (2, SEQ_LEN_TOKENS) == (2, 512)
    assert (ids[:, 0] == CLS_ID).all() and (ids[:, -1] == SEP_ID).all()
    assert (mask == 1).all() and ids.dtype == torch.long
    with pytest.raises(WorkloadError, match="seq_len"):
        make_tokens(1, seq_len=1)


def test_bert_tiny_encodes_512_tokens() -> None:
    pytest.importorskip("transformers", reason="NLP workloads need transformers")
    model = load_inference("bert_tiny", batch_size=1)
    assert model.output == {"shape": [1, 512, 128]}
    p = model.params()
    assert p["layers"] == 2 and p["heads"] == 2 and p["hidden_size"] == 128
    assert 4_300_000 < p["model_params"] < 4_500_000  # BERT-Tiny: 4.4 M


def test_distilbert_config_shape() -> None:
    import torch

    pytest.importorskip("transformers", reason="NLP workloads need transformers")
    from pytest_edgeenergy.workloads.nlp import build_encoder, encoder_facts

    with torch.device("meta"):  # shapes only: nothing allocated
        model = build_encoder("distilbert")
    facts = encoder_facts(model)
    assert facts["layers"] == 6 and facts["heads"] == 12 and facts["hidden_size"] == 768
    assert sum(p.numel() for p in model.parameters()) > 60_000_000
