# Two commands for a fresh machine with python3 and make: `make demo`, `make test`.
# Each creates its environments and installs the package when missing.
# `make docs` builds the documentation site (site/) with warnings as errors.
#
# Two environments, because Keras imports matplotlib and scikit-learn whenever
# they are installed: .venv holds the library with its dev tools and the three
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
RESEARCH_VENV := .venv-research
RESEARCH_PY := $(RESEARCH_VENV)/bin/python
RESEARCH_INSTALLED := $(RESEARCH_VENV)/.installed
PIP_INSTALL := -m pip install --quiet --disable-pip-version-check -e
# pytest-xdist: one worker per core, each test file on one worker (so that a
# file's module-scoped fixtures are built once; measured faster than sharing
# out single tests with those files grouped: 226 s against 264 s for the
# research tests). Not on torch: its suite is shorter than two workers' start
# (measured 26 s alone, 48 s on two).
XDIST ?= -n auto --dist loadfile

export TF_CPP_MIN_LOG_LEVEL ?= 2
export KERAS_BACKEND ?= tensorflow

.PHONY: demo test docs lint format clean

$(INSTALLED): setup.cfg pyproject.toml keras_nalu/__init__.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) $(PIP_INSTALL) ".[dev]"
	touch $(INSTALLED)

$(RESEARCH_INSTALLED): $(INSTALLED)
	test -x $(RESEARCH_PY) || $(PYTHON) -m venv $(RESEARCH_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" > \
	  "$$($(RESEARCH_PY) -c 'import site; print(site.getsitepackages()[0])')/_keras_nalu_base.pth"
	$(RESEARCH_PY) $(PIP_INSTALL) ".[dev,research]"
	touch $(RESEARCH_INSTALLED)

demo: $(INSTALLED)
	$(PY) examples/demo.py

test: $(INSTALLED) $(RESEARCH_INSTALLED)
	$(PY) -m pytest $(XDIST) -m "not slow and not research"
	KERAS_BACKEND=jax $(PY) -m pytest $(XDIST) -m "backends and not slow and not research"
	KERAS_BACKEND=torch $(PY) -m pytest -m "backends and not slow and not research"
	$(RESEARCH_PY) -m pytest $(XDIST) -m "research and not slow"

docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

lint: $(INSTALLED)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(INSTALLED)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) $(RESEARCH_VENV) .pytest_cache .ruff_cache *.egg-info site build dist
