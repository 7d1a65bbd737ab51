"""Keras's own export formats: `model.export(path, format="onnx")` run with
ONNX Runtime and `format="litert"` run with the LiteRT interpreter reproduce
the Keras outputs of every unit (the SavedModel: tests/test_export.py).

On the TensorFlow backend Keras converts to ONNX with tf2onnx, to LiteRT with
TensorFlow's converter. The runtimes are in the `dev` extra; without them
these tests are skipped, naming the package.

    KERAS_BACKEND=tensorflow python -m tests.test_export_formats

prints the largest relative error of each unit and format, the table of
docs/serving-scaling.md.
"""

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.helpers import package_units
from tests.processes import blocking_imports

pytestmark = [
    pytest.mark.tensorflow,
    # Keras's tf2onnx patch (keras/src/export/tf2onnx_lib.py) asks NumPy 2
    # for the removed `np.object`, which warns; not our code.
    pytest.mark.filterwarnings("ignore:In the future `np.object`:FutureWarning"),
]

# Every unit layer of the package, by name (`keras_nalu.layers.__all__`).
UNITS = {unit.__name__: unit for unit in package_units(cells=False)}
# The NALU multiplies magnitudes (its products lose the sign) and so does
# the NMRU without `sign_retrieval`: positive inputs, as their docs say. The
# others take inputs of both signs. Magnitudes from 0.5 to 2: log's epsilon
# and the exponent's cap stay out of play.
POSITIVE_INPUTS = {"NALU", "NMRU"}
# float32 outputs of order 1: exp and log of another runtime's kernels round
# differently (largest measured 1.3e-6 relative, the NPU on LiteRT); a lost
# or changed weight is off by far more.
RTOL, ATOL = 1e-5, 1e-6


def unit_model(name):
    """`Input((4,)) -> Unit(2)`, every trainable weight drawn from a seeded
    generator in [-1, 1] (the NPUs' relevance gates in [0, 1], where they are
    not clipped), so that each weight shapes the output."""
    model = keras.Sequential([keras.Input((4,)), UNITS[name](2)])
    rng = np.random.default_rng(0)
    for weight in model.trainable_weights:
        low = 0.0 if weight.name == "gate" and name in ("NPU", "RealNPU") else -1.0
        weight.assign(rng.uniform(low, 1.0, weight.shape).astype("float32"))
    return model


def unit_inputs(name, batch=16):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, (batch, 4))
    if name not in POSITIVE_INPUTS:
        x *= rng.choice([-1.0, 1.0], x.shape)
    return x.astype("float32")


def onnx_runner(model, folder):
    """Exports `model` with `format="onnx"`; returns `run(x)`, ONNX Runtime's
    outputs."""
    onnxruntime = pytest.importorskip(
        "onnxruntime", reason="onnxruntime is not installed (the dev extra)"
    )
    pytest.importorskip(
        "tf2onnx",
        reason="tf2onnx (Keras's ONNX converter on TensorFlow) is not installed "
        "(the dev extra)",
    )
    path = folder / "model.onnx"
    model.export(str(path), format="onnx", verbose=False)
    session = onnxruntime.InferenceSession(
        str(path), providers=["CPUExecutionProvider"]
    )
    (given,) = session.get_inputs()
    return lambda x: session.run(None, {given.name: x})[0]


def litert_runner(model, folder):
    """Exports `model` with `format="litert"`; returns `run(x)`, the LiteRT
    interpreter's outputs (its input resized to the batch)."""
    litert = pytest.importorskip(
        "ai_edge_litert.interpreter",
        reason="ai-edge-litert (the LiteRT interpreter) is not installed "
        "(the dev extra)",
    )
    path = folder / "model.tflite"
    model.export(str(path), format="litert", verbose=False)
    interpreter = litert.Interpreter(model_path=str(path))
    (given,), (output,) = (
        interpreter.get_input_details(),
        interpreter.get_output_details(),
    )

    def run(x):
        interpreter.resize_tensor_input(given["index"], x.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(given["index"], x)
        interpreter.invoke()
        return interpreter.get_tensor(output["index"])

    return run


RUNNERS = {"onnx": onnx_runner, "litert": litert_runner}


def relative_error(got, want):
    return float(np.max(np.abs(got - want) / np.abs(want)))


@pytest.fixture(scope="module", autouse=True)
def _leave_the_process_as_found():
    """Undoes what the converters change for the tests after these in the
    same process: tf2onnx sets `TF_CPP_MIN_LOG_LEVEL=3` when imported,
    Keras's patch of it sets `np.object`, TensorFlow's LiteRT converter adds
    absl's handler to the root logger and sets absl's level."""
    variable = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    had_object = "object" in vars(np)
    root = logging.getLogger()
    handlers = list(root.handlers)
    absl_level = logging.getLogger("absl").level
    yield
    if variable is None:
        os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    else:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = variable
    if not had_object:
        vars(np).pop("object", None)
    root.handlers[:] = handlers
    logging.getLogger("absl").setLevel(absl_level)


@pytest.mark.parametrize("format", RUNNERS)
@pytest.mark.parametrize("name", UNITS)
def test_exported_unit_reproduces_keras_at_two_batch_sizes(name, format, tmp_path):
    model = unit_model(name)
    x = unit_inputs(name)
    # Called before the export: Keras's ONNX export refuses a model never
    # called ("ValueError: The model provided has never called.").
    want = {len(b): keras.ops.convert_to_numpy(model(b)) for b in (x, x[:1])}
    run = RUNNERS[format](model, tmp_path)
    for batch in (x, x[:1]):
        np.testing.assert_allclose(
            run(batch),
            want[len(batch)],
            rtol=RTOL,
            atol=ATOL,
            err_msg=f"{name} through {format}",
        )


# Serves FOLDER/model.onnx and FOLDER/model.tflite on FOLDER/x.npy where
# TensorFlow, Keras and keras_nalu cannot be imported.
_SERVE_WITHOUT_KERAS = (
    blocking_imports("tensorflow", "keras", "keras_nalu")
    + """
from pathlib import Path
import numpy as np, onnxruntime
from ai_edge_litert.interpreter import Interpreter

folder = Path(sys.argv[1])
x = np.load(folder / "x.npy")
session = onnxruntime.InferenceSession(str(folder / "model.onnx"))
np.save(folder / "onnx.npy", session.run(None, {session.get_inputs()[0].name: x})[0])
interpreter = Interpreter(model_path=str(folder / "model.tflite"))
(given,), (output,) = interpreter.get_input_details(), interpreter.get_output_details()
interpreter.resize_tensor_input(given["index"], x.shape)
interpreter.allocate_tensors()
interpreter.set_tensor(given["index"], x)
interpreter.invoke()
np.save(folder / "litert.npy", interpreter.get_tensor(output["index"]))
"""
)


@pytest.mark.processes
def test_exported_files_serve_without_tensorflow_keras_or_keras_nalu(tmp_path):
    model, x = unit_model("NPU"), unit_inputs("NPU")
    want = keras.ops.convert_to_numpy(model(x))
    for runner in RUNNERS.values():
        runner(model, tmp_path)  # exports (or skips without the runtime)
    np.save(tmp_path / "x.npy", x)
    result = subprocess.run(
        [sys.executable, "-c", _SERVE_WITHOUT_KERAS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for format in RUNNERS:
        np.testing.assert_allclose(
            np.load(tmp_path / f"{format}.npy"), want, rtol=RTOL, atol=ATOL
        )


def error_table():
    """The markdown table of the largest relative error of each unit and
    format against Keras, on `unit_inputs`."""
    rows = ["| unit | inputs | ONNX (onnxruntime) | LiteRT (interpreter) |"]
    rows.append("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in UNITS:
            model, x = unit_model(name), unit_inputs(name)
            want = keras.ops.convert_to_numpy(model(x))
            errors = []
            for format, runner in RUNNERS.items():
                (Path(folder) / name / format).mkdir(parents=True)
                run = runner(model, Path(folder) / name / format)
                errors.append(f"{relative_error(run(x), want):.2g}")
            signs = "positive" if name in POSITIVE_INPUTS else "both signs"
            rows.append(f"| `{name}` | {signs} | {' | '.join(errors)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if keras.backend.backend() != "tensorflow":
        raise SystemExit(
            "run with KERAS_BACKEND=tensorflow: the table is of its export"
        )
    print(error_table())
