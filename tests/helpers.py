"""Helpers the layer tests share."""

import keras
import numpy as np


def gradients(layer, x):
    """`{weight path: gradient of sum(layer(x))}` for every trainable weight,
    on the backend the tests run on (KERAS_BACKEND)."""
    if not layer.built:
        layer(x)
    weights = layer.trainable_weights
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        def loss(values):
            outputs, _ = layer.stateless_call(
                values, [w.value for w in layer.non_trainable_weights], x
            )
            return keras.ops.sum(outputs)

        grads = jax.grad(loss)([w.value for w in weights])
    elif backend == "torch":
        import torch

        loss = keras.ops.sum(layer(x))
        grads = torch.autograd.grad(loss, [w.value for w in weights], allow_unused=True)
    else:
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = keras.ops.sum(layer(x))
        grads = tape.gradient(loss, weights)
    return {
        w.path: None if g is None else keras.ops.convert_to_numpy(g)
        for w, g in zip(weights, grads, strict=True)
    }


def assert_gradients_reach_every_weight(layer, x):
    grads = gradients(layer, x)
    assert grads, "no trainable weights"
    for path, grad in grads.items():
        assert grad is not None, f"no gradient reaches {path}"
        assert np.all(np.isfinite(grad)), f"non-finite gradient for {path}"
        assert np.any(grad != 0), f"zero gradient for {path}"


def constant(value):
    return keras.initializers.Constant(value)


def package_units(cells=True):
    """The arithmetic units `keras_nalu` exports, found through its one list
    of layers, `keras_nalu.layers.__all__`: every `ArithmeticUnit` but the
    interface itself, the recurrent cells too unless `cells` is False. A unit
    added to the package is in it with no change to the tests."""
    from keras_nalu import layers

    return [
        unit
        for unit in (getattr(layers, name) for name in layers.__all__)
        if issubclass(unit, layers.ArithmeticUnit)
        and unit is not layers.ArithmeticUnit
        and (cells or not hasattr(unit, "state_size"))
    ]
