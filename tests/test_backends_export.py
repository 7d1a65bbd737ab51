"""SavedModel export across Keras backends: a model trained on JAX exports a
SavedModel that TensorFlow serves; torch's missing export is a clear error.

Apart from tests/test_backends.py so that pytest-xdist (one file per worker)
runs the two slow halves side by side.
"""

import json

import numpy as np
import pytest

from tests.test_backends import run_worker
from tests.test_export import serve_models_in_fresh_process

pytestmark = pytest.mark.processes


def test_a_model_trained_on_jax_exports_a_saved_model_tensorflow_serves(tmp_path):
    run_worker("jax", "export", tmp_path)
    report = json.loads((tmp_path / "exported.json").read_text())
    assert sorted(report) == [
        "cells",
        "inalu",
        "nac_nalu",
        "nau_nmu",
        "nmru",
        "realnpu",
    ]
    served = serve_models_in_fresh_process(
        {
            name: (tmp_path / name, {"x": np.asarray(r["x"], "float32")})
            for name, r in report.items()
        },
        tmp_path,
    )
    for name, result in report.items():
        np.testing.assert_allclose(
            served[name]["x"],
            np.asarray(result["y"]),
            rtol=1e-5,
            atol=1e-6,
            err_msg=name,
        )


def test_saved_model_export_on_torch_is_a_clear_error(tmp_path):
    run_worker("torch", "export", tmp_path)
    report = json.loads((tmp_path / "exported.json").read_text())
    for result in report.values():
        assert "needs the tensorflow or jax backend" in result["error"]
        assert "KERAS_BACKEND=tensorflow" in result["error"]
    assert not any(tmp_path.glob("*/saved_model.pb"))  # nothing half-written
