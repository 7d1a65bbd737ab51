"""Argument and input-shape checks shared by the layers.

Every message says which argument was wrong, what was expected and the value
received, in the words Keras's own layers use.
"""

import math
import numbers

import numpy as np


def _invalid(name, expected, value):
    return ValueError(
        f"Received an invalid value for `{name}`, expected {expected}. "
        f"Received: {name}={value!r}"
    )


def tensorflow(what):
    """Imports and returns TensorFlow for `what` (e.g. "export_saved_model"),
    or raises an `ImportError` saying that only it needs TensorFlow."""
    try:
        import tensorflow as tf
    except ImportError as error:
        raise ImportError(
            f"{what} needs TensorFlow, which cannot be imported here ({error}). "
            "Install it (`pip install tensorflow`). Only SavedModel export, "
            "TFLite and tf.distribute need it: the layers, "
            "keras_nalu.training.fit, snap_weights and formulas run without "
            "it on the jax and torch backends."
        ) from error
    return tf


def positive_int(name, value):
    """Returns `value` as an `int`, or raises if it is not a positive integer.

    Booleans, floats (even `3.0`), strings and `None` are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise _invalid(name, "a positive integer", value)
    return int(value)


FLOAT32_TINY = 1.1754944e-38  # the smallest normal float32


def function(name, value, expected="a function"):
    """Returns `value`, or raises if it is not callable."""
    if not callable(value):
        raise _invalid(name, expected, value)
    return value


def non_negative_int(name, value):
    """Returns `value` as an `int`, or raises if it is not an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise _invalid(name, "integers >= 0", value)
    return int(value)


def positive_float(name, value):
    """Returns `value` as a `float`, or raises unless it is finite and large
    enough not to round to 0 in float32 (at least 1.2e-38)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < FLOAT32_TINY
    ):
        raise _invalid(name, "a finite number greater than 0 (at least 1.2e-38)", value)
    return float(value)


def non_negative_float(name, value):
    """Returns `value` as a `float`, or raises unless it is finite and >= 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise _invalid(name, "a finite number >= 0", value)
    return float(value)


def one_of(name, value, options):
    """Returns `value`, or raises if it is not one of `options`."""
    if value not in options:
        raise _invalid(name, f"one of {tuple(options)}", value)
    return value


def boolean(name, value):
    """Returns `value` as a `bool`, or raises if it is not a Python or NumPy bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise _invalid(name, "True or False", value)
    return bool(value)


def feature_dim(layer, input_shape):
    """The size of the last input axis, checked to be known on a rank >= 2 input."""
    input_shape = tuple(input_shape)
    where = f"{type(layer).__name__} layer '{layer.name}'"
    if len(input_shape) < 2:
        raise ValueError(
            f"Received an invalid input for {where}, expected inputs of rank "
            f">= 2 with shape (batch_size, ..., features). "
            f"Received: input_shape={input_shape}"
        )
    if input_shape[-1] is None:
        raise ValueError(
            f"Received an invalid input for {where}, expected the last "
            f"dimension (features) to be known. "
            f"Received: input_shape={input_shape}"
        )
    return int(input_shape[-1])


def check_built(layer, what):
    """Raises unless `layer` is built: `what` (an attribute) needs its weights."""
    if not layer.built:
        raise ValueError(
            f"`{what}` of {type(layer).__name__} layer '{layer.name}' is not "
            "available before the layer is built: call the layer on an "
            "input, or call `build(input_shape)`, first."
        )
