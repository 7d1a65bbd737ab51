"""keras_nalu.losses.NormalizedMeanSquaredError: each output's squared error
over its variance, on every backend."""

import json

import keras
import numpy as np
import pytest

from keras_nalu.losses import NormalizedMeanSquaredError

pytestmark = pytest.mark.backends


def test_each_output_is_divided_by_its_variance_then_averaged():
    loss = NormalizedMeanSquaredError([4.0, 0.25])
    y_true = np.array([[1.0, 1.0], [0.0, 2.0]], "float32")
    y_pred = np.array([[3.0, 1.5], [0.0, 2.0]], "float32")
    # Rows: (4/4 + 0.25/0.25) / 2 = 1 and 0; the batch's mean.
    assert float(loss(y_true, y_pred)) == pytest.approx(0.5)
    assert float(NormalizedMeanSquaredError(2.0)(y_true, y_pred)) == pytest.approx(
        np.square(y_pred - y_true).mean() / 2.0
    )


def test_predicting_each_outputs_mean_costs_one_whatever_the_scales():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(1000, 3)) * np.array([1e3, 1.0, 1e-3])
    loss = NormalizedMeanSquaredError(y.var(axis=0))
    mean = np.broadcast_to(y.mean(axis=0), y.shape)
    assert float(loss(y.astype("float32"), mean.astype("float32"))) == pytest.approx(
        1.0, rel=1e-5
    )


def test_config_round_trips_and_a_compiled_model_reloads(tmp_path):
    loss = NormalizedMeanSquaredError(np.array([2.0, 3.0], "float32"), name="nmse")
    assert loss.get_config()["variance"] == [2.0, 3.0]
    revived = keras.losses.deserialize(
        json.loads(json.dumps(keras.losses.serialize(loss)))
    )
    assert isinstance(revived, NormalizedMeanSquaredError)
    assert revived.variance == [2.0, 3.0] and revived.name == "nmse"
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
    model.compile("adam", loss=loss)
    # One step builds the optimizer: the saved file then holds its variables
    # (an unbuilt one makes Keras warn on loading that it skips them).
    x = np.ones((4, 2), "float32")
    model.fit(x, x, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.loss.variance == [2.0, 3.0]


@pytest.mark.parametrize(
    "variance", [0.0, -1.0, float("nan"), [1.0, float("inf")], [], [[1.0]], "1", True]
)
def test_a_bad_variance_is_refused_by_name(variance):
    with pytest.raises(ValueError, match=r"`variance`, expected a finite number"):
        NormalizedMeanSquaredError(variance)


def test_a_variance_per_output_must_match_the_outputs():
    loss = NormalizedMeanSquaredError([1.0, 2.0, 3.0])
    y = np.ones((4, 2), "float32")
    with pytest.raises(
        ValueError, match=r"`variance`, expected one variance per output \(2"
    ):
        loss(y, y)


def test_float16_predictions_and_integer_targets():
    loss = NormalizedMeanSquaredError([4.0, 1.0])
    y_true = np.array([[1, 2]], "int32")
    y_pred = np.array([[3.0, 2.0]], "float16")
    assert float(loss(y_true, y_pred)) == pytest.approx(0.5)
