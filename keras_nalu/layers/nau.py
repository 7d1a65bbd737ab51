from typing import Any

import keras
from keras import ops

from keras_nalu import (
    initializers,  # noqa: F401 (registers the default)
    validation,
)
from keras_nalu import ops as nalu_ops
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE, SparseUnit


@keras.saving.register_keras_serializable(package="keras_nalu")
class NAU(SparseUnit):
    """Neural addition unit: adds and subtracts inputs, reliably.

    `y = x @ clip(W, -1, 1)`, no bias, with the sparsity penalty
    `mean(min(|W|, 1 - |W|))` (0 when every weight is -1, 0 or 1) added to the
    loss with a weight ramped from 0 at step `regularization_start` to
    `regularization_strength` at step `regularization_end`. Unlike the NAC's
    `tanh * sigmoid`, the linear weight has no vanishing gradient at 0 and
    reaches -1 and 1 exactly.

    `centered_gradient=True` changes training only: the kernel's gradient is
    taken of the inputs minus their mean over the batch (every axis but the
    last), `(x - m) @ W + stop_gradient(m @ W)`, while the output stays
    `x @ W`; at inference nothing changes. On inputs whose mean is large
    against their spread (U[1, 2]), the mean dominates the plain gradient
    and hides the fluctuations that tell which inputs belong together; a
    NAU under an NMU then learns a*b in a tenth of the iterations
    ([benchmark of the units](../../experiments/units-benchmark.md)).

    The schedule counts the layer's training calls (`regularization_step`, a
    non-trainable weight that is saved and restored with the model), so it
    works in `model.fit`, in custom loops and across resumed runs. The
    penalty is only added when the layer is called with `training=True`.

    Args:
        units: Positive integer, dimensionality of the output space.
        regularization_strength: Float >= 0, the penalty's final weight
            (0 turns it off).
        regularization_start: Integer >= 0, the step where the ramp starts.
        regularization_end: Integer >= `regularization_start`, the step from
            which the full weight applies.
        kernel_initializer: Initializer for `kernel` (default: Madsen &
            Johansen's, `keras_nalu.initializers.NAUUniform`).
        kernel_regularizer: Regularizer for `kernel`, on top of the penalty.
        kernel_constraint: Constraint for `kernel`; the kernel is clipped to
            `[-1, 1]` after it.
        centered_gradient: Boolean, whether training takes the kernel's
            gradient of the batch-centered inputs (see above).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2.
        training: Whether to count the step and add the penalty.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        kernel: The trainable weight, `(input_dim, units)`.
        regularization_step: Training calls counted so far.
        effective_kernel: `clip(kernel, -1, 1)` (read-only).
        regularization_weight: The penalty's current weight (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NAU
    >>> layer = NAU(1, kernel_initializer=keras.initializers.Constant(1.0))
    >>> keras.ops.convert_to_numpy(layer(np.array([[1.0, 2.0, 3.0]]))).tolist()
    [[6.0]]

    Reference:
        Madsen & Johansen, 2020, "Neural Arithmetic Units", ICLR,
        https://openreview.net/forum?id=H1gNOeHKPS
    """

    def __init__(
        self,
        units: int,
        regularization_strength: float = DEFAULT_SCHEDULE["regularization_strength"],
        regularization_start: int = DEFAULT_SCHEDULE["regularization_start"],
        regularization_end: int = DEFAULT_SCHEDULE["regularization_end"],
        kernel_initializer: InitializerLike = "keras_nalu>NAUUniform",
        kernel_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        centered_gradient: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            units,
            regularization_strength=regularization_strength,
            regularization_start=regularization_start,
            regularization_end=regularization_end,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            **kwargs,
        )

        self.centered_gradient = validation.boolean(
            "centered_gradient", centered_gradient
        )

    linear = True

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        return self._nau(x, self.effective_weights(weights)["kernel"], training)

    def _nau(self, x, w, training):
        """`x @ w`, its gradient of the batch-centered `x` with
        `centered_gradient` in training."""
        if not (training and self.centered_gradient):
            return nalu_ops.nau(x, w)
        # The mean over the examples of each copy: every axis but the copies'
        # (in front of the kernel's two) and the features.
        axes = tuple(range(len(w.shape) - 2, len(x.shape) - 1))
        return nalu_ops.nau(x, w, center=ops.mean(x, axis=axes, keepdims=True))

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        return writer.sums(writer.matrix(self.effective_kernel), h)

    def get_config(self):
        return {**super().get_config(), "centered_gradient": self.centered_gradient}
