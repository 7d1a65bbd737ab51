"""Checks for a unit of your own: does it keep `ArithmeticUnit`'s interface?

The tools read a unit only through `keras_nalu.ArithmeticUnit`'s interface
(`math`, `effective_weights`, `exact_values`, `snap`, `penalty`,
`expression`), so a unit that breaks it fails far from its cause: math that
does not broadcast over a leading seed axis trains wrong in the research
harness's seed-batched engine, a misspelt key of `exact_values` leaves
`snap_weights` saying the model "has not learned exact arithmetic".
`check_unit` runs each part of the interface on small random weights and
inputs and says which one breaks, in the spirit of keras-hub's
`run_layer_test`: run it in your unit's tests.
"""

from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from keras_nalu import validation
from keras_nalu.formulas import expressions
from keras_nalu.layers.arithmetic_unit import ArithmeticUnit

# What `check_unit` checks, in order: the `check` of its `UnitCheckError`.
CHECKS = (
    "config",
    "call",
    "effective weights",
    "exact values",
    "stacked math",
    "stacked effective weights",
    "stacked penalty",
    "snap",
    "expression",
)


class UnitCheckError(AssertionError):
    """A unit breaks `ArithmeticUnit`'s interface: `check` names the part
    (one of `CHECKS`), the message says what was found."""

    def __init__(self, unit: str, check: str, found: str) -> None:
        super().__init__(f"{unit} fails check_unit's {check!r} check: {found}")
        self.unit, self.check = unit, check


def check_unit(
    unit: ArithmeticUnit | type[ArithmeticUnit],
    input_size: int = 3,
    units: int = 2,
    seeds: int = 3,
    *,
    batch_size: int = 4,
    input_range: tuple[float, float] = (0.5, 2.0),
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """Checks that `unit` keeps `keras_nalu.ArithmeticUnit`'s interface.

    It makes `seeds` copies of the unit (`from_config(get_config())`), each
    built for `input_size` features with weights of its own initializers,
    and random inputs in `input_range`; then checks, in order (the `check`
    of the error, listed in `CHECKS`):

    - `"config"`: `from_config(get_config())` makes a copy.
    - `"call"`: calling the layer gives `(batch, outputs)`.
    - `"effective weights"`: `effective_weights(unit_weights())` is a dict
      of tensors by name (the tools pass the weights: a unit need not
      accept none).
    - `"exact values"`: each key of `exact_values` names an effective
      weight of the unit, and each value is a tuple of numbers.
    - `"stacked math"`: `math(x, weights)` on the copies' weights stacked
      along a leading seed axis, with inputs `(seeds, batch, input_size)`,
      equals calling each copy on its own inputs: what the research
      harness's seed-batched engine trains is what the layer computes.
    - `"stacked effective weights"` and `"stacked penalty"`: the same for
      `effective_weights` and `penalty` (one value per copy, or `None`).
    - `"snap"`: after `snap()`, each effective weight of `exact_values` is
      one of its exact values.
    - `"expression"`: the snapped unit's `expression` (read by
      `keras_nalu.formulas`, written exactly) computes the layer's outputs
      on the inputs.

    Args:
        unit: An `ArithmeticUnit` subclass, made as `unit(units)`, or an
            instance (not changed: copies of its configuration are checked;
            for other arguments than `units`).
        input_size: Positive integer, the number of input features.
        units: Positive integer, the number of outputs of a class's
            instance (an instance keeps its own).
        seeds: Positive integer, the number of copies stacked.
        batch_size: Positive integer, the examples per copy (keyword-only).
        input_range: `(low, high)`, the range of the random inputs, positive
            by default for the units that take logarithms (keyword-only).
        rtol: Non-negative float, the relative tolerance of the comparisons
            (keyword-only).
        atol: Non-negative float, their absolute tolerance (keyword-only).

    Raises:
        UnitCheckError: An `AssertionError` naming the check that failed
            (`error.check`) and what it found.
        ValueError: An argument is invalid.

    Example:

    >>> import keras
    >>> from keras import ops
    >>> from keras_nalu import ArithmeticUnit, NAU
    >>> from keras_nalu import ops as nalu_ops
    >>> from keras_nalu.testing import check_unit
    >>> check_unit(NAU)  # passes: returns None
    >>> class Sum(ArithmeticUnit):  # `sum_i W_ij x_i`, W in [-1, 1]
    ...     exact_values = {"kernal": (-1.0, 0.0, 1.0)}  # misspelt
    ...     def __init__(self, units, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.units = units
    ...     def build(self, input_shape):
    ...         self.kernel = self.add_weight(
    ...             name="kernel", shape=(input_shape[-1], self.units))
    ...     def effective_weights(self, weights):
    ...         return {"kernel": ops.clip(weights["kernel"], -1.0, 1.0)}
    ...     def math(self, x, weights, training=False):
    ...         return nalu_ops.matmul(x, self.effective_weights(weights)["kernel"])
    ...     def expression(self, h, writer, x=None):
    ...         return writer.sums(writer.matrix(self.effective_kernel), h)
    ...     def get_config(self):
    ...         return {**super().get_config(), "units": self.units}
    >>> try:
    ...     check_unit(Sum)
    ... except AssertionError as error:
    ...     print(error.check)
    exact values
    """
    name, make = _maker(unit, units)
    input_size = validation.positive_int("input_size", input_size)
    seeds = validation.positive_int("seeds", seeds)
    batch_size = validation.positive_int("batch_size", batch_size)
    low, high = _checked_range(input_range)
    rtol = validation.non_negative_float("rtol", rtol)
    atol = validation.non_negative_float("atol", atol)

    def fail(check, found):
        return UnitCheckError(name, check, found)

    def close(a, b):
        return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)

    rng = np.random.default_rng(0)
    x = rng.uniform(low, high, (seeds, batch_size, input_size)).astype("float32")
    copies = [_copy(make, fail) for _ in range(seeds)]
    outputs = [_called(copy, x[i], fail) for i, copy in enumerate(copies)]
    effective = [_effective(copy, fail) for copy in copies]
    snapped = _snapped_names(copies[0], effective[0], fail)

    # The copies' weights stacked: what the seed-batched engine trains.
    first = copies[0]
    stacked = {
        key: keras.ops.convert_to_tensor(
            np.stack(
                [keras.ops.convert_to_numpy(c.unit_weights()[key]) for c in copies]
            )
        )
        for key in first.unit_weights()
    }
    inputs = keras.ops.convert_to_tensor(x)
    found = _numpy(_run(lambda: first.math(inputs, stacked), "stacked math", fail))
    want = np.stack(outputs)
    if not close(found, want):
        raise fail(
            "stacked math",
            f"math(x, weights) on {seeds} copies stacked on a leading axis "
            f"differs from the {seeds} layers called one by one: "
            f"{_described(found, want)} (apply a kernel with "
            "keras_nalu.ops.matmul, and expand a vector weight on axis -2 "
            "before it meets the batch)",
        )
    check = "stacked effective weights"
    together = _run(lambda: first.effective_weights(stacked), check, fail)
    for key in effective[0]:
        if not isinstance(together, dict) or key not in together:
            raise fail(
                check, f"effective_weights of the stacked weights has no {key!r}"
            )
        found = _numpy(together[key])
        want = np.stack([_numpy(e[key]) for e in effective])
        if not close(found, want):
            raise fail(
                check,
                "effective_weights of the stacked weights differs from each "
                f"copy's in {key!r}: {_described(found, want)}",
            )
    _check_penalty(copies, stacked, close, fail)

    for copy, x_i in zip(copies, x, strict=True):
        _check_snap(copy, snapped, atol, fail)
        _check_expression(copy, x_i, input_size, rtol, atol, fail)


def _maker(unit, units):
    """`(name, make)`: the unit's name for messages and a function making a
    fresh, unbuilt copy of it."""
    if isinstance(unit, type) and issubclass(unit, ArithmeticUnit):
        if getattr(unit, "state_size", None) is not None:
            raise _not_a_layer(unit)
        units = validation.positive_int("units", units)
        return unit.__name__, lambda: unit(units)
    if isinstance(unit, ArithmeticUnit):
        if getattr(unit, "state_size", None) is not None:
            raise _not_a_layer(unit)
        config = unit.get_config()
        cls = type(unit)
        return f"{cls.__name__} {unit.name!r}", lambda: cls.from_config(config)
    raise validation.invalid(
        "unit", "an ArithmeticUnit subclass or an instance of one", unit
    )


def _not_a_layer(unit):
    return validation.invalid(
        "unit",
        "a unit layer, not a recurrent cell (check the layer it steps: NAU for "
        "NAUCell, NAC for NACCell, NALU for NALUCell)",
        unit,
    )


def _checked_range(input_range):
    try:
        low, high = (float(v) for v in input_range)
    except (TypeError, ValueError):
        low, high = np.nan, np.nan
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise validation.invalid(
            "input_range", "(low, high), finite numbers, low < high", input_range
        )
    return low, high


def _run(function: Callable[[], Any], check: str, fail: Callable) -> Any:
    """`function()`, an error in it reported as the failure of `check`."""
    try:
        return function()
    except Exception as error:  # the unit's own code: any error is its failure
        raise fail(check, f"{type(error).__name__}: {error}") from error


def _copy(make, fail):
    original = _run(make, "config", fail)
    return _run(
        lambda: type(original).from_config(original.get_config()), "config", fail
    )


def _called(copy, x, fail):
    y = _numpy(_run(lambda: copy(x), "call", fail))
    if y.ndim != 2 or y.shape[0] != x.shape[0]:
        raise fail("call", f"outputs of shape {y.shape} for inputs {x.shape}")
    return y


def _effective(copy, fail):
    effective = _run(
        lambda: copy.effective_weights(copy.unit_weights()), "effective weights", fail
    )
    if not isinstance(effective, dict) or not all(
        isinstance(key, str) for key in effective
    ):
        raise fail(
            "effective weights",
            f"effective_weights(weights) returned {type(effective).__name__}, "
            "expected a dict {name: tensor}",
        )
    return effective


def _snapped_names(unit, effective, fail):
    """The names of `exact_values` the unit snaps; fails for any other."""
    exact_values = unit.exact_values
    if not isinstance(exact_values, dict):
        raise fail("exact values", "exact_values is not a dict {name: values}")
    for key, values in exact_values.items():
        if key not in effective:
            raise fail(
                "exact values",
                f"the key {key!r} of exact_values names no effective weight: the "
                f"unit has {sorted(effective)} (a unit whose weights depend on its "
                "configuration lists only those it has)",
            )
        if (
            not isinstance(values, tuple)
            or not values
            or not all(isinstance(v, (int, float)) for v in values)
        ):
            raise fail(
                "exact values",
                f"exact_values[{key!r}] is {values!r}, expected a tuple of numbers",
            )
    return [key for key in exact_values if key in effective]


def _check_penalty(copies, stacked, close, fail):
    first = copies[0]
    found = _run(lambda: first.penalty(stacked), "stacked penalty", fail)
    each = [
        _run(lambda c=c: c.penalty(c.unit_weights()), "stacked penalty", fail)
        for c in copies
    ]
    if found is None and all(p is None for p in each):
        return
    if found is None or any(p is None for p in each):
        raise fail("stacked penalty", "penalty(weights) is None for some weights only")
    found, want = _numpy(found), np.stack([_numpy(p) for p in each])
    if not close(found, want):
        raise fail(
            "stacked penalty",
            "penalty of the stacked weights differs from each copy's (expected "
            f"one value per copy): {_described(found, want)}",
        )


def _check_snap(copy, names, atol, fail):
    _run(copy.snap, "snap", fail)
    effective = _effective(copy, fail)
    for key in names:
        w = _numpy(effective[key])
        exact = np.asarray(copy.exact_values[key], dtype=np.float64)
        off = np.min(np.abs(w[..., None] - exact), axis=-1)
        if np.any(off > atol):
            raise fail(
                "snap",
                f"after snap(), the effective weight {key!r} holds "
                f"{w.ravel()[np.argmax(off)]:.7g}, not one of its exact values "
                f"{tuple(exact.tolist())}",
            )


def _check_expression(copy, x, input_size, rtol, atol, fail):
    import sympy

    model = keras.Sequential([keras.Input((input_size,)), copy])
    found = _run(
        lambda: expressions(model, x=x, atol=0.0, digits=17), "expression", fail
    )
    y = _numpy(copy(x))
    if len(found) != y.shape[-1]:
        raise fail(
            "expression",
            f"expression wrote {len(found)} outputs; the layer has {y.shape[-1]}",
        )
    symbols = [sympy.Symbol(f"x{i}", real=True) for i in range(input_size)]
    sigmoid = {"sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z))}
    columns = list(x.astype(np.float64).T)

    def evaluated(expression, size):
        function = sympy.lambdify(symbols, expression, [sigmoid, "numpy"])
        with np.errstate(all="ignore"):
            values = np.asarray(function(*columns), dtype=np.float64)
        return np.broadcast_to(values, (size,))  # a constant is one number

    for j, expression in enumerate(found):
        values = _run(lambda e=expression: evaluated(e, len(x)), "expression", fail)
        if not np.allclose(values, y[:, j], rtol=rtol, atol=atol):
            raise fail(
                "expression",
                f"output {j} of the snapped unit, written {expression}, differs "
                f"from the layer's: {_described(values, y[:, j])}",
            )


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value), dtype=np.float64)


def _described(found, want):
    """Where `found` differs from `want` most: its shape, or the value."""
    if found.shape != want.shape:
        return f"shape {found.shape} instead of {want.shape}"
    difference = np.abs(found - want)
    difference[np.isnan(difference)] = np.inf
    index = np.unravel_index(np.argmax(difference), difference.shape)
    at = tuple(int(i) for i in index)
    return f"{found[index]:.7g} instead of {want[index]:.7g} at {at}"
