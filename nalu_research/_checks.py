"""Argument checks of the harness, in the wording of Keras's own layers:
"Received an invalid value for `name`, expected ... Received: name=value"."""

import math
import numbers

import numpy as np


def invalid(name, expected, value):
    """The `ValueError` for argument `name`: what was expected and received."""
    return ValueError(
        f"Received an invalid value for `{name}`, expected {expected}. "
        f"Received: {name}={value!r}"
    )


def _require(name, value, ok, expected):
    if not ok:
        raise invalid(name, expected, value)
    return value


def _integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _finite(value):
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def positive_int(name, value):
    return int(
        _require(name, value, _integer(value) and value > 0, "a positive integer")
    )


def non_negative_int(name, value):
    return int(_require(name, value, _integer(value) and value >= 0, "integers >= 0"))


def positive_float(name, value):
    ok = _finite(value) and value > 0
    return float(_require(name, value, ok, "a finite number greater than 0"))


def non_negative_float(name, value):
    ok = _finite(value) and value >= 0
    return float(_require(name, value, ok, "a finite number >= 0"))


def one_of(name, value, options):
    return _require(name, value, value in options, f"one of {tuple(options)}")


def boolean(name, value):
    return bool(
        _require(name, value, isinstance(value, (bool, np.bool_)), "True or False")
    )
