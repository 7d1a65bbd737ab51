"""The shared body of NAU, NMU, NMRU and RealNPU: one clipped kernel and its
penalty."""

from typing import Any

import keras

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike
from keras_nalu.layers.arithmetic_unit import ArithmeticUnit

# Ours, not Madsen & Johansen's: no penalty for 20,000 steps, then ramped up to
# 10 by step 35,000, so the weights are exact within a budget of 50,000 steps.
# Their code (stable-nalu, lfs_batch_jobs/function_task_static.sh) ramps 10 in
# from step 1,000,000 to 2,000,000 for NAU-NMU on the static task, and 0.01
# from 5,000 to 50,000 for NAU-NAU: see docs/units/nau-nmu-nmru.md.
DEFAULT_SCHEDULE: dict[str, Any] = {
    "regularization_strength": 10.0,
    "regularization_start": 20_000,
    "regularization_end": 35_000,
}


class SparseUnit(ArithmeticUnit):
    """An `ArithmeticUnit` of one kernel clipped to `[low, high]`, whose
    values `exact_values["kernel"]` it snaps to, with the sparsity penalty.

    Subclasses set `low`, `high`, `exact_values` and `math`, and may
    change the number of kernel rows per input feature (`_rows_per_input`)
    and the penalty (`penalty(weights)`).
    """

    low, high = -1.0, 1.0
    _rows_per_input = 1

    def __init__(
        self,
        units: int,
        *,
        regularization_strength: float,
        regularization_start: int,
        regularization_end: int,
        kernel_initializer: InitializerLike,
        kernel_regularizer: RegularizerLike | None,
        kernel_constraint: ConstraintLike | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = validation.positive_int("units", units)
        if self._scheduled:  # a recurrent cell has none (see `_scheduled`)
            self.set_penalty_schedule(
                regularization_strength, regularization_start, regularization_end
            )
        self._set_weight_arguments(
            kernel=(kernel_initializer, kernel_regularizer, kernel_constraint)
        )

    def build(self, input_shape):
        input_dim = validation.feature_dim(self, input_shape)
        # The stored weight is clipped after every update, as M&J do, so it
        # never drifts where the clipped forward pass has no gradient.
        self.kernel = self._add_weight_from_arguments(
            "kernel",
            (self._rows_per_input * input_dim, self.units),
            bounds=(self.low, self.high),
        )
        if self._scheduled:
            self.build_penalty_schedule()
        self.input_spec = keras.InputSpec(min_ndim=2, axes={-1: input_dim})

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """`{"kernel": (-1.0, 0.0, 1.0)}`."""
        return {"kernel": (-1.0, 0.0, 1.0)}

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{"kernel": clip(kernel, low, high)}`."""
        weights = self.unit_weights() if weights is None else weights
        return {"kernel": nalu_ops.clip_weight(weights["kernel"], self.low, self.high)}

    def penalty(self, weights: dict[str, Any]) -> Any:
        """`mean(min(|W|, 1 - |W|))` of the clipped kernel, per copy."""
        return nalu_ops.sparsity_penalty(self.effective_weights(weights)["kernel"])

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        config = {
            "units": self.units,
            **(self.penalty_schedule_config() if self._scheduled else {}),
            **self._weight_arguments_config("kernel"),
        }
        return {**super().get_config(), **config}
