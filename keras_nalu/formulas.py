"""Readable formulas: what a trained arithmetic model computes, as algebra.

`formulas(model)` reads each layer's effective weights and writes the model's
outputs as expressions of its inputs, for example `y0 = x3*x17 - x42`. The
expressions are SymPy's (`expressions` returns them as SymPy objects, to
simplify, compare or print as LaTeX).

Each arithmetic unit writes its own outputs (its `expression`, the interface
of `keras_nalu.ArithmeticUnit`, so a unit of your own is read too). What each
layer contributes, with `W` its effective weights:

- `NAC`, `NAU`: `sum_i W_ij h_i`.
- `NMU`: `prod_i (W_ij h_i + 1 - W_ij)`: `h_i` where `W_ij = 1`, nothing
  where it is 0. `NMRU`: the same over `[h, 1 / h]` (with `sign_retrieval`
  and weights off 0 and 1, its magnitudes times the cosine of its sign).
- `RealNPU`: `prod_i r_i^W_ij * cos(pi * sum_i W_ij k_i)` with
  `r_i = g_i |h_i| + 1 - g_i` and `k_i = g_i [h_i < 0]`; once every `W_ij`
  is -1, 0 or 1 and every gate 0 or 1, simply `prod_i h_i^(W_ij g_i)` (its
  `epsilon` and exponent cap are left out).
- `NPU`: the `RealNPU`'s where its imaginary exponents are 0, else
  `exp(sum_i W_ij log r_i - pi V_ij k_i) * cos(sum_i V_ij log r_i + pi W_ij k_i)`
  with `V` the imaginary exponents.
- `NALU`: `g * a + (1 - g) * m` with `a` the NAC above,
  `m = prod_i |h_i|^W_ij` (the layer's `epsilon` inside the logarithm is left
  out) and `g = sigmoid(h @ G)`; given inputs `x`, a gate that is open (or
  closed) within `atol` on every one of them is written as 1 (or 0), so only
  the path it selects remains.
- `INALU`: the same with its sign recovery (`h_i^W_ij` where `|W_ij| = 1`)
  and its input-independent gate; its exponent clipping is left out.
- `keras.layers.Dense`: `h @ kernel + bias`, inside its activation's name
  unless linear.
- `keras.layers.Concatenate` (on the last axis), `Add`, `Subtract` and
  `Multiply`, which join the branches of a functional model: the features
  side by side, or their sum, difference or product.

A weight within `atol` of an integer is written as that integer; any other
is written with `digits` significant digits, so a formula shows at a glance
whether a model learned exact arithmetic. To check that the rounded model
really computes the formula, snap it first with `keras_nalu.snap_weights`,
which verifies the exact weights on data before returning them.
"""

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from keras_nalu import validation
from keras_nalu._types import ArrayLike
from keras_nalu.layers.arithmetic_unit import ArithmeticUnit, unstarted_penalties

LAYERS = (ArithmeticUnit, keras.layers.Dense)
MERGES = (
    keras.layers.Concatenate,
    keras.layers.Add,
    keras.layers.Subtract,
    keras.layers.Multiply,
)
SUPPORTED = (
    "the arithmetic units (keras_nalu.ArithmeticUnit: NAC, NALU, INALU, NAU, NMU, "
    "NMRU, RealNPU, NPU, yours) and keras.layers.Dense, joined by Concatenate "
    "(last axis), Add, Subtract or Multiply"
)


def expressions(
    model: keras.Model,
    input_names: Sequence[str] | None = None,
    *,
    x: ArrayLike | None = None,
    positive: bool = False,
    atol: float = 1e-3,
    digits: int = 4,
) -> list[Any]:
    """The outputs of `model` as SymPy expressions of its inputs.

    Args:
        model: A built `keras.Model` of one input and one output, of the
            layers listed in `keras_nalu.formulas`: a `keras.Sequential`, or
            a functional model whose branches those merge layers join (each
            layer applied once).
        input_names: Names of the input features, a sequence of strings
            (default `x0`, `x1`, ...).
        x: Optional inputs, `(batch, features)`, on which to decide the NALU
            gates (see `keras_nalu.formulas`).
        positive: Whether the inputs are positive, as on a positive training
            range: the absolute values and signs of the multiplicative paths
            of NALU and INALU then disappear (keyword-only).
        atol: Non-negative float: a weight (or a gate on `x`) within `atol` of
            an integer is written as that integer (keyword-only).
        digits: Positive integer, significant digits of the other weights
            (keyword-only).

    Returns:
        A list of SymPy expressions, one per output unit.

    Raises:
        ValueError: For an unsupported layer or operation, or invalid
            arguments.
    """
    _warn_unstarted(model)
    return _read(model, input_names, x, positive, atol, digits)


def _warn_unstarted(model):
    """Warns, at the caller's caller (the user's line), for each unit that
    trained only before its penalty's start (`unstarted_penalties`)."""
    if not isinstance(model, keras.Model):
        return  # `_read` says what is wrong with it
    for sentence in unstarted_penalties(model):
        warnings.warn(sentence, UserWarning, stacklevel=3)


def _read(model, input_names, x, positive, atol, digits):
    """`expressions`, without the warnings."""
    import sympy  # on use: `import keras_nalu` stays as fast as it was

    _check_model(model)
    size = int(model.inputs[0].shape[-1])
    names = _names("input_names", input_names, size, "x")
    atol = validation.non_negative_float("atol", atol)
    digits = validation.positive_int("digits", digits)
    positive = validation.boolean("positive", positive)
    if x is not None:
        x = np.asarray(x, dtype="float32")
        if x.ndim != 2 or x.shape[1] != size or x.shape[0] == 0:
            raise ValueError(
                "Received an invalid value for `x`, expected an array of shape "
                f"(batch, {size}), batch >= 1. Received: x of shape {x.shape}"
            )
        if not np.all(np.isfinite(x)):
            raise ValueError(
                "Received an invalid value for `x`, expected finite numbers. "
                "Received: x holding NaN or inf"
            )
    assumptions = {"positive": True} if positive else {"real": True}
    h = [sympy.Symbol(name, **assumptions) for name in names]
    return Writer(sympy, atol, digits)._model(model, _Value(h, x)).h


def formulas(
    model: keras.Model,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    *,
    x: ArrayLike | None = None,
    positive: bool = False,
    atol: float = 1e-3,
    digits: int = 4,
) -> list[str]:
    """The outputs of `model` as readable formulas, e.g. `"y0 = x3*x17 - x42"`.

    Args:
        model: As for `expressions`.
        input_names: As for `expressions`.
        output_names: Names of the outputs (default `y0`, `y1`, ...).
        x: As for `expressions` (keyword-only).
        positive: As for `expressions` (keyword-only).
        atol: As for `expressions` (keyword-only).
        digits: As for `expressions` (keyword-only).

    Returns:
        A list of strings `"NAME = EXPRESSION"`, one per output unit.

    Example:

    >>> import numpy as np, keras
    >>> from keras_nalu import NAU, NMU, formulas
    >>> model = keras.Sequential([keras.Input((3,)), NAU(2), NMU(1)])
    >>> _ = model.layers[0].kernel.assign([[1, 0], [1, 0], [0, -1]])
    >>> _ = model.layers[1].kernel.assign([[1], [1]])
    >>> formulas(model, ["a", "b", "c"])
    ['y0 = -c*(a + b)']
    """
    _warn_unstarted(model)
    found = _read(model, input_names, x, positive, atol, digits)
    names = _names("output_names", output_names, len(found), "y")
    return [
        f"{name} = {expression}" for name, expression in zip(names, found, strict=True)
    ]


class _Value:
    """What flows through a model being read: the expressions of the
    features `h` and, when inputs `x` were given, their values there."""

    def __init__(self, h, x=None):
        self.h, self.x = h, x


class Writer:
    """Writes a model's outputs as expressions, layer by layer.

    A unit's `expression(h, writer, x)` (`keras_nalu.ArithmeticUnit`)
    receives one: `writer.sympy` is the SymPy module, `number(v)` writes a
    weight (an integer within `atol`, else `digits` significant digits),
    `matrix(w)` a kernel `(in, units)` as rows of numbers per unit,
    `sums(rows, h)` and `products(rows, h)` the units `sum_i w_i h_i` and
    `prod_i (w_i h_i + 1 - w_i)`, and `gate(values, symbolic)` a gate
    decided on data.
    """

    def _model(self, model: keras.Model, value: Any) -> Any:
        """`model` applied to `value`, layer by layer along its graph."""
        if isinstance(model, keras.Sequential):
            for layer in model.layers:
                value = self._operation(layer, value)
            return value
        # Keras's own walk through a functional graph (as `Functional.call`
        # does), with each operation replaced by the reading of it.
        return model._run_through_graph(
            [value], operation_fn=lambda op: functools.partial(self._operation, op)
        )

    def _operation(self, op: Any, *args: Any, **kwargs: Any) -> Any:
        """One operation of a model applied to its arguments: a `_Value`, or
        a list of them for a merge layer."""
        if len(args) != 1 or not isinstance(op, (keras.Model, *MERGES, *LAYERS)):
            raise _unsupported(op)
        value = args[0]
        if isinstance(op, keras.Model):
            return self._model(op, value)
        if isinstance(op, MERGES):
            return self._merge(op, value)
        x = value.x
        h = self._layer(op, value.h, x)
        return _Value(h, None if x is None else keras.ops.convert_to_numpy(op(x)))

    def _merge(self, layer: keras.layers.Layer, values: list[Any]) -> Any:
        if isinstance(layer, keras.layers.Concatenate):
            if layer.axis not in (-1, len(layer.input[0].shape) - 1):
                raise ValueError(
                    f"Cannot write a formula for {layer.name!r}: it concatenates "
                    f"on axis {layer.axis}, expected the last axis (features)."
                )
            h = [hi for v in values for hi in v.h]
        else:
            combine = {
                keras.layers.Add: lambda terms: sum(terms[1:], terms[0]),
                keras.layers.Subtract: lambda terms: terms[0] - terms[1],
                keras.layers.Multiply: lambda terms: self.sympy.Mul(*terms),
            }[type(layer)]
            h = [combine(list(t)) for t in zip(*(v.h for v in values), strict=True)]
        xs = [v.x for v in values]
        x = (
            None
            if any(xi is None for xi in xs)
            else keras.ops.convert_to_numpy(layer(xs))
        )
        return _Value(h, x)

    def __init__(self, sympy: Any, atol: float, digits: int) -> None:
        self.sympy, self.atol, self.digits = sympy, atol, digits

    def number(self, value: float) -> Any:
        nearest = round(float(value))
        if abs(value - nearest) <= self.atol:
            return self.sympy.Integer(nearest)
        return self.sympy.Float(float(value), self.digits)

    def matrix(self, weight: ArrayLike) -> list[list[Any]]:
        w = keras.ops.convert_to_numpy(weight).astype(np.float64)
        return [[self.number(v) for v in row] for row in w.T]  # (units, inputs)

    def sums(self, w: list[list[Any]], h: list[Any]) -> list[Any]:
        return [
            self.sympy.Add(*(wi * hi for wi, hi in zip(row, h, strict=True)))
            for row in w
        ]

    def products(self, w: list[list[Any]], h: list[Any]) -> list[Any]:
        return [
            self.sympy.Mul(*(wi * hi + 1 - wi for wi, hi in zip(row, h, strict=True)))
            for row in w
        ]

    def gate(self, values: Any, symbolic: Any) -> Any:
        """1 or 0 when every gate value is within `atol` of it, else `symbolic`."""
        if values is not None and values.size:
            if np.all(values >= 1 - self.atol):
                return self.sympy.Integer(1)
            if np.all(values <= self.atol):
                return self.sympy.Integer(0)
        return symbolic

    def _layer(self, layer: keras.layers.Layer, h: list[Any], x: Any) -> list[Any]:
        sympy = self.sympy
        if isinstance(layer, ArithmeticUnit):
            return layer.expression(h, self, x)
        if isinstance(layer, keras.layers.Dense):
            z = self.sums(self.matrix(layer.kernel), h)
            if layer.use_bias:
                bias = keras.ops.convert_to_numpy(layer.bias).astype(np.float64)
                z = [zj + self.number(b) for zj, b in zip(z, bias, strict=True)]
            name = keras.activations.serialize(layer.activation)
            name = name if isinstance(name, str) else name.get("config", "linear")
            if name == "linear":
                return z
            return [sympy.Function(name)(zj) for zj in z]
        raise _unsupported(layer)


def _check_model(model):
    if not isinstance(model, keras.Model) or not model.built:
        raise ValueError(
            "Received an invalid value for `model`, expected a built keras.Model. "
            f"Received: model={model!r}"
        )
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise ValueError(
            "Received a model of "
            f"{len(model.inputs)} inputs and {len(model.outputs)} outputs, "
            "expected one input and one output."
        )


def _unsupported(op):
    return ValueError(
        f"Cannot write a formula for the operation {op.name!r} of type "
        f"{type(op).__name__}: supported are {SUPPORTED}."
    )


def _names(argument, names, size, prefix):
    if names is None:
        return [f"{prefix}{i}" for i in range(size)]
    names = list(names) if not isinstance(names, str) else names
    if (
        isinstance(names, str)
        or len(names) != size
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
    ):
        raise ValueError(
            f"Received an invalid value for `{argument}`, expected {size} "
            f"distinct non-empty string{'s' if size != 1 else ''}. "
            f"Received: {argument}={names!r}"
        )
    return names
