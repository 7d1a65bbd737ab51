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
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("tensorflow", "jax", "torch")
# Float32 kernels of different backends round differently: relative to the
# output's scale, 2e-8 to 3e-6 between backends (measured 2026-11-24), except
# for the iNALU, whose second hidden unit cancels to 0.006 on one input: the
# next layer's log|h| turns the rounding of its O(1) terms, about 1e-7, into
# 1.2e-5 (saved on torch, loaded on tensorflow, on one machine; under 1e-5 on
# another). A load that loses or changes a weight is off by far more.
TOLERANCE = {"inalu": 1e-4}


def start_worker(backend, *args):
    """The worker's process on `backend`, its stderr in a temporary file: a
    pipe nobody reads while the workers wait for one another could fill."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    stderr = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.backend_worker", *map(str, args)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
    )  # fmt: skip
    return process, stderr


def run_workers(commands):
    """Runs `{backend: arguments}` at once (most of each process is importing
    and compiling) and waits for all of them."""
    workers = {b: start_worker(b, *args) for b, args in commands.items()}
    try:
        for backend, (process, stderr) in workers.items():
            process.wait(timeout=600)
            stderr.seek(0)
            assert process.returncode == 0, f"{backend}: {stderr.read()[-3000:]}"
    finally:
        for process, stderr in workers.values():
            process.kill()
            process.wait()
            stderr.close()


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
        assert len(models) == 8, models
        for name, result in models.items():
            tolerance = TOLERANCE.get(name, 1e-5)
            assert result["difference"] <= tolerance, (source, target, name, result)
            # With its optimizer, too (measured on Keras 3.15: every pair).
            assert result["loads_compiled"], (source, target, name)
