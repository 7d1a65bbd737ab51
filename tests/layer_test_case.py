"""The public-API check every keras_nalu layer passes (after keras-hub's
`run_layer_test`): config round trip through JSON, symbolic and eager call
shapes, one `fit` step, `.keras` save/load and mixed precision.
"""

import json

import keras
import numpy as np


def _model(layer, input_shape):
    """A model applying `layer` (an RNN cell is wrapped in `keras.layers.RNN`)."""
    if hasattr(layer, "state_size"):
        layer = keras.layers.RNN(layer)
    inputs = keras.Input(input_shape[1:])
    return keras.Model(inputs, layer(inputs))


_GETTERS = {
    "_initializer": keras.initializers,
    "_regularizer": keras.regularizers,
    "_constraint": keras.constraints,
}


def _serialized(name, value):
    """How `get_config` should store constructor argument `name=value`."""
    for suffix, module in _GETTERS.items():
        if name.endswith(suffix):
            return module.serialize(module.get(value))
    return value


def _inputs(input_shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, size=input_shape).astype("float32")


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_shape,
    expected_output_shape,
    mixed_precision_output_dtype="float16",
    tmp_path=None,
):
    """Checks the Keras contract of `layer_cls(**init_kwargs)`.

    Args:
        layer_cls: The layer (or RNN cell) class.
        init_kwargs: Constructor arguments; every one must round-trip.
        input_shape: Shape of a concrete input, batch first.
        expected_output_shape: Shape of the output of the model applying
            the layer (an RNN cell is wrapped in `keras.layers.RNN`).
        mixed_precision_output_dtype: Output dtype under "mixed_float16".
        tmp_path: Folder for the `.keras` file.
    """
    x = _inputs(input_shape)

    # Config round trip, through JSON and the registered name.
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for name, value in init_kwargs.items():
        assert name in config, f"get_config() lacks constructor argument {name}"
        assert config[name] == _serialized(name, value), (name, config[name], value)
    restored = layer_cls.from_config(json.loads(json.dumps(config)))
    assert restored.get_config() == config
    serialized = json.dumps(keras.saving.serialize_keras_object(layer))
    revived = keras.saving.deserialize_keras_object(json.loads(serialized))
    assert type(revived) is layer_cls
    assert revived.get_config() == config

    # Symbolic and eager shapes.
    model = _model(layer_cls(**init_kwargs), input_shape)
    assert tuple(model.outputs[0].shape) == (None,) + tuple(expected_output_shape[1:])
    output = model(x)
    assert tuple(output.shape) == tuple(expected_output_shape)
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(output)))

    # One fit step moves every trainable weight.
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    y = np.ones(expected_output_shape, dtype="float32")
    model.fit(x, y, batch_size=input_shape[0], epochs=1, verbose=0)
    after = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert before, "the layer has no trainable weights"
    weights = model.trainable_weights
    for weight, old, new in zip(weights, before, after, strict=True):
        assert not np.array_equal(old, new), f"{weight.path} did not train"

    # `.keras` round trip, without custom_objects.
    if tmp_path is not None:
        path = tmp_path / f"{layer_cls.__name__}.keras"
        model.save(path)
        loaded = keras.saving.load_model(path)
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(loaded(x)),
            keras.ops.convert_to_numpy(model(x)),
        )

    # Mixed precision: float32 variables, a finite output of the stated dtype.
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        mixed = _model(layer_cls(**init_kwargs), input_shape)
        output = mixed(x)
        assert keras.backend.standardize_dtype(output.dtype) == (
            mixed_precision_output_dtype
        )
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(output)))
        for weight in mixed.weights:
            if "int" not in weight.dtype:  # e.g. a step counter
                assert weight.dtype == "float32", weight.path
        mixed.compile(optimizer="adam", loss="mse")
        mixed.fit(x, y, batch_size=input_shape[0], epochs=1, verbose=0)
    finally:
        keras.config.set_dtype_policy(previous)
