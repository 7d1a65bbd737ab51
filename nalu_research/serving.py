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

import numpy as np


@dataclasses.dataclass
class Export:
    """A model to export and serve.

    Attributes:
        name: Its folder under the export root (`""`: the root itself), and
            its key in what `export_and_serve` returns.
        model: The Keras model.
        inputs: What the fresh process serves it (an array; strings for a
            model that reads text; a list of arrays for a model of several
            inputs).
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
    import keras

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
    from keras_nalu import export_saved_model

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

def tensor(x):
    if np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float32)
    return tf.constant(x)

inputs = np.load(sys.argv[1])
paths = json.loads(sys.argv[2])
out = {}
for i, path in enumerate(paths):
    if f"x{i}" in inputs.files:
        x = tensor(inputs[f"x{i}"])
    else:  # a model of several inputs: x{i}_0, x{i}_1, ...
        x = [tensor(inputs[f"x{i}_{j}"]) for j in range(len(inputs.files))
             if f"x{i}_{j}" in inputs.files]
    model = tf.saved_model.load(path)  # referenced while it serves
    result = model.serve(x)
    if isinstance(result, dict):
        out[path] = {k: listed(v) for k, v in result.items()}
    else:
        out[path] = listed(result)
assert "keras_nalu" not in sys.modules
print(json.dumps(out))
"""


def serve_in_fresh_process(inputs):
    """`{path: outputs}`: each SavedModel of `inputs` (`{path: array}`, or
    `{path: [array, ...]}` for a model of several inputs) loaded by
    `tf.saved_model.load` and served its array(s), in a new Python process
    that imports TensorFlow alone (`in_fresh_process`)."""
    paths = list(inputs)
    arrays = {}
    for i, path in enumerate(paths):
        if isinstance(inputs[path], (list, tuple)):
            arrays.update({f"x{i}_{j}": x for j, x in enumerate(inputs[path])})
        else:
            arrays[f"x{i}"] = inputs[path]
    with tempfile.TemporaryDirectory() as folder:
        np.savez(Path(folder) / "inputs.npz", **arrays)
        return in_fresh_process(_SERVE, Path(folder) / "inputs.npz", json.dumps(paths))


# Put first in the fresh process's code: keras_nalu and nalu_research cannot
# be imported there, as on a server that has TensorFlow alone.
_WITHOUT_PACKAGE = """
import sys

class _WithoutPackage:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("keras_nalu", "nalu_research"):
            raise ImportError(name + " must not be imported when serving")

sys.meta_path.insert(0, _WithoutPackage())
"""


def in_fresh_process(code, *argv):
    """Runs the Python `code` in a new process (its `sys.argv[1:]` the texts
    of `argv`) in which `keras_nalu` and `nalu_research` cannot be imported,
    as on a server with TensorFlow alone; returns the JSON it prints last.
    Raises `RuntimeError`, with the end of its error output, if it fails."""
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PACKAGE + code, *map(str, argv)],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the fresh process failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])
