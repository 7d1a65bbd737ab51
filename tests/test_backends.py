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


def start_worker(backend, *args):
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.backend_worker", *map(str, args)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def run_workers(commands):
    """Runs `{backend: arguments}` at once (most of each process is importing
    and compiling) and waits for all of them."""
    processes = {b: start_worker(b, *args) for b, args in commands.items()}
    try:
        for backend, process in processes.items():
            _, stderr = process.communicate(timeout=600)
            assert process.returncode == 0, f"{backend}: {stderr[-3000:]}"
    finally:
        for process in processes.values():
            process.kill()
            process.wait()


def run_worker(backend, *args):
    run_workers({backend: args})


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Every layer and cell, trained two epochs and saved on each backend,
    then loaded on each: `{target: {source: {model: result}}}`."""
    folder = tmp_path_factory.mktemp("backends")
    run_workers({b: ("save-load", folder, *BACKENDS) for b in BACKENDS})
    return {
        target: json.loads((folder / f"loaded_on_{target}.json").read_text())
        for target in BACKENDS
    }


@pytest.mark.parametrize("target", BACKENDS)
def test_a_model_saved_on_any_backend_loads_on_this_one_with_equal_outputs(
    loaded, target
):
    report = loaded[target]
    assert sorted(report) == sorted(BACKENDS)
    for source, models in report.items():
        assert len(models) == 7, models
        for name, result in models.items():
            # Float32 kernels of different backends round differently.
            assert result["difference"] <= 1e-5, (source, target, name, result)
            # With its optimizer, too (measured on Keras 3.15: every pair).
            assert result["loads_compiled"], (source, target, name)
