import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu import NAC
from nalu_research.layers import crelu, leaky_relu, threshold
from nalu_research.tasks.identity import (
    ACTIVATIONS,
    MODELS,
    PAPER_TABLE_5,
    TABLE_RANGE,
    absolute_errors,
    figure_inputs,
    identity_batches,
    identity_model,
    table_inputs,
)
from tests.processes import run_in_process, tensorboard_scalars

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "identity.py"


@pytest.mark.parametrize("name", MODELS)
def test_every_model_maps_a_batch_of_scalars_to_scalars(name):
    model = identity_model(name)
    x = np.linspace(-20, 20, 7, dtype="float32")[:, None]
    assert model.input_shape == (None, 1) and model.output_shape == (None, 1)
    y = keras.ops.convert_to_numpy(model(x))
    assert y.shape == (7, 1) and np.all(np.isfinite(y))


@pytest.mark.parametrize("name", [n for n in MODELS if n != "NAC"])
def test_mlps_have_three_hidden_layers_of_8_then_a_linear_output(name):
    dense = [
        layer
        for layer in identity_model(name).layers
        if isinstance(layer, keras.layers.Dense)
    ]
    assert [layer.units for layer in dense] == [8, 8, 8, 1]
    assert dense[-1].activation is keras.activations.linear
    # CReLU doubles the width each following layer reads.
    fan_in = [layer.kernel.shape[0] for layer in dense]
    assert fan_in == ([1, 16, 16, 16] if name == "CReLU" else [1, 8, 8, 8])


def test_nac_model_is_three_nacs_of_8_then_a_nac_of_1():
    model = identity_model("NAC")
    assert all(isinstance(layer, NAC) for layer in model.layers)
    assert [layer.units for layer in model.layers] == [8, 8, 8, 1]


def test_hidden_and_depth_set_the_shape():
    model = identity_model("Tanh", hidden=4, depth=2)
    assert [layer.units for layer in model.layers] == [4, 4, 1]


def test_prelu_learns_one_slope_per_layer_starting_at_a_quarter():
    prelus = [
        layer
        for layer in identity_model("PReLU").layers
        if isinstance(layer, keras.layers.PReLU)
    ]
    assert len(prelus) == 3
    for layer in prelus:
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.alpha), [0.25])


def test_crelu_by_hand():
    x = np.array([[-2.0, 0.0, 3.0], [1.5, -0.5, 0.0]], "float32")
    expected = [[0.0, 0.0, 3.0, 2.0, 0.0, 0.0], [1.5, 0.0, 0.0, 0.0, 0.5, 0.0]]
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(crelu(x)), expected)


def test_threshold_and_leaky_relu_by_hand():
    x = np.array([-3.0, 0.0, 0.1, 0.2, 7.0], "float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(threshold(x)), [20.0, 20.0, 20.0, 0.2, 7.0]
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(leaky_relu(x)), [-0.03, 0.0, 0.1, 0.2, 7.0]
    )


def test_identity_batches_cover_the_training_range_and_are_seeded():
    x, y = identity_batches(steps=50, batch_size=128, seed=3)
    assert x.shape == y.shape == (6400, 1) and x.dtype == np.float32
    np.testing.assert_array_equal(x, y)
    assert x.min() >= -5 and x.max() <= 5
    assert x.min() < -4.9 and x.max() > 4.9 and abs(x.mean()) < 0.2
    np.testing.assert_array_equal(x, identity_batches(50, 128, seed=3)[0])
    assert not np.array_equal(x, identity_batches(50, 128, seed=4)[0])


def test_test_inputs_are_the_papers():
    grid = figure_inputs()
    assert grid.shape == (401, 1)
    assert grid[0, 0] == -20 and grid[-1, 0] == 20
    np.testing.assert_allclose(np.diff(grid[:, 0]), 0.1, rtol=1e-4)
    integers = table_inputs()
    assert integers.shape == (2001, 1)
    np.testing.assert_array_equal(integers[:, 0], np.arange(-1000, 1001))
    assert TABLE_RANGE == (-1000, 1000)
    # Predicting 0 scores 1000 * 1001 / 2001 = 500.25, the paper's "500".
    assert np.mean(np.abs(integers)) == pytest.approx(500.25, abs=1e-3)


def test_absolute_errors_of_an_exact_identity_are_zero():
    model = keras.Sequential(
        [keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="ones")]
    )
    np.testing.assert_array_equal(absolute_errors(model, table_inputs()), 0.0)
    shifted = keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(1, kernel_initializer="zeros"),
        ]
    )
    np.testing.assert_allclose(
        absolute_errors(shifted, table_inputs()).mean(), 500.25, rtol=1e-6
    )


def test_paper_table_5_covers_every_activation_but_crelu():
    assert set(PAPER_TABLE_5) == set(ACTIVATIONS) - {"CReLU"}
    assert len(PAPER_TABLE_5) == 15
    assert PAPER_TABLE_5["Hardtanh"] == 495.47 and PAPER_TABLE_5["PReLU"] == 14.66
    assert set(MODELS) == set(ACTIVATIONS) | {"NAC"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "Swish"}, "`name`"),
        ({"name": "ReLU", "hidden": 0}, "`hidden`"),
        ({"name": "ReLU", "depth": 1.0}, "`depth`"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        identity_model(**kwargs)


@pytest.mark.research  # plots with matplotlib, reads TensorBoard logs
def test_example_trains_prints_table_5_and_writes_the_plot_and_json(tmp_path):
    runs = tmp_path / "runs.json"
    result = run_in_process(
        "identity",
         "--steps", "20", "--seeds", "2", "--models", "ReLU", "CReLU", "NAC",
         "--json", str(runs), "--strategy", "mirrored",
         "--tensorboard", str(tmp_path / "tb"),
         "--checkpoint-every", "10", "--checkpoint-dir", str(tmp_path / "state"),
         cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {
        cells[0]: cells
        for line in result.stdout.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == {"model", "ReLU", "CReLU", "NAC"}
    for name in ("ReLU", "CReLU", "NAC"):
        mean = float(rows[name][1])
        low, high = (float(v) for v in rows[name][2].split(" to "))
        assert 0 <= low <= mean <= high
    assert rows["ReLU"][4] == "83.63" and rows["NAC"][4] == "-"
    # The plot goes beside the JSON by default.
    assert (tmp_path / "runs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record = json.loads(runs.read_text())
    order = [(r["model"], r["seed"]) for r in record["runs"]]
    assert order == [
        ("ReLU", 1), ("ReLU", 2), ("CReLU", 1), ("CReLU", 2), ("NAC", 1), ("NAC", 2)
    ]  # fmt: skip
    assert all(len(r["figure_abs_error"]) == 401 for r in record["runs"])
    assert not any(r["diverged"] for r in record["runs"])
    assert not (tmp_path / "state").exists()  # the checkpoints are removed
    # The errors after the last epoch are those of the trained model.
    for r in record["runs"]:
        assert r["epochs"]["step"] == [10, 20]
        assert r["epochs"]["table_mae"][-1] == pytest.approx(r["table_mae"])
        assert r["epochs"]["train_range_mae"][-1] == pytest.approx(r["train_range_mae"])

    # Not a terminal: a line per epoch naming its step, the errors and the
    # time left; a header before each run and a line after it.
    lines = result.stdout.splitlines()
    epochs = [line for line in lines if line.startswith("epoch ")]
    assert [line.split(" - ")[0] for line in epochs] == [
        "epoch 1/2 (step 10)", "epoch 2/2 (step 20)"
    ] * 6  # fmt: skip
    assert " - table_mae " in epochs[0] and " - train_range_mae " in epochs[0]
    assert epochs[0].endswith(" left") and epochs[1].endswith(", done")
    ran = [line for line in lines if line.startswith("run ")]
    assert [line.split(" - ")[0] for line in ran] == [
        f"run {i}/6 ({name}, seed {seed})" for i, (name, seed) in enumerate(order, 1)
    ]
    assert " - MAE on -1000..1000 " in ran[0] and ran[-1].endswith(", done")
    assert lines.index("CReLU, seed 2:") < lines.index(ran[3])
    # TensorBoard: a folder per run, the loss and both errors at every epoch.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {f"{name}/{seed}" for name, seed in order}
    for tags in scalars.values():
        assert tags == {
            "loss": [10, 20], "table_mae": [10, 20], "train_range_mae": [10, 20]
        }  # fmt: skip
