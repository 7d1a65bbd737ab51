"""Argument and input-shape checks shared by the layers.

Every message says which argument was wrong, what was expected and the value
received, in the words Keras's own layers use.
"""

import math
import numbers


def _invalid(name, expected, value):
    return ValueError(
        f"Received an invalid value for `{name}`, expected {expected}. "
        f"Received: {name}={value!r}"
    )


def positive_int(name, value):
    """Returns `value` as an `int`, or raises if it is not a positive integer.

    Booleans, floats (even `3.0`), strings and `None` are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise _invalid(name, "a positive integer", value)
    return int(value)


def positive_float(name, value):
    """Returns `value` as a `float`, or raises if it is not finite and > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _invalid(name, "a finite number greater than 0", value)
    return float(value)


def boolean(name, value):
    """Returns `value`, or raises if it is not a `bool`."""
    if not isinstance(value, bool):
        raise _invalid(name, "True or False", value)
    return value


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
