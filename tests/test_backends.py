"""Across Keras backends: a `.keras` model saved on any backend loads on every
other with the same outputs (the SavedModel export from each backend:
tests/test_backends_export.py).

Each backend runs in its own process (`tests/backend_worker.py`), since the
backend is fixed when Keras is imported.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("tensorflow", "jax", "torch")


def run_worker(backend, *args):
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-m", "tests.backend_worker", *map(str, args)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, f"{backend}: {result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every layer and cell, trained two epochs and saved on each backend."""
    folder = tmp_path_factory.mktemp("backends")
    for backend in BACKENDS:
        run_worker(backend, "save", folder / backend)
    return folder


@pytest.mark.parametrize("target", BACKENDS)
def test_a_model_saved_on_any_backend_loads_on_this_one_with_equal_outputs(
    saved, target
):
    run_worker(target, "load", saved, *BACKENDS)
    report = json.loads((saved / f"loaded_on_{target}.json").read_text())
    assert sorted(report) == sorted(BACKENDS)
    for source, models in report.items():
        assert len(models) == 7, models
        for name, result in models.items():
            # Float32 kernels of different backends round differently.
            assert result["difference"] <= 1e-5, (source, target, name, result)
            # With its optimizer, too (measured on Keras 3.15: every pair).
            assert result["loads_compiled"], (source, target, name)
