"""What the NAU-family layers share: clipped weights and a scheduled penalty.

The penalty of a unit (sparsity for NAU and NMU, iNALU's for INALU) is added to
the model's loss with the weight `strength * ramp(step, start, end)`, where
`step` counts the layer's training calls. The counter is a non-trainable
variable of the layer, so the schedule works inside `model.fit`, in a custom
training loop and after a restore from a checkpoint, with no callback.
"""

import keras
from keras import ops

from keras_nalu import _validation
from keras_nalu import ops as nalu_ops
from keras_nalu._types import ConstraintLike


class ClipAfter(keras.constraints.Constraint):
    """Applies the user's `constraint` (if any), then clips to `[low, high]`."""

    def __init__(
        self, low: float, high: float, constraint: ConstraintLike | None = None
    ) -> None:
        self.low, self.high, self.constraint = low, high, constraint

    def __call__(self, w):
        if self.constraint is not None:
            w = self.constraint(w)
        return ops.clip(w, self.low, self.high)


class ScheduledPenaltyMixin:
    """Adds `regularization_strength`, `regularization_start` and
    `regularization_end` to a layer, and the scheduled penalty to its losses."""

    def _set_schedule(self, strength, start, end):
        self.regularization_strength = _validation.non_negative_float(
            "regularization_strength", strength
        )
        self.regularization_start = _validation.non_negative_int(
            "regularization_start", start
        )
        self.regularization_end = _validation.non_negative_int(
            "regularization_end", end
        )
        if self.regularization_end < self.regularization_start:
            raise ValueError(
                "Received an invalid value for `regularization_end`, expected "
                f"an integer >= regularization_start={self.regularization_start}. "
                f"Received: regularization_end={end!r}"
            )

    def _build_schedule(self):
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
        _validation.check_built(self, "regularization_weight")
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

    def _schedule_config(self):
        return {
            "regularization_strength": self.regularization_strength,
            "regularization_start": self.regularization_start,
            "regularization_end": self.regularization_end,
        }
