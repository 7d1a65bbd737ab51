"""Runs on one Keras backend (KERAS_BACKEND, set by the caller): trains and
saves models of every layer and cell, or loads the models another backend
saved and records their outputs. Used by tests/test_backends.py and
tests/test_backends_export.py.

    python -m tests.backend_worker save-load FOLDER SOURCE_BACKEND...
    python -m tests.backend_worker export FOLDER
"""

import json
import os
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_nalu import (
    INALU,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    ConfiguredNALU,
    ConstrainedDense,
    NACCell,
    NALUCell,
    NAUCell,
    RealNPU,
    export_saved_model,
)
from keras_nalu.regularizers import Sparsity
from tests import cross_backend_training

# The penalty schedules start at once, so the saved step counters are not 0.
SCHEDULE = {"regularization_start": 0, "regularization_end": 4}


def models():
    """`{name: (model, inputs)}`: every layer, cell and default initializer."""
    static = keras.Input((4,))
    sequence = keras.Input((5, 3))
    control = keras.Input((5, 6))
    return {
        "nac_nalu": keras.Model(
            static, NALU(1, tied_weights=False)(NALU(2)(NAC(3)(static)))
        ),
        "nau_nmu": keras.Model(static, NMU(1, **SCHEDULE)(NAU(2, **SCHEDULE)(static))),
        "nmru": keras.Model(static, NMRU(1, **SCHEDULE)(NAU(2, **SCHEDULE)(static))),
        "inalu": keras.Model(static, INALU(1)(INALU(2)(static))),
        "realnpu": keras.Model(
            static, RealNPU(1, **SCHEDULE)(NAU(2, **SCHEDULE)(static))
        ),
        "constrained_dense": keras.Model(
            static,
            ConstrainedDense(1, "sigmoid", use_bias=True)(ConstrainedDense(2)(static)),
        ),
        "cells": keras.Model(
            sequence,
            keras.layers.RNN(NACCell(1))(
                keras.layers.RNN(NALUCell(2), return_sequences=True)(
                    keras.layers.RNN(
                        NAUCell(2, kernel_regularizer=Sparsity(0.01)),
                        return_sequences=True,
                    )(sequence)
                )
            ),
        ),
        "configured": keras.Model(
            [sequence, control], ConfiguredNALU(1)([sequence, control])
        ),
    }


def inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [
        rng.uniform(1.0, 2.0, (8, *tensor.shape[1:])).astype("float32")
        for tensor in model.inputs
    ]
    return arrays[0] if len(arrays) == 1 else arrays


def outputs(model, x):
    return keras.ops.convert_to_numpy(model.predict(x, verbose=0))


def save(folder):
    """Trains each model two epochs, saves it, and records its outputs."""
    keras.utils.set_random_seed(0)
    results = {}
    for name, model in models().items():
        x = inputs(model)
        y = np.ones((8, 1), "float32")
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        model.fit(x, y, epochs=2, batch_size=4, verbose=0)
        model.save(folder / f"{name}.keras")
        results[name] = outputs(model, x).tolist()
    # Written whole or not at all: other processes wait for this file.
    (folder / "outputs.tmp").write_text(json.dumps(results))
    os.replace(folder / "outputs.tmp", folder / "outputs.json")


def save_load(folder, sources, timeout=600):
    """`save` into `folder/<this backend>`, then `load` once every source
    has saved (a process per backend, not two): a source that failed to save
    leaves a `failed` file, which stops the wait at once."""
    own = folder / keras.backend.backend()
    own.mkdir(exist_ok=True)
    try:
        save(own)
    except BaseException:
        (own / "failed").touch()
        raise
    deadline = time.monotonic() + timeout
    while not all((folder / s / "outputs.json").exists() for s in sources):
        failed = [s for s in sources if (folder / s / "failed").exists()]
        if failed or time.monotonic() > deadline:
            raise RuntimeError(f"no saved models from {failed or sources}")
        time.sleep(0.2)
    load(folder, sources)


def load(folder, sources):
    """Loads each source backend's models: `{source: {name: result}}`, with
    the largest difference from the source's outputs (relative to their
    scale) and whether the model also loads compiled (its optimizer too)."""
    report = {}
    for source in sources:
        saved = json.loads((folder / source / "outputs.json").read_text())
        report[source] = {}
        for name, want in saved.items():
            want = np.asarray(want)
            path = folder / source / f"{name}.keras"
            model = keras.saving.load_model(path, compile=False)
            got = outputs(model, inputs(model))
            try:
                keras.saving.load_model(path)
                compiled = True
            except Exception:  # noqa: BLE001 - a Keras limitation, reported
                compiled = False
            report[source][name] = {
                # Relative to the output's scale (at least 1).
                "difference": float(
                    np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))
                ),
                "loads_compiled": compiled,
            }
    (folder / f"loaded_on_{keras.backend.backend()}.json").write_text(
        json.dumps(report)
    )


def export(folder):
    """Trains the static models on this backend, exports each as a
    SavedModel and records the inputs and the model's outputs."""
    keras.utils.set_random_seed(0)
    report = {}
    for name in ("nac_nalu", "nau_nmu", "nmru", "realnpu", "inalu", "cells"):
        model = models()[name]
        x = inputs(model)
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        model.fit(x, np.ones((8, 1), "float32"), epochs=2, batch_size=4, verbose=0)
        try:
            export_saved_model(model, folder / name)
            report[name] = {"x": x.tolist(), "y": outputs(model, x).tolist()}
        except ValueError as error:
            report[name] = {"error": str(error)}
    (folder / "exported.json").write_text(json.dumps(report))


if __name__ == "__main__":
    command, folder, sources = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    folder.mkdir(parents=True, exist_ok=True)
    if command == "save-load":
        save_load(folder, sources)
        # Then, in the same process (an import of each backend saved), the
        # compiled model trained after a load (tests/cross_backend_training.py).
        (folder / "training").mkdir(exist_ok=True)
        cross_backend_training.save_load(folder / "training")
    elif command == "export":
        export(folder)
    else:
        sys.exit(f"unknown command {command!r}: expected save-load or export")
