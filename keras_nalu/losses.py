"""Losses for models whose outputs differ in scale by orders of magnitude.

Example:

>>> import numpy as np
>>> from keras_nalu.losses import NormalizedMeanSquaredError
>>> loss = NormalizedMeanSquaredError(variance=[100.0, 0.01])
>>> y_true = np.array([[10.0, 0.1]])
>>> round(float(loss(y_true, np.array([[11.0, 0.2]]))), 6)  # (1/100 + 0.01/0.01) / 2
0.505
"""

from typing import Any

import keras
import numpy as np
from keras import ops

from keras_nalu import validation


@keras.saving.register_keras_serializable(package="keras_nalu")
class NormalizedMeanSquaredError(keras.losses.Loss):
    """Each output's squared error divided by that output's variance.

    `loss = mean_k((y_true_k - y_pred_k)^2 / variance_k)`, the mean over the
    last axis, then Keras's reduction over the batch. With `variance` the
    training targets' (`y_train.var(axis=0)`), a constant prediction of each
    output's mean costs 1 on every output, whatever its scale.

    Why: under a plain MSE an output's share of the gradient grows with its
    scale. Where outputs mix operations, a product of two inputs from
    U[1, 10] (either sign) has a variance of 1,369 and a quotient of them
    3.7, so units shared by both follow the products' errors; normalized,
    every output pulls alike. On the mystery task with division
    (`examples/mystery_arithmetic.py --division --models NAU-NMRU`), 10
    tasks of 10 were solved on every output with it and 8 of 10 with the
    MSE (the docs' "Mystery arithmetic" page has the runs).

    Args:
        variance: The variance of each output, a positive number or a 1-D
            sequence of them, one per output (the last axis of `y_true`).
        name: The loss's name.
        reduction: As for every `keras.losses.Loss`.
        dtype: As for every `keras.losses.Loss`.
    """

    def __init__(
        self,
        variance: Any,
        name: str = "normalized_mean_squared_error",
        reduction: str = "sum_over_batch_size",
        dtype: str | None = None,
    ) -> None:
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.variance = _variances(variance)

    def call(self, y_true, y_pred):
        y_pred = ops.convert_to_tensor(y_pred)
        outputs = y_pred.shape[-1] if len(y_pred.shape) else None
        if len(self.variance) > 1 and outputs is not None:
            if outputs != len(self.variance):
                raise ValueError(
                    "Received an invalid value for `variance`, expected one "
                    f"variance per output ({outputs}, the last axis of "
                    f"`y_pred`). Received: variance={self.variance!r}"
                )
        y_true = ops.cast(y_true, y_pred.dtype)
        variance = ops.cast(ops.convert_to_tensor(self.variance), y_pred.dtype)
        return ops.mean(ops.square(y_pred - y_true) / variance, axis=-1)

    def get_config(self):
        return {**super().get_config(), "variance": self.variance}


def _variances(value):
    """`value` as a list of floats, or a `ValueError` naming it."""
    array = np.asarray(value, dtype=object)
    try:
        if array.ndim > 1 or array.size == 0:
            raise ValueError
        return [validation.positive_float("variance", v) for v in array.ravel()]
    except ValueError:
        raise ValueError(
            "Received an invalid value for `variance`, expected a finite number "
            "greater than 0, or a 1-D sequence of them (one per output). "
            f"Received: variance={value!r}"
        ) from None
