"""Exact weights: snap a trained arithmetic model to the values it approaches.

A unit that has learned `a + b` holds weights near 1 and 0, but a NAC's
`tanh(w_hat) * sigmoid(m_hat)` reaches 1 only in the limit and gradient
descent stops short of it, so the model extrapolates with a small relative
error that grows no smaller with more data. `snap_weights` rounds each
unit's effective weights to the exact values they approach and keeps the
result only if it still fits data the caller gives, typically held-out data
of the training range and a sample of the range to extrapolate to.

What each unit snaps to is its own `exact_values` (the interface of
`keras_nalu.ArithmeticUnit`, so a unit of your own snaps too); the package's:

- `NAC`, `NACCell` and the paths of `NALU`, `NALUCell` and `INALU`:
  `W = tanh(w_hat) * sigmoid(m_hat)` to -1, 0 or 1 (`w_hat = +-SATURATION`,
  `m_hat = SATURATION`, or `w_hat = 0`: exactly those values in float32 and
  float64).
- The NALU gate `sigmoid(x @ G)`: `G` is scaled by `GATE_SCALE`, so a gate
  that was decided on an input (`|x @ G| > SATURATION / GATE_SCALE`) is
  exactly open or closed; the iNALU's gate `sigmoid(g)` to 0 or 1.
- `NAU` and `RealNPU` (its exponents) to -1, 0 or 1; `NMU`, `NMRU` and the
  `RealNPU`'s gate to 0 or 1; the `NPU`'s real exponents to -1, 0 or 1, its
  imaginary ones to 0 and its gate to 0 or 1.

Other layers (`Dense`, ...) are kept as they are; a `ConfiguredNALU`, whose
weights a controller sets per example, cannot be snapped (a clear error).

**Units that compute the same thing are merged first.** A layer that reads
several units computing the same sum or product (after those are snapped)
often splits its weight among them: 0.5 and 0.5 on two copies of `x1*x2`,
which rounding would turn into `2*x1*x2`. The layers are snapped in the
order of the model's graph, and a linear unit (`NAU`, `NAC`: `linear` is
True) adds up its weights on identical inputs before its own are rounded
(the sum on one, 0 on the others), which leaves its output unchanged.
Identical means the same expression of the same inputs (each unit's
`expression` of its snapped weights, as SymPy writes it), across branches
too (a product of one factor is that factor).

**With `search=True`, the data decide where rounding is a guess.** A weight
of 0.6 may stand for 1, or for 0 with the rest of the model making up the
difference; a unit of many small product weights computes about 0 on the
training range but rounds to the constant 1 (an empty product), so the
weight of the layer reading it, -1 say, must become 0. When the rounded
model does not fit `data` exactly, each weight rounded to a nonzero value
is tried at 0, and each rounded to 0 from `AMBIGUOUS` or farther at the
value on its side, in order of how far the weight was rounded (at most
`MAX_CHOICES` weights); a change is kept if it lowers the summed relative
error over `data`, and the weights are passed over again while a pass kept
a change (at most `MAX_PASSES` passes: removing a term can pay only once
another term has gone). The result is an exact model one step from the rounded
one per weight, chosen by the data: a weaker claim than rounding alone, so
pass held-out data, not the test set you report on.
"""

import functools
import warnings
from typing import Any

import keras
import numpy as np

from keras_nalu import validation
from keras_nalu.formulas import Writer
from keras_nalu.layers.arithmetic_unit import (  # noqa: F401 (documented here)
    GATE_SCALE,
    SATURATION,
    ArithmeticUnit,
    unstarted_penalties,
)

# A snapped model may be worse than the original by float32 rounding only.
NOISE = 1e-6
# With `search=True`, weights rounded to 0 from this far or farther are
# retried at the value on their side (nonzero ones are all retried at 0).
AMBIGUOUS = 0.25
MAX_CHOICES = 256
# ... and passes over them at most this many times.
MAX_PASSES = 3


def snap_weights(
    model: keras.Model,
    data: tuple[Any, Any] | dict[str, tuple[Any, Any]],
    *,
    rtol: float = 1e-5,
    search: bool = False,
) -> tuple[keras.Model, dict[str, dict[str, float]]]:
    """Returns a copy of `model` with exact arithmetic weights, verified.

    The copy (rebuilt from `model.get_config()`, uncompiled, with the
    trained weights) has each unit's effective weights rounded to the exact
    values listed in `keras_nalu.snapping`. It is returned only if on every data set its
    relative error `mean |y_hat - y| / mean |y|` is at most `rtol` and no
    worse than the original model's (beyond float32 rounding, `NOISE`);
    `model` itself is never changed. For a model of several outputs, a
    set's error is the largest of its outputs' relative errors (each
    relative to its own `mean |y|`).

    Args:
        model: A built `keras.Model`, of one input or several and one output
            or several.
        data: `{name: (x, y)}`, the sets to verify the snapped model on, e.g.
            `{"held-out": (x1, y1), "extrapolation": (x2, y2)}`, or one
            `(x, y)` pair; `x` as `model.predict` takes it (a list of
            arrays for a model of several inputs) and `y` as `model.fit`
            does (a list of arrays, one per output in the order of
            `model.outputs`, for a model of several outputs).
        rtol: Positive float, the largest relative error allowed
            (keyword-only).
        search: Boolean, whether a model that does not fit `data` once
            rounded has its rounded weights retried one step away, each
            kept where it lowers the error on `data` (keyword-only; see the
            module).

    Returns:
        `(snapped_model, report)`: `report` maps each data set's name to
        `{"before": error, "after": error}`.

    Raises:
        ValueError: If the snapped model misses `rtol` or does worse than
            `model` on a set (the message gives every set's errors: the
            model had not learned exact arithmetic), or for invalid
            arguments.

    Example:

    >>> import numpy as np, keras
    >>> from keras_nalu import NAC
    >>> from keras_nalu.snapping import snap_weights
    >>> model = keras.Sequential([keras.Input((2,)), NAC(1)])
    >>> model.layers[0].set_weights([np.array([[2.0], [3.0]]), np.full((2, 1), 5.0)])
    >>> x = np.array([[1e3, 2e3], [5.0, -7.0]])
    >>> y = x.sum(axis=1, keepdims=True)
    >>> snapped, report = snap_weights(model, {"large": (x, y)})
    >>> keras.ops.convert_to_numpy(snapped.layers[0].effective_kernel).ravel()
    array([1., 1.], dtype=float32)
    >>> report["large"]["after"]
    0.0
    """
    if not isinstance(model, keras.Model) or not model.built:
        raise ValueError(
            "Received an invalid value for `model`, expected a built keras.Model. "
            f"Received: model={model!r}"
        )
    if not _has_graph(model):
        raise ValueError(
            "Received an invalid value for `model`, expected a Functional or "
            "Sequential model (started with keras.Input): snapping rebuilds it "
            f"from its configuration. Received: a subclassed model {model.name!r}"
        )
    rtol = validation.positive_float("rtol", rtol)
    search = validation.boolean("search", search)
    checked = _checked_data(model, data)
    for sentence in unstarted_penalties(model):
        warnings.warn(sentence, UserWarning, stacklevel=2)
    # Rebuilt from its configuration, uncompiled: `clone_model` would also
    # compile the copy from `model`'s compile configuration, which fails for a
    # loss Keras cannot deserialize (a plain function), and the copy is never
    # trained.
    snapped = type(model).from_config(
        model.get_config(), custom_objects=_layer_classes(model)
    )
    snapped.set_weights(model.get_weights())
    choices: list[Any] = []
    import sympy  # on use, as in `keras_nalu.formulas`

    # Exact weights are integers; any other number is written in full, so two
    # features are the same only if they compute the same function.
    writer = Writer(sympy, atol=0.0, digits=17)
    _walk(
        snapped,
        [
            _Keys([sympy.Symbol(f"x{i}[{j}]") for j in range(tensor.shape[-1])])
            for i, tensor in enumerate(snapped.inputs)
        ],
        choices,
        writer,
    )
    if search:
        _decide(snapped, choices, checked)
    report = {
        name: {"before": _error(model, x, y), "after": _error(snapped, x, y)}
        for name, (x, y) in checked.items()
    }
    failed = {
        name: r
        for name, r in report.items()
        if not (r["after"] <= rtol and r["after"] <= max(r["before"], NOISE))
    }
    if failed:
        errors = "; ".join(
            f"{name}: {r['before']:.3g} before, {r['after']:.3g} after"
            for name, r in report.items()
        )
        raise ValueError(
            f"The snapped model does not fit {sorted(failed)} within rtol={rtol:g} "
            f"(relative errors {errors}): the model has not learned exact "
            "arithmetic; train it longer, or keep its weights as they are."
        )
    return snapped, report


def _has_graph(model):
    """Whether `model` is a graph of layers (Functional or Sequential, with
    `model.inputs`), not a subclassed model."""
    try:
        return bool(model.inputs)
    except AttributeError:
        return False


def _checked_data(model, data):
    """`data` as `{name: (x, y)}`, `y` a float64 array of the model's output
    shape (a list of them, one per output, for several); raises a
    `ValueError` naming the set, what is wrong and what was expected (before
    any work)."""
    if isinstance(data, tuple):
        data = {"data": data}
    if not isinstance(data, dict) or not data:
        raise ValueError(
            "Received an invalid value for `data`, expected {name: (x, y)} or "
            f"one (x, y) pair. Received: data of type {type(data).__name__}"
            + (" (empty)" if isinstance(data, dict) else "")
        )
    inputs, outputs = model.inputs, model.outputs
    checked = {}
    for name, pair in data.items():
        where = "data" if list(data) == ["data"] else f"data[{name!r}]"

        def invalid(expected, received, where=where):
            return ValueError(
                f"Received an invalid value for `{where}`, expected {expected}. "
                f"Received: {received}"
            )

        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise invalid("an (x, y) pair of arrays", _described(pair))
        x, y = pair
        several = len(inputs) > 1
        xs = list(x) if several and isinstance(x, (tuple, list)) else [x]
        if len(xs) != len(inputs):
            raise invalid(f"x as a list of {len(inputs)} arrays", _described(x))
        arrays = []
        for array, tensor in zip(xs, inputs, strict=True):
            array = np.asarray(array)
            want = tuple(tensor.shape)
            if (
                array.dtype.kind not in "biuf"
                or array.ndim != len(want)
                or any(
                    w is not None and w != a
                    for w, a in zip(want[1:], array.shape[1:], strict=True)
                )
            ):
                expected = ", ".join("n" if w is None else str(w) for w in want)
                raise invalid(f"x of shape ({expected}), numbers", _described(array))
            arrays.append(array)
        count = arrays[0].shape[0]
        if len(outputs) > 1 and (
            not isinstance(y, (tuple, list)) or len(y) != len(outputs)
        ):
            raise invalid(
                f"y as a list of {len(outputs)} arrays, one per output of the model",
                _described(y),
            )
        ys = [np.asarray(part) for part in y] if len(outputs) > 1 else [np.asarray(y)]
        for k, (part, tensor) in enumerate(zip(ys, outputs, strict=True)):
            which = "y" if len(outputs) == 1 else f"y[{k}]"
            units = tensor.shape[-1]
            if (
                part.dtype.kind not in "biuf"
                or part.ndim == 0
                or part.shape[0] != count
            ):
                raise invalid(
                    f"{which} of {count} rows, one per example of x", _described(part)
                )
            if units is not None and part.size != count * units:
                output = "the model's output" + ("" if len(outputs) == 1 else f" {k}")
                raise invalid(
                    f"{which} of shape ({count}, {units}), {output}", _described(part)
                )
        if count == 0 or any(a.shape[0] != count for a in arrays):
            raise invalid(
                "at least one example, as many in every x array",
                ", ".join(_described(a) for a in arrays),
            )
        for part, values in (("x", arrays), ("y", ys)):
            if not all(np.all(np.isfinite(a)) for a in values):
                raise invalid("finite numbers in x and y", f"NaN or inf in {part}")
        for k, part in enumerate(ys):
            if not np.any(part):
                which = "y" if len(ys) == 1 else f"y[{k}]"
                raise invalid(
                    f"{which} not all zeros (errors are relative to the mean |y|)",
                    "all zeros",
                )
        ys = [part.astype(np.float64) for part in ys]
        checked[name] = (arrays if several else arrays[0], ys if len(ys) > 1 else ys[0])
    return checked


def _described(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"an array of shape {tuple(shape)} and dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {value!r}"[:200]


class _Keys:
    """What each feature flowing through the model computes, as a SymPy
    expression: a symbol per input feature, a unit's expression of its
    inputs' (a sum, a product, ...), or a symbol of its own for a feature of
    a layer that is not a unit (`Dense`, an RNN, ...)."""

    def __init__(self, keys):
        self.keys = keys


def _walk(model, values, choices, writer):
    """Snaps the layers of `model` in the order of its graph, from the keys
    of its inputs' features (one `_Keys` per input), adding the weights a
    search may retry to `choices`; returns the keys of its output features."""
    if isinstance(model, keras.Sequential):
        (value,) = values
        for layer in model.layers:
            value = _visit(choices, writer, layer, value)
        return value
    # Keras's own walk through a functional graph (as `Functional.call` does),
    # as `keras_nalu.formulas` reads one.
    return model._run_through_graph(
        values,
        operation_fn=lambda op: functools.partial(_visit, choices, writer, op),
    )


def _visit(choices, writer, op, value, *args, **kwargs):
    reason = getattr(op, "cannot_snap", None)
    if reason:
        raise ValueError(
            f"Cannot snap the weights of {op.name!r}, a {type(op).__name__}: {reason}."
        )
    if isinstance(op, keras.Model):
        return _walk(op, value if isinstance(value, list) else [value], choices, writer)
    if isinstance(op, keras.layers.Concatenate) and op.axis in (
        -1,
        len(op.output.shape) - 1,
    ):
        return _Keys([key for v in value for key in v.keys])
    if isinstance(op, keras.layers.RNN) and isinstance(op.cell, ArithmeticUnit):
        _snap(op.cell, choices)
        return _opaque(op, writer)
    if isinstance(value, list) or not isinstance(op, ArithmeticUnit):
        return _opaque(op, writer)  # Add, Multiply, Dense, ...
    if op.linear:
        _merge_rows(op, value.keys)
    _snap(op, choices)
    return _Keys(op.expression(value.keys, writer))


def _opaque(op, writer):
    return _Keys(
        [writer.sympy.Symbol(f"{op.name}[{j}]") for j in range(op.output.shape[-1])]
    )


def _merge_rows(unit, keys):
    """Adds up a linear unit's effective kernel on identical input features
    onto the first of them (0 on the others), before it is rounded."""
    w = _numpy(unit.effective_weights(unit.unit_weights())["kernel"])
    rows = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    groups = [i for i in rows.values() if len(i) > 1]
    if not groups:
        return
    for first, *others in groups:
        w[first] = w[[first, *others]].sum(axis=0)
        w[others] = 0.0
    values = unit.exact_values["kernel"]
    unit.set_effective_weights({"kernel": np.clip(w, min(values), max(values))})


def _snap(unit, choices):
    """Snaps `unit` (its `snap`), adding the weights a search may retry."""
    effective = unit.effective_weights(unit.unit_weights())
    names = unit.snapped_names(effective)
    before = {name: _numpy(effective[name]) for name in names}
    unit.snap()
    for name in names:
        _add_choices(choices, before[name], unit.exact_values[name], _Entry(unit, name))


class _Entry:
    """Sets one element of a unit's effective weight to an exact value."""

    def __init__(self, unit, name):
        self.unit, self.name = unit, name

    def set(self, index, value):
        unit = self.unit
        w = _numpy(unit.effective_weights(unit.unit_weights())[self.name])
        w[index] = value
        self.unit.set_effective_weights({self.name: w})


def _add_choices(choices, w, values, entry):
    """Adds `(distance, entry, index, rounded, other)` for each weight of `w`
    to retry at `other`, the second nearest of its exact `values`: each
    rounded to a nonzero value, and each rounded to 0 from `AMBIGUOUS` or
    farther."""
    if len(values) < 2:
        return
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(np.abs(w[..., None] - values), axis=-1, kind="stable")
    rounded, other = values[order[..., 0]], values[order[..., 1]]
    retry = (rounded != 0) | (np.abs(w - rounded) >= AMBIGUOUS)
    for index in zip(*np.nonzero(retry), strict=True):
        distance = float(abs(w[index] - rounded[index]))
        choices.append((distance, entry, index, rounded[index], other[index]))


def _layer_classes(model):
    """`{name: class}` of every layer in `model`, nested ones too, under
    its registered and its class name: `from_config` then finds the classes
    Keras's registry does not know (as `clone_model` did)."""
    classes = {}
    for layer in getattr(model, "layers", ()):
        cls = type(layer)
        classes[cls.__name__] = cls
        classes[keras.saving.get_registered_name(cls)] = cls
        classes.update(_layer_classes(layer))
    return classes


def _decide(model, choices, data):
    """Tries the `choices`, the weights rounded farthest first, while the
    model does not fit `data` exactly; keeps each change that lowers the
    summed relative error. Passes over them again while a pass kept a change
    (at most `MAX_PASSES`): a change can pay only once another is made."""

    def error():
        return sum(_error(model, x, y) for x, y in data.values())

    best = error()
    choices = sorted(choices, key=lambda choice: -choice[0])[:MAX_CHOICES]
    values = [rounded for _, _, _, rounded, _ in choices]
    for _ in range(MAX_PASSES):
        changed = False
        for k, (_, entry, index, rounded, other) in enumerate(choices):
            if best <= NOISE * len(data):
                return
            current = values[k]
            alternative = other if current == rounded else rounded
            entry.set(index, alternative)
            tried = error()
            if tried < best:
                best, values[k], changed = tried, alternative, True
            else:
                entry.set(index, current)
        if not changed:
            return


def _numpy(variable):
    return keras.ops.convert_to_numpy(variable).astype(np.float64)


def _error(model, x, y):
    """The relative error of `model` on `(x, y)`, the largest of its
    outputs' (`y` a list of arrays for several), inf where it is not
    finite."""
    y_hats = keras.tree.flatten(model(x, training=False))
    ys = y if isinstance(y, list) else [y]
    errors = []
    for y_hat, target in zip(y_hats, ys, strict=True):
        y_hat = keras.ops.convert_to_numpy(y_hat).astype(np.float64)
        target = np.asarray(target, dtype=np.float64).reshape(y_hat.shape)
        if not np.all(np.isfinite(y_hat)):
            return float("inf")
        errors.append(float(np.mean(np.abs(y_hat - target)) / np.mean(np.abs(target))))
    return max(errors)
