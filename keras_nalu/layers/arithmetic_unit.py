"""What an arithmetic unit is, written once: the interface every unit implements.

A unit is a Keras layer whose weights, once trained, take exact values that
make it compute exact arithmetic. Everything outside the unit's own file
reads it through this interface, and nothing else:

- `keras_nalu.snap_weights` rounds `effective_weights()` to `exact_values`
  (`snap`) and sets them back (`set_effective_weights`), and merges the rows
  of identical inputs of a `linear` unit;
- `keras_nalu.formulas` writes `expression(...)`;
- the seed-batched engine of the research harness trains many copies of a
  unit at once through `math(x, weights)` on weights stacked along a
  leading axis, with `penalty(weights)` on `penalty_schedule`.

So a unit written outside this package, in a user's own file, that subclasses
`ArithmeticUnit`, implements its methods and is registered with
`keras.saving.register_keras_serializable` works with all of them (the docs
page "Writing your own unit" shows one end to end).

Why methods of a base class and not functions registered per class: a unit is
already a Keras layer, so its math, its weights and its configuration sit on
one object; the base class turns `math` into the layer's `call` (and
the penalty into its scheduled loss), so the layer and every tool run the
same code: the engine's math cannot drift from the layer's.
"""

from collections.abc import Sequence
from typing import Any, ClassVar

import keras
import numpy as np
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import Tensor
from keras_nalu.layers._regularization import ClipAfter

SATURATION = 40.0
"""The latent value that snaps a `tanh` or `sigmoid` weight: `tanh(40)` and
`sigmoid(40)` round to exactly 1 in float32 and in float64, so a latent
weight set to +-40 gives an exact effective weight."""

GATE_SCALE = 1e4
"""How much `snap_weights` scales a NALU's gate kernel `G`: the gate
`sigmoid(x @ G)` of an input on which it was decided (`|x @ G| > 40 / 1e4`)
becomes exactly 0 or 1 there, so the snapped NALU takes one path whole."""


@keras.saving.register_keras_serializable(package="keras_nalu")
class ArithmeticUnit(keras.layers.Layer):
    """Base class of the arithmetic units: the interface snapping, formulas
    and the seed-batched engine read a unit through.

    A subclass is a Keras layer that creates its weights in `build` and
    implements:

    - `math(x, weights, training)`: its math on explicit weights, which may
      carry leading axes of independent copies (then `x` has the same
      leading axes before its batch axis); the layer's `call` is
      `math(x, unit_weights(), training)`. (Not named `forward`: on the
      torch backend a Keras layer is a `torch.nn.Module`, whose `forward`
      Keras calls.)
    - `effective_weights(weights)`: the weights its arithmetic applies
      (e.g. `clip(kernel, -1, 1)`, or `tanh(w_hat) * sigmoid(m_hat)`), by
      name, of the weights `{name: tensor}` given, which may be stacked
      copies. Every tool passes `weights` (the layer's own are
      `unit_weights()`), so `def effective_weights(self, weights)` is
      enough; the package's units also take none, for their own.
    - `exact_values`: for each effective weight that snaps, the exact values
      it may take (e.g. `{"kernel": (-1.0, 0.0, 1.0)}`), each key the name
      of an effective weight of the unit in its configuration: a class
      attribute, or a property where the weights depend on the
      configuration (`RealNPU(gated=False)` has no `"gate"`). A key that
      names no effective weight (a misspelt one) is an error, not a weight
      left as it is; and
      `set_effective_weights(values)`, which sets the layer's weights so
      that those effective weights equal `values` (the default assigns the
      weight of that name).
    - `expression(h, writer, x)`: its outputs as SymPy expressions of its
      inputs' expressions `h`.
    - optionally `penalty(weights)`, a penalty per copy, added to the loss
      with the weight `strength * ramp(step, start, end)` of its schedule
      (`set_penalty_schedule(strength, start, end)` in `__init__` sets it and
      `build_penalty_schedule()` in `build` creates the step counter, a
      non-trainable weight saved with the model, so the schedule works in
      `model.fit`, in custom loops and across resumed runs), and
      `linear = True` when the unit computes
      `x @ effective_weights()["kernel"]` (snapping may then move weight
      between the rows of identical inputs).

    Math written with `keras.ops` broadcasts over the copies when a kernel
    `(in, out)` is applied with `keras_nalu.ops.matmul` and a vector weight
    `(n,)` is expanded on axis -2 before it meets the batch
    (`ops.expand_dims(v, -2)`).

    `keras_nalu.testing.check_unit` checks a unit against this interface
    (its math over stacked copies, its snapping, its expression).
    """

    linear: ClassVar[bool] = False
    # False for a recurrent cell, whose call runs inside the RNN's loop where
    # a step counter cannot advance.
    _scheduled: ClassVar[bool] = True

    def __init__(self, **kwargs: Any) -> None:
        """Args: base layer keyword arguments, such as `name` and `dtype`."""
        super().__init__(**kwargs)

    # Each weight `name` has the arguments `{name}_initializer`,
    # `{name}_regularizer` and `{name}_constraint`; these helpers set them,
    # create the weight from them and serialize them.
    _KINDS = (
        ("initializer", keras.initializers),
        ("regularizer", keras.regularizers),
        ("constraint", keras.constraints),
    )

    def _set_weight_arguments(self, **arguments):
        for name, values in arguments.items():
            for (kind, module), value in zip(self._KINDS, values, strict=True):
                setattr(self, f"{name}_{kind}", module.get(value))

    def _add_weight_from_arguments(
        self, name, shape, arguments=None, bounds=None, initial=None
    ):
        """Adds weight `name` of `shape`, set up by the arguments
        `{arguments}_initializer` etc. (`arguments` defaults to `name`); with
        `bounds = (low, high)` it is clipped to them after its constraint, after
        every update. `initial`, values drawn by the caller, replaces the
        initializer."""
        arguments = arguments or name
        constraint = getattr(self, f"{arguments}_constraint")
        if bounds is not None:
            constraint = ClipAfter(*bounds, constraint)
        initializer = getattr(self, f"{arguments}_initializer")
        if initial is not None:
            initializer = _Values(initial)
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=initializer,
            regularizer=getattr(self, f"{arguments}_regularizer"),
            constraint=constraint,
        )

    def _weight_arguments_config(self, *names):
        """`{f"{name}_initializer": ..., ...}`, serialized, for `get_config`."""
        return {
            f"{name}_{kind}": module.serialize(getattr(self, f"{name}_{kind}"))
            for kind, module in self._KINDS
            for name in names
        }

    # -- (a) the math -------------------------------------------------------

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        """The unit's outputs for inputs `x` with the weights `weights`.

        Args:
            x: Inputs `(..., batch, in)`; when the weights are stacked copies
                `(copies, ...)`, `x` is `(copies, batch, in)`.
            weights: `{name: tensor}`, the unit's weights by the names of
                `unit_weights()`, each optionally with leading copy axes.
            training: Whether the call trains (a unit may compute its
                gradient differently then, as `NAU(centered_gradient=True)`).

        Returns:
            The outputs `(..., batch, units)`.
        """
        raise NotImplementedError(
            f"{type(self).__name__} subclasses ArithmeticUnit but does not "
            "implement `math(x, weights, training)`."
        )

    def unit_weights(self) -> dict[str, Any]:
        """The weights `math` reads, by name: every weight of the layer
        but its penalty's step counter."""
        step = getattr(self, "regularization_step", None)
        return {w.name: w for w in self.weights if w is not step}

    def call(self, inputs, training=False):
        x = ops.cast(inputs, self.compute_dtype)
        weights = self.unit_weights()
        if self._scheduled and self.penalty_schedule is not None:
            self._add_scheduled_penalty(lambda: self.penalty(weights), training)
        return self.math(x, weights, training)

    # -- (b) effective weights and (c) exact values --------------------------

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """`{name: values}`: for each effective weight that snaps, the exact
        values it may take; none by default.

        A subclass sets it as a class attribute
        (`exact_values = {"kernel": (-1.0, 0.0, 1.0)}`), or overrides this
        property where its effective weights depend on its configuration,
        so that every key names one of them (`snapped_names` refuses any
        other).
        """
        return {}

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{name: tensor}`: the weights the unit's arithmetic applies, of
        `weights` (`{name: tensor}` as `unit_weights()` gives them, each
        optionally with leading copy axes).

        The tools always pass `weights`; a subclass may take
        `weights=None` to mean the layer's own, as the package's units do.
        """
        raise NotImplementedError(
            f"{type(self).__name__} subclasses ArithmeticUnit but does not "
            "implement `effective_weights(weights)`."
        )

    def set_effective_weights(self, values: dict[str, Any]) -> None:
        """Sets the layer's weights so that `effective_weights()[name]` is
        `values[name]` for each name given (exact values of `exact_values`).

        The default assigns the weight of the same name, for units whose
        effective weight is their weight clipped to its bounds.
        """
        weights = self.unit_weights()
        for name, value in values.items():
            _assign(weights[name], value)

    def snap(self, names: Sequence[str] | None = None) -> None:
        """Sets each effective weight of `exact_values` to the nearest of
        its exact values, in place. A unit with other weights to adjust (the
        NALU's gate) extends it.

        Args:
            names: The effective weights to snap, keys of `exact_values`
                (default: all of them), e.g. `["recurrent_kernel"]` to make a
                `NAUCell`'s running sum exact and leave its input weights as
                trained.

        Raises:
            ValueError: If the layer is not built, `names` is not a list of
                keys of `exact_values`, or a key of `exact_values` names no
                effective weight of the unit (see `snapped_names`).
        """
        validation.check_built(self, "snap")
        effective = self.effective_weights(self.unit_weights())
        snapped = self.snapped_names(effective)
        if names is None:
            names = snapped
        elif isinstance(names, str) or not all(n in snapped for n in names):
            raise ValueError(
                "Received an invalid value for `names`, expected a list of "
                f"names of {type(self).__name__}'s exact_values {sorted(snapped)} "
                f"(its effective weights that snap). Received: names={names!r}"
            )
        self.set_effective_weights(
            {
                name: nearest(_numpy(effective[name]), self.exact_values[name])
                for name in names
            }
        )

    def snapped_names(self, effective: dict[str, Any] | None = None) -> list[str]:
        """The keys of `exact_values`, each the name of an effective weight:
        the weights `snap()` snaps.

        Args:
            effective: The unit's effective weights, if the caller has them
                (default: `effective_weights(unit_weights())`).

        Raises:
            ValueError: A key of `exact_values` names no effective weight of
                the unit in its configuration (the message names the key, the
                unit and the effective weights it has).
        """
        if effective is None:
            effective = self.effective_weights(self.unit_weights())
        names = list(self.exact_values)
        unknown = [name for name in names if name not in effective]
        if unknown:
            keys = ", ".join(repr(name) for name in unknown)
            one = len(unknown) == 1
            raise ValueError(
                f"The key{'' if one else 's'} {keys} of the exact_values of "
                f"{type(self).__name__} {self.name!r} name{'s' if one else ''} "
                "no effective weight of the unit, which has "
                f"{sorted(effective)}. Each key of exact_values must name an "
                "effective weight of the unit in its configuration (a key of "
                "effective_weights)."
            )
        return names

    @property
    def effective_kernel(self):
        """`effective_weights()["kernel"]`: the weight the unit applies
        (read-only)."""
        validation.check_built(self, "effective_kernel")
        return self.effective_weights(self.unit_weights())["kernel"]

    # -- (d) the expression -------------------------------------------------

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        """The unit's outputs as SymPy expressions.

        Args:
            h: The expressions of the unit's input features.
            writer: A `keras_nalu.formulas.Writer`: `writer.sympy`, and
                helpers that write weights as numbers (`number`,
                `matrix`), sums and NMU-style products.
            x: The values of the inputs `(batch, in)` where the caller gave
                data (a unit may decide a gate on them), else None.
        """
        raise NotImplementedError(
            f"{type(self).__name__} subclasses ArithmeticUnit but does not "
            "implement `expression(h, writer, x)`."
        )

    # -- (e) the penalty ----------------------------------------------------

    def penalty(self, weights: dict[str, Any]) -> Any:
        """The unit's penalty of `weights`, one value per copy (a scalar for
        the layer's own weights), or None for a unit without one."""
        return None

    @property
    def penalty_schedule(self) -> tuple[float, int, int] | None:
        """`(strength, start, end)` of the penalty's weight, ramped from 0 at
        step `start` to `strength` at `end`, or None without a penalty."""
        if not hasattr(self, "regularization_strength"):
            return None
        return (
            self.regularization_strength,
            self.regularization_start,
            self.regularization_end,
        )

    def set_penalty_schedule(self, strength: float, start: int, end: int) -> None:
        """Sets `regularization_strength`, `regularization_start` and
        `regularization_end`, validated."""
        self.regularization_strength = validation.non_negative_float(
            "regularization_strength", strength
        )
        self.regularization_start = validation.non_negative_int(
            "regularization_start", start
        )
        self.regularization_end = validation.non_negative_int("regularization_end", end)
        if self.regularization_end < self.regularization_start:
            raise ValueError(
                "Received an invalid value for `regularization_end`, expected "
                f"an integer >= regularization_start={self.regularization_start}. "
                f"Received: regularization_end={end!r}"
            )

    def build_penalty_schedule(self) -> None:
        """Creates the step counter, `regularization_step` (call in `build`)."""
        self.regularization_step = self.add_weight(
            name="regularization_step",
            shape=(),
            initializer="zeros",
            dtype="int32",
            trainable=False,
        )

    @property
    def regularization_weight(self):
        """The penalty's current weight, `strength * ramp(step, start, end)`."""
        validation.check_built(self, "regularization_weight")
        return self.regularization_strength * nalu_ops.ramp(
            self.regularization_step,
            self.regularization_start,
            self.regularization_end,
        )

    def _add_scheduled_penalty(self, penalty, training):
        """Counts a training call and adds `weight * penalty()` to the losses."""
        if not training:
            return
        self.regularization_step.assign_add(1)
        if self.regularization_strength > 0:
            self.add_loss(self.regularization_weight * ops.cast(penalty(), "float32"))

    def penalty_schedule_config(self) -> dict[str, Any]:
        """The schedule's three constructor arguments, for `get_config`."""
        return {
            "regularization_strength": self.regularization_strength,
            "regularization_start": self.regularization_start,
            "regularization_end": self.regularization_end,
        }


def unstarted_penalties(model: keras.Model) -> list[str]:
    """A sentence for each unit of `model` that trained (its step counter
    is above 0) and stopped before its penalty's schedule started: its
    weights were never pushed toward exact values.

    A layer cannot know how long a fit will be (Keras's own schedules count
    steps too), so the schedule is checked where its effect is read:
    `keras_nalu.formulas` and `keras_nalu.snap_weights` warn with these.
    """
    found = []

    def visit(layer):
        for sub in getattr(layer, "layers", ()):
            visit(sub)
        step = getattr(layer, "regularization_step", None)
        if (
            not isinstance(layer, ArithmeticUnit)
            or step is None
            or layer.regularization_strength == 0
        ):
            return
        steps = int(keras.ops.convert_to_numpy(step))
        if 0 < steps < layer.regularization_start:
            found.append(
                f"{type(layer).__name__} layer {layer.name!r} trained {steps:,} "
                "steps, all before its sparsity penalty starts "
                f"(regularization_start={layer.regularization_start:,}): its "
                "weights were never pushed to exact values. For a fit of N "
                "steps, pass regularization_start and regularization_end within "
                "it (e.g. N // 2 and N * 3 // 4), or train longer."
            )

    visit(model)
    return found


def nearest(w, values):
    """Each element of `w` replaced by the nearest of `values`."""
    values = np.asarray(values, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    return values[np.argmin(np.abs(w[..., None] - values), axis=-1)]


def _assign(variable, value):
    variable.assign(np.asarray(value).astype(variable.dtype))


def _numpy(value):
    return keras.ops.convert_to_numpy(value).astype(np.float64)


class _Values:
    """An initializer that returns values drawn beforehand."""

    def __init__(self, values):
        self.values = values

    def __call__(self, shape, dtype=None):
        return ops.cast(self.values, dtype) if dtype is not None else self.values
