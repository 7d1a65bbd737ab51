import json

import keras
import numpy as np
import pytest

from keras_nalu import NALU, export_saved_model
from keras_nalu.layers import ConfiguredNALU
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.test_export import serve_in_fresh_process

pytestmark = pytest.mark.backends

RNG = np.random.default_rng(0)


def two_inputs(batch=4, steps=None, input_dim=3, control_dim=5):
    leading = (batch,) if steps is None else (batch, steps)
    x = RNG.uniform(0.5, 2.0, leading + (input_dim,)).astype("float32")
    c = RNG.normal(size=leading + (control_dim,)).astype("float32")
    return x, c


def configured_model(layer, input_dim=3, control_dim=5, steps=False):
    shape = (None,) if steps else ()
    x = keras.Input(shape + (input_dim,), name="x")
    c = keras.Input(shape + (control_dim,), name="control")
    return keras.Model([x, c], layer([x, c]))


INIT_KWARGS = {
    "units": 2,
    "epsilon": 1e-6,
    "tied_weights": False,
    "kernel_initializer": "he_normal",
    "bias_initializer": constant(0.5),
    "kernel_regularizer": "l2",
    "bias_regularizer": None,
    "kernel_constraint": "max_norm",
    "bias_constraint": None,
}


def test_config_round_trips_through_json():
    layer = ConfiguredNALU(**INIT_KWARGS)
    config = layer.get_config()
    assert config["units"] == 2 and config["epsilon"] == 1e-6
    assert config["tied_weights"] is False
    assert config["bias_initializer"] == keras.initializers.serialize(constant(0.5))
    assert config["kernel_regularizer"] == keras.regularizers.serialize(
        keras.regularizers.get("l2")
    )
    restored = ConfiguredNALU.from_config(json.loads(json.dumps(config)))
    assert restored.get_config() == config
    revived = keras.saving.deserialize_keras_object(
        json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    )
    assert type(revived) is ConfiguredNALU and revived.get_config() == config


@pytest.mark.parametrize("steps", [None, 6])
@pytest.mark.parametrize("tied", [True, False])
def test_zero_kernels_make_it_the_static_nalu_with_the_biases_as_weights(steps, tied):
    """Constant configuration: the layer computes `keras_nalu.NALU` exactly."""
    x, c = two_inputs(steps=steps)
    static = NALU(2, tied_weights=tied)
    static(x)
    configured = ConfiguredNALU(2, tied_weights=tied, kernel_initializer="zeros")
    configured([x, c])
    static_weights = {w.name: keras.ops.convert_to_numpy(w) for w in static.weights}
    for name in configured.parameter_names:
        source = "gate_kernel" if name == "gate" else name
        getattr(configured, f"{name}_bias").assign(static_weights[source].ravel())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(configured([x, c])),
        keras.ops.convert_to_numpy(static(x)),
        rtol=1e-6,
        atol=1e-6,
    )


def test_the_control_picks_the_operation_per_example():
    """Control [1, 0] configures a + b, control [0, 1] a * b (saturated W)."""
    layer = ConfiguredNALU(1, kernel_initializer="zeros")
    x = np.array([[3.0, 4.0], [3.0, 4.0], [5.0, 0.5]], "float32")
    c = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], "float32")
    layer([x, c])
    layer.w_hat_bias.assign([20.0, 20.0])
    layer.m_hat_bias.assign([20.0, 20.0])
    # Gate logits x @ G: +large for the sum (control 0), -large for the product.
    layer.gate_kernel.assign([[10.0, 10.0], [-10.0, -10.0]])
    y = keras.ops.convert_to_numpy(layer([x, c]))[:, 0]
    np.testing.assert_allclose(y, [7.0, 12.0, 2.5], rtol=1e-5)


def test_configure_returns_per_example_parameters():
    layer = ConfiguredNALU(2, tied_weights=False)
    x, c = two_inputs(batch=3, steps=4)
    layer([x, c])
    parameters = layer.configure(c)
    assert set(parameters) == {"w_hat", "m_hat", "gate", "mul_w_hat", "mul_m_hat"}
    kernel = keras.ops.convert_to_numpy(layer.m_hat_kernel)
    bias = keras.ops.convert_to_numpy(layer.m_hat_bias)
    expected = (c @ kernel + bias).reshape(3, 4, 3, 2)
    got = keras.ops.convert_to_numpy(parameters["m_hat"])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tied", [True, False])
def test_gradients_reach_every_weight(tied):
    layer = ConfiguredNALU(2, tied_weights=tied, bias_initializer="glorot_uniform")
    x, c = two_inputs()
    assert_gradients_reach_every_weight(layer, [x, c])
    assert len(layer.trainable_weights) == (6 if tied else 10)


def test_shapes_fit_and_keras_file_round_trip(tmp_path):
    model = configured_model(ConfiguredNALU(2), steps=True)
    assert tuple(model.outputs[0].shape) == (None, None, 2)
    x, c = two_inputs(batch=4, steps=7)
    assert tuple(model([x, c]).shape) == (4, 7, 2)
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    model.fit([x, c], np.ones((4, 7, 2), "float32"), batch_size=4, verbose=0)
    for w, old in zip(model.trainable_weights, before, strict=True):
        assert not np.array_equal(keras.ops.convert_to_numpy(w), old), w.path
    model.save(tmp_path / "configured.keras")
    loaded = keras.saving.load_model(tmp_path / "configured.keras")
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(loaded([x, c])),
        keras.ops.convert_to_numpy(model([x, c])),
    )


def test_mixed_precision_keeps_float32():
    keras.config.set_dtype_policy("mixed_float16")
    layer = ConfiguredNALU(1, kernel_initializer="zeros")
    x = np.array([[300.0, 400.0]], "float32")  # product 1.2e5 > float16 max
    c = np.ones((1, 3), "float32")
    model = configured_model(layer, input_dim=2, control_dim=3)
    layer.w_hat_bias.assign([20.0, 20.0])
    layer.m_hat_bias.assign([20.0, 20.0])
    layer.gate_bias.assign([-20.0, -20.0])
    y = model([x, c])
    assert keras.backend.standardize_dtype(y.dtype) == "float32"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y), [[1.2e5]], rtol=1e-4)
    assert all(w.dtype == "float32" for w in model.weights)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": 0}, "`units`.*positive integer.*units=0"),
        ({"units": 1.5}, "`units`.*units=1.5"),
        ({"units": "2"}, "`units`.*units='2'"),
        ({"units": 1, "epsilon": 0.0}, "`epsilon`.*epsilon=0.0"),
        ({"units": 1, "epsilon": float("nan")}, "`epsilon`.*epsilon=nan"),
        ({"units": 1, "tied_weights": "yes"}, "`tied_weights`.*True or False"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConfiguredNALU(**kwargs)


@pytest.mark.parametrize(
    "shapes, message",
    [
        ((4, 3), "list of two tensors"),
        ([(4, 3), (4, 2, 5)], "same rank"),
        ([(4, None), (4, 5)], "last dimension"),
    ],
)
def test_invalid_input_shapes_raise(shapes, message):
    with pytest.raises(ValueError, match=message):
        ConfiguredNALU(1).build(shapes)


@pytest.mark.processes
@pytest.mark.tensorflow  # the export from jax: tests/test_backends_export.py
def test_lstm_configured_model_serves_without_keras_nalu(tmp_path):
    """One input: per step a value and a token; an LSTM configures the NALU."""
    inputs = keras.Input((None, 4), name="steps")
    values = keras.layers.Lambda(lambda t: t[..., :1])(inputs)
    tokens = keras.layers.Lambda(lambda t: t[..., 1:])(inputs)
    h = keras.layers.LSTM(8, return_sequences=True)(tokens)
    model = keras.Model(inputs, ConfiguredNALU(1)([values, h]))
    sample = RNG.uniform(0, 2, (3, 5, 4)).astype("float32")
    path = export_saved_model(model, tmp_path / "configured", sample)
    batches = [RNG.uniform(0, 2, shape).astype("float32") for shape in
               [(1, 2, 4), (6, 9, 4)]]  # fmt: skip
    inputs = {str(i): batch for i, batch in enumerate(batches)}
    served = serve_in_fresh_process(path, inputs, tmp_path)
    for i, x in enumerate(batches):
        np.testing.assert_allclose(
            served[str(i)], keras.ops.convert_to_numpy(model(x)), rtol=1e-5, atol=1e-5
        )
