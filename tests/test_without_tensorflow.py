"""JAX and torch users need no TensorFlow: with it made unimportable, the
layers, `snap_weights`, `formulas`, `training.fit` with its checkpoint and
resume, and the seed-batched engine run on jax and on torch; SavedModel
export and `keras_nalu.distribute` say in a clear error that they need it.
The research examples that train on jax run there too (the GPU machine of
`make gpu-check` has JAX and no TensorFlow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import blocking_imports

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[1]

_WITHOUT_TENSORFLOW = (
    blocking_imports("tensorflow", "tensorflow_datasets", "tf_keras")
    + """
import tempfile
from pathlib import Path
import keras
import numpy as np
from keras_nalu import NAU, NMU, formulas, snap_weights, export_saved_model, training
from nalu_research.recipe import Recipe
from nalu_research.seed_batched import StaticBenchmark

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.uniform(1, 2, (64, 3)).astype("float32")
y = (x[:, :1] + x[:, 1:2]) * x[:, 2:3]

class Batches(keras.utils.PyDataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return x[16 * i : 16 * (i + 1)], y[16 * i : 16 * (i + 1)]

def model_fn():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,)), NAU(2), NMU(1)])

folder = Path(tempfile.mkdtemp()) / "run"
def run(epochs):
    return training.fit(model_fn, lambda epoch: Batches(), loss="mse",
                        optimizer_fn=lambda: keras.optimizers.Adam(0.05),
                        epochs=epochs, checkpoint_dir=folder, verbose=0)
whole = training.fit(model_fn, lambda epoch: Batches(), loss="mse",
                     optimizer_fn=lambda: keras.optimizers.Adam(0.05), epochs=3,
                     verbose=0)
run(2)
resumed = run(3)
assert resumed.resumed_at == 2, resumed.resumed_at
for a, b in zip(whole.model.get_weights(), resumed.model.get_weights(), strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
training.remove_checkpoint(folder)

model = keras.Sequential([keras.Input((3,)), NAU(2), NMU(1)])
model.layers[0].kernel.assign(np.array([[1, 0], [1, 0], [0, 1]], "float32"))
model.layers[1].kernel.assign(np.array([[0.98], [1.0]], "float32"))
snapped, _ = snap_weights(model, (x, y))
assert formulas(snapped) == ["y0 = x2*(x0 + x1)"], formulas(snapped)

bench = StaticBenchmark("nmu", "mul", [0, 1], Recipe(batch_size=16), eval_size=64)
saved = Path(tempfile.mkdtemp()) / "engine"
result = bench.run(20, eval_every=10, checkpoint=saved)
assert len(result["history"]) == 3 and (saved / "checkpoint.npz").is_file()

try:
    export_saved_model(snapped, Path(tempfile.mkdtemp()) / "model")
except (ImportError, ValueError) as error:  # torch: the backend is named first
    assert ("export_saved_model (a TensorFlow SavedModel) needs TensorFlow"
            in str(error) or "needs the tensorflow or jax backend" in str(error))
else:
    raise AssertionError("export_saved_model ran without TensorFlow")
try:
    import keras_nalu.distribute
except ImportError as error:
    assert "tf.distribute strategies) needs TensorFlow" in str(error), error
else:
    raise AssertionError("keras_nalu.distribute imported without TensorFlow")
print(sorted({name.split(".")[0] for name in sys.modules} & BLOCKED))
"""
)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_library_and_the_engine_run_without_tensorflow(backend):
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TENSORFLOW],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": backend},
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


# An example, run as `python examples/NAME.py ARGS` runs it, where TensorFlow
# cannot be imported.
_EXAMPLE_WITHOUT_TENSORFLOW = (
    blocking_imports("tensorflow", "tensorflow_datasets", "tf_keras")
    + """
from nalu_research.backends import run
status = run(sys.argv[1], sys.argv[2:])
assert not {name.split(".")[0] for name in sys.modules} & BLOCKED
sys.exit(status)
"""
)


@pytest.mark.research  # the examples plot with matplotlib
@pytest.mark.parametrize(
    "experiment, argv",
    [
        ("mnist_counting", ["--task", "sum", "--models", "nau", "--steps", "2",
                            "--batch-size", "2", "--checkpoint-every", "2",
                            "--lengths", "1", "--dataset", "digits"]),
        ("mnist_parity", ["--variants", "NAC", "--train-size", "8",
                          "--test-size", "8", "--batch-size", "8",
                          "--epochs", "1", "--dataset", "digits"]),
        ("identity", ["--models", "NAC", "--seeds", "1",
                                    "--steps", "4", "--checkpoint-every", "2"]),
        ("mystery_arithmetic", ["--models", "NAC", "--epochs", "1",
                                "--train-size", "64", "--test-size", "64"]),
        ("grid_world", ["--quick", "--agents", "a2c_nac", "--updates", "2",
                        "--envs", "2", "--eval-episodes", "2",
                        "--eval-instructions", "11", "12", "--every", "1",
                        "--export-dir", "saved"]),
    ],
)  # fmt: skip
def test_the_examples_train_on_jax_without_tensorflow(experiment, argv, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", _EXAMPLE_WITHOUT_TENSORFLOW, experiment, *argv,
         "--json", str(tmp_path / "results.json"),
         "--checkpoint-dir", str(tmp_path / "checkpoints")],
        env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(ROOT)},
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    # Each example says which backend it trained on.
    assert "on the jax backend" in result.stdout or "backend jax." in result.stdout
    assert (tmp_path / "results.json").exists()
