"""Training a `.keras` model on another backend than the one it was saved on
(docs/backends.md, "Training after a load on another backend"): what each
backend's worker process does (`tests.backend_worker save-load` runs it
after the layers' save and load); tests/test_backends.py checks it.

A compiled model (a NAU and a plain Dense, trained one epoch with Adam) is
saved on each backend, then loaded on each, one process per backend (the
backend is fixed when Keras is imported). On every pair it loads and predicts
the saved outputs, and trains after `compile()`, with a fresh optimizer or
with the saved one's state carried over. Training it as loaded fails for a
file saved on torch and loaded on TensorFlow or JAX: Keras 3.15 saves torch's
own optimizer class (`keras.src.backend.torch.optimizers.torch_adam.Adam`),
whose update calls `torch._foreach_*` on the other backend's variables.

`save_load(FOLDER)` saves on this process's backend, waits for the other
two backends' files in FOLDER, loads them.
"""

import json
import os
import time

import numpy as np

# The three Keras backends (tests/test_backends.py reads them here).
BACKENDS = ("tensorflow", "jax", "torch")

# Keras 3.15.1: the pairs where `fit` on the model as loaded fails, and the
# start of its error.
FAILS_AS_LOADED = {("torch", "tensorflow"), ("torch", "jax")}
ERROR_AS_LOADED = "TypeError: expected Tensor as element 0 in argument 0"
# Float32 kernels of different backends round differently (tests/test_backends.py).
TOLERANCE = 1e-5


def data():
    rng = np.random.default_rng(0)
    x = rng.uniform(1.0, 2.0, (16, 4)).astype("float32")
    return x, x[:, :2].sum(axis=1, keepdims=True) - x[:, 2:3]


def save(folder):
    """Trains the model one epoch on this backend and saves it compiled,
    with its outputs and its optimizer's step count."""
    import keras

    from keras_nalu import NAU

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(1)(NAU(3)(inputs)))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    x, y = data()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    backend = keras.backend.backend()
    model.save(folder / f"{backend}.keras")
    saved = {
        "outputs": keras.ops.convert_to_numpy(model.predict(x, verbose=0)).tolist(),
        "iterations": int(model.optimizer.iterations),
    }
    # Written whole or not at all: the other processes wait for this file.
    (folder / f"{backend}.tmp").write_text(json.dumps(saved))
    os.replace(folder / f"{backend}.tmp", folder / f"{backend}.json")


def compile_keeping_state(model):
    """Compiles a loaded model with the saved optimizer rebuilt on this
    backend and its variables (step count, moments) copied over: the recipe
    of docs/backends.md."""
    import keras

    saved = model.optimizer
    optimizer = keras.optimizers.deserialize(
        {"class_name": type(saved).__name__, "config": saved.get_config()}
    )
    optimizer.build(model.trainable_variables)
    for new, old in zip(optimizer.variables, saved.variables, strict=True):
        new.assign(old)
    model.compile(optimizer=optimizer, loss=model.loss)


def save_load(folder, timeout=240):
    """`save`, then `load` once every backend has saved (a process per
    backend, not two): a backend that failed to save leaves a `failed` file,
    which stops the wait at once."""
    backend = os.environ["KERAS_BACKEND"]
    try:
        save(folder)
    except BaseException:
        (folder / f"{backend}.failed").touch()
        raise
    deadline = time.monotonic() + timeout
    while not all((folder / f"{b}.json").exists() for b in BACKENDS):
        failed = [b for b in BACKENDS if (folder / f"{b}.failed").exists()]
        if failed or time.monotonic() > deadline:
            raise RuntimeError(f"no saved model from {failed or BACKENDS}")
        time.sleep(0.2)
    load(folder)


def train(model):
    """One epoch of `fit`: `("ok", optimizer steps)` when it ran, gave a
    finite loss and changed the weights, else `(what happened, None)`."""
    import keras

    x, y = data()
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    try:
        loss = model.fit(x, y, epochs=1, batch_size=8, verbose=0).history["loss"][-1]
    except Exception as error:  # noqa: BLE001 - reported, checked
        return f"{type(error).__name__}: {error}"[:500], None
    after = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    if not np.isfinite(loss) or all(map(np.array_equal, before, after)):
        return f"loss {loss}, no weight changed or not finite", None
    return "ok", int(model.optimizer.iterations)


def load(folder):
    """Loads each backend's file: the difference of its predictions from the
    saved ones, then `train` as loaded, after `compile()` with a new
    optimizer, after `compile_keeping_state`. Writes `{source: {"predict":
    difference, way: result, f"{way}_iterations": steps, "iterations": the
    saved steps}}`."""
    import keras

    import keras_nalu  # noqa: F401 - registers the layers for loading

    x, _ = data()
    report = {}
    for source in BACKENDS:
        path = folder / f"{source}.keras"
        saved = json.loads((folder / f"{source}.json").read_text())
        want = np.asarray(saved["outputs"])
        model = keras.saving.load_model(path)
        got = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
        scale = max(1.0, float(np.max(np.abs(want))))  # relative to it
        result = {
            "iterations": saved["iterations"],
            "predict": float(np.max(np.abs(got - want))) / scale,
        }
        result["as_loaded"], result["as_loaded_iterations"] = train(model)
        model = keras.saving.load_model(path)
        model.compile(optimizer="adam", loss="mse")
        result["after_compile"], result["after_compile_iterations"] = train(model)
        model = keras.saving.load_model(path)
        compile_keeping_state(model)
        result["keeping_state"], result["keeping_state_iterations"] = train(model)
        report[source] = result
    backend = keras.backend.backend()
    (folder / f"loaded_on_{backend}.json").write_text(json.dumps(report))
