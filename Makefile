# Two commands for a fresh machine with python3 and make: `make demo`, `make test`.
# Each creates .venv and installs the package with its dev extras when missing.
# `make docs` builds the documentation site (site/) with warnings as errors.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2
export KERAS_BACKEND ?= tensorflow

.PHONY: demo test docs lint format clean

$(INSTALLED): setup.cfg pyproject.toml keras_nalu/__init__.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(INSTALLED)

demo: $(INSTALLED)
	$(PY) examples/demo.py

test: $(INSTALLED)
	$(PY) -m pytest

docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

lint: $(INSTALLED)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(INSTALLED)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info site build dist
