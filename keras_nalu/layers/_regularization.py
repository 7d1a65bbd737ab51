"""The constraint of the clipped units: the user's constraint, then the bounds."""

import keras
from keras import ops

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
