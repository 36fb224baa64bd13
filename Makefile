# The two commands (see README): `make run` runs the benchmark suites (on a virtual board
# when no Jetson is present); `make test` runs lint, types and the tests. Both create the
# virtual environment .venv on first use, so they work on a fresh machine. `make test` also
# builds the manual (docs/, mkdocs.yml) with `mkdocs build --strict`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# setup.py and the C file: the native sampler extension, built in place by `pip install -e`.
BUILD_INPUTS := pyproject.toml setup.py pytest_edgeenergy/meters/_preadring.c
STAMP := $(VENV)/.installed-$(shell cat $(BUILD_INPUTS) | cksum | cut -d' ' -f1)
# On a Jetson the suites run on the board itself; elsewhere on a virtual Orin Nano.
BOARD ?= $(shell test -e /etc/nv_tegra_release && echo "" || echo "--edge-board=sim:orin-nano")
POWER_MODE ?= 15W
# The main job's counts: sized to finish in about 6 minutes on a 2-core CPU machine. The
# studies' own counts (3,200 items x 10 repeats) are the plugin's defaults: `make run
# SUITE_ARGS=` runs them. No --batch-size here: each suite runs at its own documented batch
# size (8; the interleaved suite's inference batch 4), which a --batch-size in ARGS would
# override in every suite. torch.compile variants are slow on CPU (tens of seconds
# to compile each model): run them on their own with ARGS='-k compile'. ONNX Runtime's int8
# (dynamic quantisation, ConvInteger on CNNs) is slower than its fp32 on a CPU and would add
# about 2 minutes: the main job runs onnxruntime fp32; ARGS='-k onnxruntime-int8' runs it.
# The interleaved suite (training + inference at once) runs its alternating scheduler only;
# ARGS='-k threads' runs the naive two-thread form.
SUITE_ARGS ?= --power-mode=$(POWER_MODE) --edge-items=16 --edge-repeats=3 -k "not compile and not onnxruntime-int8 and not threads"

.PHONY: run test lint docs bench clean

# torch/torchvision: kept if already importable (on a Jetson: NVIDIA's wheels); otherwise
# installed straight from PyPI with any local wheel folder switched off, because a CPU-only
# torch from a local folder does not match PyPI's torchvision.
TORCH_SPEC ?= torch==2.13.0 torchvision==0.28.0
# The history tests start a real PostgreSQL server (tests/pg_server.py): Debian's
# postgresql package is installed when its initdb is missing. The fleet page's test opens
# the page in headless Chromium: Debian's chromium package, installed when missing.

$(STAMP): $(BUILD_INPUTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c 'import torch, torchvision' 2>/dev/null || \
	    PIP_FIND_LINKS= $(BIN)/python -m pip install --isolated -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q -e '.[test,lint,analysis,suites,search,onnx,docs,history]'
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>&1 || \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) || \
	    echo 'make: no PostgreSQL server binaries (initdb) and apt-get could not install postgresql: the history tests need them' >&2
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    (apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1) || \
	    echo 'make: no chromium and apt-get could not install it: the fleet page test (tests/test_history_page.py) opens the page in headless Chromium' >&2
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/pytest suites/ $(BOARD) $(SUITE_ARGS) $(ARGS)

# In parallel (pytest-xdist): a module's tests share one worker (--dist loadfile); more
# workers than cores, since much test time waits on idle baselines, windows and subprocesses
# (2 cores, 2026-11-28: 6 workers 6 min 6 s, 4 workers 6 min 18 s).
TEST_WORKERS ?= 6
# The tests start hundreds of Python processes (child pytest runs, virtual boards, the CLI):
# with PYTHONDONTWRITEBYTECODE set (as in many container images) each of them would compile
# this package and rewrite pytest plugins' assertions from source again; here the compiled
# files are kept (__pycache__, ignored by git) as Python does by default.
test: $(STAMP) lint docs
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest tests/ -rs -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check pytest_edgeenergy tests suites benchmarks
	$(BIN)/mypy

# The manual: any warning (a broken link or anchor, a page missing from nav) fails the build.
# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, not about this site.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

bench: $(STAMP)
	$(BIN)/pytest benchmarks/ --benchmark-only --benchmark-columns=min,median,mean,stddev,rounds $(ARGS)

clean:
	rm -rf $(VENV) .tox .mypy_cache .ruff_cache .pytest_cache .hypothesis .benchmarks site
