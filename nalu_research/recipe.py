"""The seed-batched engine's training recipe, as one checked value.

A `Recipe` holds everything that decides how the engine trains a model
(`nalu_research.seed_batched.StaticBenchmark`): Adam's learning rate and
epsilon, the batch size, gradient clipping, the units' penalty and its
schedule, an L1 penalty and its schedule, the per-run penalty gate, the
layers' options and the NMU's initial center. It is frozen and checked when
made, before anything is built, and `config` is the one place where it is
written into a checkpoint's configuration (with the rule that keeps older
checkpoints resumable beside it). Mistry et al.'s recipes are values of it
(`nalu_research.experiments.mistry_benchmark.RECIPES`).

    >>> Recipe(learning_rate=1e-2, clipnorm=1.0).config()["clipnorm"]
    1.0
"""

import dataclasses
from typing import Any

from nalu_research.engine_model import check_options

# The settings a checkpoint written before they existed does not name: each
# is written into the configuration only when it differs from this default,
# so such a checkpoint still resumes.
_SINCE_LATER = (
    "clipnorm",
    "clipvalue",
    "adam_epsilon",
    "layer_options",
    "penalty_gate",
)


def l1_beta(step, start, end, every=10_000, growth=10.0):
    """The weight of the L1 penalty of Heim et al.'s NPU as Mistry et al.'s
    benchmark steps it (`--regualizer-beta-start/-end/-step/-growth`):
    `min(start * growth**floor((step - 1) / every), end)` at the update
    `step` (from 1; their iteration `step - 1`, from 0). `start` and `end`
    may be tensors `(runs,)`, one per run. (Theirs multiplies by `growth`
    until the value is at least `end`, which for an `end` that is not
    `start` times a power of `growth` ends above `end`; their script's are
    powers of 10.)

    >>> [f"{float(l1_beta(s, 1e-7, 1e-5)):.0e}" for s in (1, 10_000, 10_001, 20_001)]
    ['1e-07', '1e-07', '1e-06', '1e-05']
    """
    from keras import ops

    start = ops.convert_to_tensor(start, "float32")
    stage = ops.floor((ops.cast(step, "float32") - 1.0) / float(every))
    # Late stages overflow to inf, which `end` bounds; but 0 * inf is NaN.
    grown = ops.minimum(start * ops.power(float(growth), stage), end)
    return ops.where(start > 0, grown, ops.zeros_like(grown))


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How the engine trains: one frozen value, checked when made.

    Args:
        learning_rate: Adam's learning rate (`keras.optimizers.Adam`, its
            other arguments at their defaults but `epsilon`): a positive
            float or a `keras.optimizers.schedules.LearningRateSchedule` of
            the step (e.g. `PiecewiseConstantDecay` to lower it late).
        batch_size: Fresh examples per step and run.
        adam_epsilon: Adam's `epsilon`, or None for Keras's default (1e-7;
            PyTorch's Adam, which Madsen & Johansen's code uses, has 1e-8).
        clipnorm: Largest L2 norm of each run's gradient (over all its
            weights, as PyTorch's `clip_grad_norm_` of one model), or None.
        clipvalue: Bound of each gradient element's magnitude, applied
            after `clipnorm` (PyTorch's `clip_grad_value_`, as Mistry et
            al.'s code applies it after `clip_grad_norm_`), or None.
        regularization: `(strength, start, end)` of the units' penalty
            schedule, for every layer with one; `"default"` for each layer's
            own default, or None for no penalty.
        l1: None, or the L1 penalty of Heim et al.'s NPU as Mistry et al.'s
            benchmark schedules it: `l1_beta(step, start, end, l1_every,
            l1_growth)` times the sum of `|w|` over every trainable weight
            of the run, added to each run's loss; `(start, end)` for every
            operation or `{operation: (start, end)}` (at least the
            benchmark's operations).
        l1_every: Steps between two growths of the L1 weight.
        l1_growth: The factor of each growth.
        penalty_gate: Whether each run's layer penalties are multiplied by
            its entry of the benchmark's `penalty_gate`, a non-trainable
            `(runs,)` variable starting at 1 that an `after_eval` hook may
            set (Mistry et al.'s iNALU protocol). False: no gate.
        layer_options: `{kind: {argument: value}}`, constructor arguments
            that change the layers of these kinds from their defaults, e.g.
            `{"nmru": {"sign_retrieval": True}}`.
        nmu_center: Center of the NMU and NMRU kernels' initial range
            (`keras_nalu.initializers.NMUUniform`), or None for the layers'
            own initializer.
    """

    learning_rate: Any = 1e-3
    batch_size: int = 128
    adam_epsilon: float | None = None
    clipnorm: float | None = None
    clipvalue: float | None = None
    regularization: Any = "default"
    l1: Any = None
    l1_every: int = 10_000
    l1_growth: float = 10.0
    penalty_gate: bool = False
    layer_options: dict | None = None
    nmu_center: float | None = None

    def __post_init__(self):
        import keras

        from keras_nalu import validation
        from keras_nalu.initializers import NMUUniform

        def check(name, test):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, test(name, value))

        rate = self.learning_rate
        if not isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
            try:
                check("learning_rate", validation.positive_float)
            except ValueError:
                expected = "a positive float or a LearningRateSchedule"
                raise validation.invalid("learning_rate", expected, rate) from None
        check("batch_size", validation.positive_int)
        for name in ("adam_epsilon", "clipnorm", "clipvalue", "l1_growth"):
            check(name, validation.positive_float)
        check("l1_every", validation.positive_int)
        check("penalty_gate", validation.boolean)
        if self.nmu_center is not None:
            NMUUniform(center=self.nmu_center)  # checks it
        check_options(self.layer_options)
        if self.regularization not in (None, "default"):
            _schedule(self.regularization)
        if self.l1 is not None:
            _l1_pairs(self.l1)

    def replace(self, **changes):
        """A copy with `changes` (checked as a new recipe)."""
        return dataclasses.replace(self, **changes)

    def schedule(self):
        """`(strength, start, end)`, `"default"` or None: the penalty."""
        if self.regularization in (None, "default"):
            return self.regularization
        return _schedule(self.regularization)

    def l1_for(self, operations):
        """`{operation: (start, end)}` of the L1 penalty for `operations`,
        or None without one; raises when an operation has none."""
        if self.l1 is None:
            return None
        pairs = _l1_pairs(self.l1)
        if "" in pairs:  # one pair for every operation
            return dict.fromkeys(operations, pairs[""])
        missing = [op for op in operations if op not in pairs]
        if missing:
            raise ValueError(
                "Received an invalid value for `l1`, expected (start, end) or "
                f"{{operation: (start, end)}} for each of the operations "
                f"{tuple(operations)}. Received: l1={self.l1!r}"
            )
        return {op: pairs[op] for op in operations}

    def config(self, operations=()):
        """The recipe as the JSON of a checkpoint's configuration, so a run
        resumes only under the same recipe: the learning rate (a schedule as
        its Keras config), and every setting, but those that a checkpoint
        written before they existed does not name when they keep their
        default (`_SINCE_LATER`); the L1 penalty of `operations` alone."""
        import keras

        found = {
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "regularization": self.regularization,
            "nmu_center": self.nmu_center,
        }
        if isinstance(
            self.learning_rate, keras.optimizers.schedules.LearningRateSchedule
        ):
            found["learning_rate"] = keras.optimizers.schedules.serialize(
                self.learning_rate
            )
        # Each default of `_SINCE_LATER` is falsy: only a set one is written.
        found.update({k: getattr(self, k) for k in _SINCE_LATER if getattr(self, k)})
        if self.l1 is not None:
            beta = self.l1_for(operations)
            found["l1"] = {
                "beta": beta,
                "every": self.l1_every,
                "growth": self.l1_growth,
            }
        return found


def _schedule(value):
    """`(strength, start, end)` of a penalty schedule, checked."""
    from keras_nalu import validation

    ok = isinstance(value, (tuple, list)) and len(value) == 3
    if ok:
        try:
            strength = validation.non_negative_float("strength", value[0])
            start = validation.non_negative_int("start", value[1])
            end = validation.non_negative_int("end", value[2])
            ok = end >= start
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(
            "Received an invalid value for `regularization`, expected None, "
            "'default' or (strength >= 0, start >= 0, end >= start) with "
            f"integer steps. Received: regularization={value!r}"
        )
    return strength, start, end


def _l1_pairs(value):
    """`{operation: (start, end)}` of an `l1` value (`""`: every operation)."""
    from keras_nalu import validation

    pairs = value if isinstance(value, dict) else {"": value}
    try:
        checked = {}
        for operation, (start, end) in pairs.items():
            start = validation.non_negative_float("start", start)
            end = validation.non_negative_float("end", end)
            if start > end:
                raise ValueError(end)
            checked[operation] = (start, end)
        return checked
    except (TypeError, ValueError):
        raise ValueError(
            "Received an invalid value for `l1`, expected None, (start, end) "
            "with 0 <= start <= end, or {operation: (start, end)} for each "
            f"operation. Received: l1={value!r}"
        ) from None
