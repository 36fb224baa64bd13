"""The workload worker of pytest-edgeenergy: builds a workload in THIS interpreter (another
Python, a container) and makes its calls on the harness's word, over a pipe.

Standard library only, Python 3.6 or newer, and nothing of pytest_edgeenergy: the harness
starts ``PYTHON -u -c BOOTSTRAP`` (behind ``--edge-workload-prefix`` when given, e.g.
``docker run --rm -i ...``) and writes this file's text on the worker's stdin, its length
on the first line; nothing needs to be installed where the worker runs. torch, torchvision
and transformers are imported inside the builders, and only the APIs their old releases
have too are used (NVIDIA's wheels for JetPack 4 are torch 1.10 for Python 3.6).

Protocol: one JSON object per line. The worker first says ``{"hello": {...}}``; then each
request ``{"op": ...}`` on stdin gets one reply on the worker's stdout (the original fd 1:
whatever else the process prints goes to stderr), ``{"ok": true, ...}`` or ``{"ok": false,
"error": "Type: message", "unsupported": bool, "traceback": "..."}``. While it makes calls
it says ``{"beat": CALLS_DONE}`` at most once a second, so the harness tells a long batch
from a hung one. A failed request leaves the worker ready for the next; EOF on stdin ends
it.

Requests: ``probe`` (import torch and the given modules; versions, CUDA), ``build`` (the
workload of a spec, with its first call), ``reset`` (garbage collected, memory peaks reset:
what the harness asks before opening a window), ``calls`` (``n`` calls, each timed by this
process's ``time.perf_counter``, CUDA synchronised after each; the reply holds every
latency, little-endian float64 in base64, and the memory peaks since ``reset``), ``timing``
(a training step's minibatch records), ``close``.
"""

import base64
import gc
import importlib
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
import traceback
import zlib
from array import array

PROTOCOL = 1
BEAT_S = 1.0
"""At most one beat per this many seconds while calls run (unless a request says less)."""
CLEAR_REFS = "/proc/self/clear_refs"
STATUS = "/proc/self/status"


# ---- versions and the APIs of old releases ----------------------------------------------


def version_tuple(text):
    """``"1.10.0a0+git36449ea"`` -> ``(1, 10, 0)``; missing or odd parts read as 0."""
    out = []
    for part in str(text).split("+")[0].split(".")[:3]:
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        out.append(int(digits or "0"))
    while len(out) < 3:
        out.append(0)
    return tuple(out)


def classifier_kwargs(torchvision_version):
    """How a torchvision model builder is asked for random weights: ``weights=None`` since
    torchvision 0.13, ``pretrained=False`` before (JetPack 4 and 5 wheels)."""
    if version_tuple(torchvision_version) >= (0, 13, 0):
        return {"weights": None}
    return {"pretrained": False}


def detector_kwargs(torchvision_version):
    """As :func:`classifier_kwargs`, with the backbone's weights too."""
    if version_tuple(torchvision_version) >= (0, 13, 0):
        return {"weights": None, "weights_backbone": None}
    return {"pretrained": False, "pretrained_backbone": False}


def load_kwargs(torch_version):
    """``torch.load``'s arguments for a weights file: ``weights_only=True`` (data, never
    code) where torch has it (1.13 and later)."""
    if version_tuple(torch_version) >= (1, 13, 0):
        return {"weights_only": True}
    return {}


def no_grad_factory(torch):
    """``torch.inference_mode`` (torch 1.9 and later), else ``torch.no_grad``."""
    return getattr(torch, "inference_mode", None) or torch.no_grad


def error_line(exc):
    text = str(exc).strip()
    first = text.splitlines()[0][:300] if text else "(no message)"
    return f"{type(exc).__name__}: {first}"


# ---- memory ---------------------------------------------------------------------------


def status_bytes(key):
    """A ``kB`` field of ``/proc/self/status`` in bytes, None where unreadable."""
    try:
        with open(STATUS) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak():
    """Reset ``VmHWM`` to the current RSS; False where the kernel refuses."""
    try:
        with open(CLEAR_REFS, "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


# ---- stdlib workloads -------------------------------------------------------------------


class Workload:
    """What a builder returns: one call, its device, facts and first output."""

    def __init__(self, call, device="cpu", facts=None, output=None, sync=None):
        self.call = call
        self.device = device
        self.facts = facts or {}
        self.output = output
        self.sync = sync
        self.cuda = None
        """The torch module when the workload runs on CUDA (peak memory), else None."""

    def timing(self):
        return None

    def close(self):
        pass


def build_zlib(spec):
    """Compress ``bytes`` seeded random bytes at ``level`` (a real CPU load, no torch)."""
    size = int(spec.get("bytes", 65536))
    level = int(spec.get("level", 6))
    data = random.Random(int(spec.get("seed", 0))).getrandbits(8 * size).to_bytes(size, "little")

    def call():
        return zlib.compress(data, level)

    compressed = len(call())
    return Workload(call, facts={"bytes": size, "level": level, "compressed_bytes": compressed})


def sleep_until(deadline):
    """Sleep until ``time.monotonic()`` reaches ``deadline`` (the clock every process
    shares)."""
    left = deadline - time.monotonic()
    while left > 0:
        time.sleep(left)
        left = deadline - time.monotonic()


def build_sleep(spec):
    """Sleep until ``seconds`` after the call began: work of a determined duration. With
    ``aligned``, until the next multiple of ``seconds`` of the monotonic clock instead:
    ``n`` calls back to back then last ``n`` periods (less the first call's phase), whatever
    each call's wake-up delay, and the same in any process."""
    seconds = float(spec["seconds"])
    aligned = bool(spec.get("aligned"))
    monotonic = time.monotonic

    def call():
        if aligned:
            sleep_until((int(monotonic() / seconds) + 1) * seconds)
        else:
            sleep_until(monotonic() + seconds)

    return Workload(call, facts={"seconds": seconds, "aligned": aligned})


def build_callable(spec):
    """``module.name(**kwargs)``: a zero-argument callable (one call), or a dict with
    ``call`` and optionally ``facts``; ``path`` lists directories put first on sys.path."""
    for entry in reversed(spec.get("path") or []):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    module = importlib.import_module(spec["module"])
    made = getattr(module, spec["name"])(**(spec.get("kwargs") or {}))
    facts = {"callable": "{}:{}".format(spec["module"], spec["name"])}
    if isinstance(made, dict):
        facts.update(made.get("facts") or {})
        made = made["call"]
    if not callable(made):
        raise TypeError(
            "{}:{} returned {}, not a callable".format(
                spec["module"], spec["name"], type(made).__name__
            )
        )
    return Workload(made, facts=facts)


# ---- torch workloads ----------------------------------------------------------------------


def import_torch():
    import torch

    return torch


def need_module(name, what):
    """Import ``name``; a module missing here makes the workload unsupported (skipped)."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise NotImplementedError(
            f"{what} needs {name}, which does not import here ({error_line(e)})"
        ) from None


def cuda_sync(torch, device):
    return torch.cuda.synchronize if str(device).startswith("cuda") else None


def load_weights(torch, model, path, device):
    """A state_dict file (or ``{"state_dict": ...}``) loaded strictly into ``model``."""
    obj = torch.load(path, map_location=device, **load_kwargs(torch.__version__))
    if isinstance(obj, dict) and isinstance(obj.get("state_dict"), dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ValueError(f"weights file {path}: holds a {type(obj).__name__}, not a state_dict")
    model.load_state_dict(obj, strict=True)


def quantize(torch, model, engines):
    """Dynamic int8 quantisation of Linear and LSTM layers, with the facts the report keeps."""
    supported = list(torch.backends.quantized.supported_engines)
    engine = next((e for e in engines if e in supported), None)
    if engine is None:
        raise NotImplementedError("int8: this torch build has no quantised-kernel engine")
    if torch.backends.quantized.engine in (None, "none"):
        torch.backends.quantized.engine = engine
    targets = (torch.nn.Linear, torch.nn.LSTM)
    layers = [m for m in model.modules() if isinstance(m, targets)]
    if not layers:
        raise NotImplementedError(
            f"int8: {type(model).__name__} has no Linear/LSTM layer for dynamic quantisation"
        )
    total = sum(p.numel() for p in model.parameters())
    converted = sum(p.numel() for m in layers for p in m.parameters())
    try:
        from torch.ao.quantization import quantize_dynamic
    except ImportError:  # torch before 1.10
        from torch.quantization import quantize_dynamic
    qmodel = quantize_dynamic(model, set(targets), dtype=torch.qint8)
    return qmodel, {
        "quantization": "dynamic int8 (Linear, LSTM)",
        "quantized_modules": len(layers),
        "quantized_param_fraction": round(float(converted) / total, 4) if total else 0.0,
        "quant_engine": str(torch.backends.quantized.engine),
    }


def inference_workload(torch, model, inputs, spec, facts, describe):
    """``model`` (fp32, on the CPU) made ready to measure: local weights, device,
    precision, no autograd; one first call whose output ``describe`` summarises."""
    device = spec.get("device", "cpu")
    weights = spec.get("weights")
    if weights:
        load_weights(torch, model, weights, "cpu")
    facts["model_params"] = sum(p.numel() for p in model.parameters())
    model.eval()
    model.requires_grad_(False)
    precision = spec.get("precision", "fp32")
    if precision == "fp16":
        model = model.half()
    elif precision == "int8":
        model, quant_facts = quantize(torch, model, spec.get("quant_engines") or [])
        facts.update(quant_facts)
    model = model.to(device)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    inputs = [
        x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device) for x in inputs
    ]
    args = tuple(inputs) if spec.get("inputs") != "list" else (inputs,)
    no_grad = no_grad_factory(torch)

    def call():
        with no_grad():
            return model(*args)

    sync = cuda_sync(torch, device)
    first = call()
    if sync is not None:
        sync()
    work = Workload(call, device=device, facts=facts, output=describe(first), sync=sync)
    work.cuda = torch if sync is not None else None
    return work


def build_classification(spec):
    torch = import_torch()
    tv = need_module("torchvision", spec["arch"])
    builder = getattr(tv.models, spec["arch"], None)
    if builder is None:
        raise NotImplementedError(
            "torchvision {} has no models.{}".format(tv.__version__, spec["arch"])
        )
    model = builder(num_classes=int(spec["num_classes"]), **classifier_kwargs(tv.__version__))
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    px = int(spec["image_px"])
    x = torch.randn(int(spec["batch_size"]), 3, px, px, generator=gen)
    return inference_workload(torch, model, [x], spec, {}, lambda out: {"shape": list(out.shape)})


def describe_detections(out):
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], list):
        out = out[1]
    return {
        "images": len(out),
        "boxes_per_image": [int(d["boxes"].shape[0]) for d in out],
        "keys": sorted(set(k for d in out for k in d)),
    }


def build_detection(spec):
    torch = import_torch()
    tv = need_module("torchvision", spec["arch"])
    try:
        detection = importlib.import_module("torchvision.models.detection")
        builder = getattr(detection, spec["arch"])
    except (ImportError, AttributeError):
        raise NotImplementedError(
            f"torchvision {tv.__version__} has no models.detection.{spec['arch']} "
            "(SSDLite came in torchvision 0.10)"
        ) from None
    kwargs = dict(spec.get("model_kwargs") or {})
    kwargs.update(detector_kwargs(tv.__version__))
    model = builder(num_classes=int(spec["num_classes"]), **kwargs)
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    px = int(spec["image_px"])
    batch = torch.rand(int(spec["batch_size"]), 3, px, px, generator=gen)
    spec = dict(spec, inputs="list")
    return inference_workload(torch, model, list(batch.unbind(0)), spec, {}, describe_detections)


def build_nlp(spec):
    torch = import_torch()
    transformers = need_module("transformers", spec["workload"])
    config = getattr(transformers, spec["config_class"])(**spec["config"])
    inner = getattr(transformers, spec["model_class"])(config)
    facts = {}
    for key, names in (
        ("hidden_size", ("hidden_size", "dim")),
        ("layers", ("num_hidden_layers", "n_layers")),
        ("heads", ("num_attention_heads", "n_heads")),
        ("attn_implementation", ("_attn_implementation",)),
    ):
        value = next((getattr(config, n) for n in names if getattr(config, n, None)), None)
        if value is not None:
            facts[key] = value
    if spec.get("weights"):
        load_weights(torch, inner, spec["weights"], "cpu")
        spec = dict(spec, weights=None)

    class LastHiddenState(torch.nn.Module):
        def __init__(self, wrapped):
            super().__init__()
            self.inner = wrapped

        def forward(self, input_ids, attention_mask):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
            return out[0]

    tokens = spec["tokens"]
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    shape = (int(spec["batch_size"]), int(tokens["seq_len"]))
    ids = torch.randint(
        int(tokens["first_word_id"]), int(tokens["vocab_size"]), shape, generator=gen
    )
    ids[:, 0] = int(tokens["cls_id"])
    ids[:, -1] = int(tokens["sep_id"])
    mask = torch.ones(shape, dtype=torch.long)
    model = LastHiddenState(inner)
    return inference_workload(
        torch, model, [ids, mask], spec, facts, lambda out: {"shape": list(out.shape)}
    )


# ---- training --------------------------------------------------------------------------


class TrainingStep:
    """One call = one minibatch: fetch, then copy + forward + loss + backward + step (CUDA
    synchronised); every minibatch's (epoch, index, fetch_s, compute_s, e2e_s) is kept."""

    def __init__(self, torch, model, optimizer, loss_fn, batches, device, clip):
        self.torch = torch
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.batches = batches
        self.device = device
        self.clip = clip
        self.sync = cuda_sync(torch, device)
        self.records = []
        self.epoch = 0
        self.index = 0
        self.iterator = None
        self.loss_first = None
        self.loss_last = None

    def __call__(self):
        perf = time.perf_counter
        t0 = perf()
        inputs, targets = self.next_batch()
        t1 = perf()
        inputs = inputs.to(self.device, non_blocking=True)
        targets = targets.to(self.device, non_blocking=True)
        try:
            self.optimizer.zero_grad(set_to_none=True)
        except TypeError:  # torch before 1.7
            self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(inputs), targets)
        loss.backward()
        if self.clip is not None:
            self.torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        self.loss_last = loss.detach()
        if self.loss_first is None:
            self.loss_first = self.loss_last
        if self.sync is not None:
            self.sync()
        t2 = perf()
        self.records.append([self.epoch, self.index, t1 - t0, t2 - t1, t2 - t0])
        self.index += 1

    def next_batch(self):
        if self.iterator is None:
            self.iterator = iter(self.batches)
        try:
            return next(self.iterator)
        except StopIteration:
            self.epoch += 1
            self.index = 0
            self.iterator = iter(self.batches)
            return next(self.iterator)


class TokenBatches:
    """``(tokens, next tokens)`` slices of a fixed random corpus; re-iterable."""

    def __init__(self, corpus, seq_tokens, minibatches):
        self.corpus = corpus
        self.seq_tokens = seq_tokens
        self.minibatches = minibatches

    def __iter__(self):
        for i in range(self.minibatches):
            start = i * self.seq_tokens
            chunk = self.corpus[:, start : start + self.seq_tokens + 1]
            yield chunk[:, :-1], chunk[:, 1:]

    def __len__(self):
        return self.minibatches


def lstm_language_model(torch, vocab, embed, hidden, layers, dropout):
    """The word-level LSTM language model with its decoder tied to the embedding."""

    class LSTMLanguageModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(dropout)
            self.encoder = torch.nn.Embedding(vocab, embed)
            self.rnn = torch.nn.LSTM(embed, hidden, layers, dropout=dropout, batch_first=True)
            self.decoder = torch.nn.Linear(hidden, vocab)
            if embed == hidden:
                self.decoder.weight = self.encoder.weight

        def forward(self, tokens):
            out, _ = self.rnn(self.drop(self.encoder(tokens)))
            return self.decoder(self.drop(out))

    return LSTMLanguageModel()


def draw_jpegs(root, count, size_px, classes, seed, quality):
    """``count`` synthetic JPEGs in ImageFolder layout (``class_K/img_NNNN.jpg``): a smooth
    random texture with shapes, pixels from a seeded ``random.Random``."""
    from PIL import Image, ImageDraw

    bicubic = getattr(Image, "Resampling", Image).BICUBIC
    for k in range(classes):
        os.makedirs(os.path.join(root, f"class_{k}"))
    for i in range(count):
        label = i % classes
        rng = random.Random(f"{seed}:{i}")
        texture = Image.frombytes("RGB", (12, 12), bytes(rng.randrange(256) for _ in range(432)))
        img = texture.resize((size_px, size_px), bicubic)
        draw = ImageDraw.Draw(img)
        hue = int(255 * label / max(1, classes))
        for _ in range(rng.randint(3, 8)):
            x0, y0 = rng.randrange(size_px), rng.randrange(size_px)
            x1 = min(size_px - 1, x0 + rng.randint(8, size_px // 2))
            y1 = min(size_px - 1, y0 + rng.randint(8, size_px // 2))
            colour = ((hue + rng.randrange(64)) % 256, rng.randrange(256), rng.randrange(256))
            if rng.random() < 0.5:
                draw.ellipse((x0, y0, x1, y1), fill=colour)
            else:
                draw.rectangle((x0, y0, x1, y1), fill=colour)
        name = os.path.join(root, f"class_{label}", f"img_{i:04d}.jpg")
        img.save(name, "JPEG", quality=quality)


class TrainingWorkload(Workload):
    def __init__(self, step, facts, per_epoch, scratch):
        Workload.__init__(self, step, device=step.device, facts=facts, sync=None)
        self.step = step
        self.per_epoch = per_epoch
        self.scratch = scratch
        self.cuda = step.torch if step.sync is not None else None

    def timing(self):
        step = self.step
        return {
            "records": step.records,
            "minibatches_per_epoch": self.per_epoch,
            "loss_first": float(step.loss_first) if step.loss_first is not None else None,
            "loss_last": float(step.loss_last) if step.loss_last is not None else None,
        }

    def close(self):
        self.step.iterator = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def build_training(spec):
    """A training step (``lstm_lm`` on random tokens, or an image classifier on an
    ImageFolder through a decoding and augmenting DataLoader); its first minibatch runs
    here, as in the harness's own process."""
    torch = import_torch()
    device = spec.get("device", "cpu")
    batch_size = int(spec["batch_size"])
    seed = int(spec.get("seed", 0))
    torch.manual_seed(seed)
    scratch = None
    facts = {}
    if spec["model"] == "lstm_lm":
        lm = spec["lstm"]
        model = lstm_language_model(
            torch, lm["vocab"], lm["embed"], lm["hidden"], lm["layers"], lm["dropout"]
        )
        gen = torch.Generator().manual_seed(seed)
        length = lm["minibatches"] * lm["seq_tokens"] + 1
        corpus = torch.randint(0, lm["vocab"], (batch_size, length), generator=gen)
        batches = TokenBatches(corpus, lm["seq_tokens"], lm["minibatches"])
        per_epoch = lm["minibatches"]
        optimizer_kwargs = {"lr": lm["lr"]}
        clip = lm["clip"]

        def loss_fn(logits, targets):
            return torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
            )
    else:
        tv = need_module("torchvision", spec["workload"])
        image = spec["image"]
        root = spec.get("data")
        if not root:
            synthetic = image["synthetic"]
            scratch = tempfile.mkdtemp(prefix="edgeenergy-jpegs-")
            root = os.path.join(scratch, "images")
            draw_jpegs(
                root,
                synthetic["count"],
                synthetic["size_px"],
                synthetic["classes"],
                seed,
                synthetic["quality"],
            )
        transforms = tv.transforms
        transform = transforms.Compose(
            [
                transforms.RandomResizedCrop(image["crop_px"]),
                transforms.RandomHorizontalFlip(),
                transforms.ToTensor(),
                transforms.Normalize(image["mean"], image["std"]),
            ]
        )
        dataset = tv.datasets.ImageFolder(root, transform=transform)
        if len(dataset) < batch_size:
            raise ValueError(
                f"image folder {root}: {len(dataset)} images, fewer than one batch of {batch_size}"
            )
        workers = int(image["loader_workers"])
        batches = torch.utils.data.DataLoader(
            dataset,
            batch_size=batch_size,
            shuffle=True,
            drop_last=True,
            num_workers=workers,
            pin_memory=str(device).startswith("cuda"),
            generator=torch.Generator().manual_seed(seed),
        )
        builder = getattr(tv.models, spec["arch"], None)
        if builder is None:
            raise NotImplementedError(
                "torchvision {} has no models.{}".format(tv.__version__, spec["arch"])
            )
        n_classes = max(int(image["min_classes"]), len(dataset.classes))
        model = builder(num_classes=n_classes, **classifier_kwargs(tv.__version__))
        per_epoch = len(batches)
        optimizer_kwargs = dict(image["sgd"])
        clip = None
        loss_fn = torch.nn.functional.cross_entropy
        facts["loader_workers"] = workers
    if spec.get("weights"):
        load_weights(torch, model, spec["weights"], "cpu")
    model = model.to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), **optimizer_kwargs)
    facts["model_params"] = sum(p.numel() for p in model.parameters())
    step = TrainingStep(torch, model, optimizer, loss_fn, batches, device, clip)
    work = TrainingWorkload(step, facts, per_epoch, scratch)
    try:
        step()
    except BaseException:
        work.close()
        raise
    return work


BUILDERS = {
    "zlib": build_zlib,
    "sleep": build_sleep,
    "callable": build_callable,
    "classification": build_classification,
    "detection": build_detection,
    "nlp": build_nlp,
    "training": build_training,
}


# ---- the protocol ---------------------------------------------------------------------


def probe(modules):
    """This interpreter and its deep-learning stack: torch, each module asked for, CUDA."""
    info = {
        "torch": None,
        "torch_error": None,
        "cuda_available": None,
        "cuda_device": None,
        "modules": {},
        "quant_engines": [],
    }
    try:
        torch = import_torch()
    except Exception as e:  # a broken install raises more than ImportError
        info["torch_error"] = error_line(e)
        return info
    info["torch"] = str(torch.__version__)
    info["cuda_available"] = bool(torch.cuda.is_available())
    if info["cuda_available"]:
        info["cuda_device"] = str(torch.cuda.get_device_name(0))
    info["quant_engines"] = [str(e) for e in torch.backends.quantized.supported_engines]
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as e:
            info["modules"][name] = {"version": None, "error": error_line(e)}
        else:
            version = getattr(module, "__version__", None)
            info["modules"][name] = {
                "version": None if version is None else str(version),
                "error": None,
            }
    return info


class Worker:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer
        self.workload = None
        self.memory_reset = False

    def send(self, message):
        self.writer.write((json.dumps(message) + "\n").encode("utf-8"))
        self.writer.flush()

    def serve(self):
        self.send(
            {
                "hello": {
                    "protocol": PROTOCOL,
                    "pid": os.getpid(),
                    "python": sys.executable,
                    "python_version": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "machine": platform.machine(),
                }
            }
        )
        while True:
            line = self.reader.readline()
            if not line:
                return
            request = json.loads(line.decode("utf-8"))
            op = request.get("op")
            if op == "close":
                self.close()
                self.send({"ok": True})
                return
            handler = getattr(self, "op_" + str(op), None)
            try:
                if handler is None:
                    raise ValueError(f"unknown request {op!r}")
                reply = handler(request)
            except Exception as e:
                reply = {
                    "ok": False,
                    "error": error_line(e),
                    "unsupported": isinstance(e, (NotImplementedError, ImportError)),
                    "traceback": traceback.format_exc()[-4000:],
                }
            self.send(reply)

    def close(self):
        if self.workload is not None:
            self.workload.close()
            self.workload = None

    def op_probe(self, request):
        return {"ok": True, "info": probe(request.get("modules") or [])}

    def op_build(self, request):
        spec = request["spec"]
        builder = BUILDERS.get(spec.get("kind"))
        if builder is None:
            raise NotImplementedError(
                "no workload kind {!r} here; known: {}".format(
                    spec.get("kind"), ", ".join(sorted(BUILDERS))
                )
            )
        self.close()
        memory_reset = reset_peak()
        t0 = time.perf_counter()
        self.workload = builder(spec)
        return {
            "ok": True,
            "facts": self.workload.facts,
            "output": self.workload.output,
            "device": self.workload.device,
            "build_s": time.perf_counter() - t0,
            "memory_peak_bytes": status_bytes("VmHWM") if memory_reset else None,
        }

    def built(self):
        if self.workload is None:
            raise ValueError("no workload built yet")
        return self.workload

    def op_reset(self, request):
        work = self.built()
        gc.collect()
        self.memory_reset = reset_peak()
        if work.cuda is not None:
            work.cuda.cuda.synchronize()
            work.cuda.cuda.reset_peak_memory_stats()
        return {"ok": True, "memory_reset": self.memory_reset}

    def op_calls(self, request):
        work = self.built()
        n = int(request["n"])
        beat_s = float(request.get("beat_s", BEAT_S))
        call, sync = work.call, work.sync
        perf = time.perf_counter
        latencies = array("d")
        append = latencies.append
        next_beat = perf() + beat_s
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for i in range(n):
                t0 = perf()
                call()
                if sync is not None:
                    sync()
                t1 = perf()
                append(t1 - t0)
                if t1 >= next_beat:
                    self.send({"beat": i + 1})
                    next_beat = t1 + beat_s
        finally:
            if gc_was_enabled:
                gc.enable()
        if sys.byteorder != "little":
            latencies.byteswap()
        return {
            "ok": True,
            "calls": n,
            "latencies_f64le_b64": base64.b64encode(latencies.tobytes()).decode("ascii"),
            "memory_peak_bytes": status_bytes("VmHWM") if self.memory_reset else None,
            "cuda_peak_bytes": (
                int(work.cuda.cuda.max_memory_allocated()) if work.cuda is not None else None
            ),
        }

    def op_timing(self, request):
        return {"ok": True, "timing": self.built().timing()}


def main():
    """Serve the harness: protocol on the original stdout, everything else to stderr."""
    writer = os.fdopen(os.dup(1), "wb", 0)
    os.dup2(2, 1)
    reader = getattr(sys.stdin, "buffer", sys.stdin)
    worker = Worker(reader, writer)
    try:
        worker.serve()
    finally:
        worker.close()


if __name__ == "__main__":
    main()
