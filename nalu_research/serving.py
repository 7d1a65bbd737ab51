"""Export-and-serve, written once for every experiment.

`export_and_serve(exports, export_dir)` exports each `Export` as a TensorFlow
SavedModel (`keras_nalu.export_saved_model`: written to a temporary folder,
verified against the Keras model, moved into place), then serves every one
from a fresh Python process that imports TensorFlow alone (never
`keras_nalu`), as a user's server would, and returns what it
served. The skeleton (`nalu_research.experiment`) calls it under the chief,
with the `Export`s an experiment's `exports` gives.
"""

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import keras
import numpy as np

from keras_nalu import export_saved_model


@dataclasses.dataclass
class Export:
    """A model to export and serve.

    Attributes:
        name: Its folder under the export root (`""`: the root itself), and
            its key in what `export_and_serve` returns.
        model: The Keras model.
        inputs: What the fresh process serves it (an array; strings for a
            model that reads text).
        sample: The input its export is verified on (default `inputs`).
    """

    name: str
    model: Any
    inputs: Any
    sample: Any = None


def can_export(what):
    """Whether `keras_nalu.export_saved_model` runs on this backend (on
    tensorflow and jax, not on torch); when it does not, prints that `what`
    (e.g. "the models") is not exported, and how to export it."""
    backend = keras.backend.backend()
    if backend in ("tensorflow", "jax"):
        try:  # the export imports it anyway
            import tensorflow  # noqa: F401
        except ImportError:
            print(f"\nNo SavedModel export of {what}: TensorFlow is not installed.")
            return False
        return True
    print(
        f"\nNo SavedModel export of {what} on the {backend} backend (Keras "
        "exports from tensorflow and jax): add --backend tensorflow to export."
    )
    return False


def export_and_serve(exports, export_dir):
    """Exports each of `exports` under `export_dir`, then serves them all
    from one fresh process that imports TensorFlow only.

    Returns `{name: {"path": the SavedModel's folder, "served": its outputs
    on its inputs}}`, the outputs as lists (a dict of them for a model with
    named outputs; text decoded).
    """
    root = Path(export_dir)
    paths = {}
    for export in exports:
        sample = export.inputs if export.sample is None else export.sample
        folder = root / export.name if export.name else root
        paths[export.name] = export_saved_model(export.model, folder, sample)
    served = serve_in_fresh_process({str(paths[e.name]): e.inputs for e in exports})
    return {
        name: {"path": str(path), "served": served[str(path)]}
        for name, path in paths.items()
    }


# Runs in the fresh process: no keras_nalu, no Keras, only TensorFlow.
_SERVE = """
import json, sys
import numpy as np
import tensorflow as tf

def listed(value):
    value = value.numpy()
    if value.dtype == object:
        return np.vectorize(lambda b: b.decode())(value).tolist()
    return value.tolist()

inputs = np.load(sys.argv[1])
paths = json.loads(sys.argv[2])
out = {}
for i, path in enumerate(paths):
    x = inputs[f"x{i}"]
    if np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float32)
    model = tf.saved_model.load(path)  # referenced while it serves
    result = model.serve(tf.constant(x))
    if isinstance(result, dict):
        out[path] = {k: listed(v) for k, v in result.items()}
    else:
        out[path] = listed(result)
assert "keras_nalu" not in sys.modules
print(json.dumps(out))
"""


def serve_in_fresh_process(inputs):
    """`{path: outputs}`: each SavedModel of `inputs` (`{path: array}`)
    loaded by `tf.saved_model.load` and served its array, in a new Python
    process that imports TensorFlow alone."""
    paths = list(inputs)
    with tempfile.TemporaryDirectory() as folder:
        arrays = Path(folder) / "inputs.npz"
        np.savez(
            arrays, **{f"x{i}": np.asarray(inputs[p]) for i, p in enumerate(paths)}
        )
        result = subprocess.run(
            [sys.executable, "-c", _SERVE, str(arrays), json.dumps(paths)],
            capture_output=True,
            text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            check=False,
        )
    if result.returncode != 0:
        raise RuntimeError(f"serving failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])
