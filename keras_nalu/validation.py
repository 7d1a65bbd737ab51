"""Argument and input-shape checks, one definition for the library and the
research harness.

Each check returns the value (converted: `positive_int` gives an `int`) or
raises an `InvalidValueError`, a `ValueError` whose message says which
argument was wrong, what was expected and the value received, in the words
Keras's own layers use:

>>> from keras_nalu import validation
>>> validation.positive_int("units", 3)
3
>>> validation.one_of("mode", "fast", ("fast", "exact"))
'fast'
>>> try:
...     validation.non_negative_int("seed", -1)
... except ValueError as error:
...     print(error)
Received an invalid value for `seed`, expected an integer >= 0. Received: seed=-1
"""

import math
import numbers
from collections.abc import Collection
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


class InvalidValueError(ValueError):
    """The `ValueError` of an invalid argument: it names the argument, what
    was expected and the value received (`name`, `expected`, `value`), in
    the words Keras's own layers use."""

    def __init__(self, name: str, expected: str, value: Any) -> None:
        super().__init__(
            f"Received an invalid value for `{name}`, expected {expected}. "
            f"Received: {name}={value!r}"
        )
        self.name, self.expected, self.value = name, expected, value


def invalid(name: str, expected: str, value: Any) -> InvalidValueError:
    """The error to raise for argument `name`: `expected` (e.g. "a positive
    integer") and the `value` received.

    >>> error = invalid("size", "a positive integer", 0)
    >>> isinstance(error, ValueError), error.expected
    (True, 'a positive integer')
    >>> print(error)
    Received an invalid value for `size`, expected a positive integer. Received: size=0
    """
    return InvalidValueError(name, expected, value)


def tensorflow(what: str) -> Any:
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


def positive_int(name: str, value: Any) -> int:
    """Returns `value` as an `int`, or raises if it is not a positive integer.

    Booleans, floats (even `3.0`), strings and `None` are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise invalid(name, "a positive integer", value)
    return int(value)


FLOAT32_TINY = 1.1754944e-38  # the smallest normal float32


def function(name: str, value: T, expected: str = "a function") -> T:
    """Returns `value`, or raises if it is not callable."""
    if not callable(value):
        raise invalid(name, expected, value)
    return value


def non_negative_int(name: str, value: Any) -> int:
    """Returns `value` as an `int`, or raises if it is not an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise invalid(name, "an integer >= 0", value)
    return int(value)


def positive_float(name: str, value: Any) -> float:
    """Returns `value` as a `float`, or raises unless it is finite and large
    enough not to round to 0 in float32 (at least 1.2e-38)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < FLOAT32_TINY
    ):
        raise invalid(name, "a finite number greater than 0 (at least 1.2e-38)", value)
    return float(value)


def non_negative_float(name: str, value: Any) -> float:
    """Returns `value` as a `float`, or raises unless it is finite and >= 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise invalid(name, "a finite number >= 0", value)
    return float(value)


def one_of(name: str, value: T, options: Collection[Any]) -> T:
    """Returns `value`, or raises if it is not one of `options`."""
    if value not in options:
        raise invalid(name, f"one of {tuple(options)}", value)
    return value


def boolean(name: str, value: Any) -> bool:
    """Returns `value` as a `bool`, or raises if it is not a Python or NumPy bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(name, "True or False", value)
    return bool(value)


def feature_dim(layer: Any, input_shape: Any) -> int:
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


def check_built(layer: Any, what: str) -> None:
    """Raises unless `layer` is built: `what` (an attribute) needs its weights."""
    if not layer.built:
        raise ValueError(
            f"`{what}` of {type(layer).__name__} layer '{layer.name}' is not "
            "available before the layer is built: call the layer on an "
            "input, or call `build(input_shape)`, first."
        )
