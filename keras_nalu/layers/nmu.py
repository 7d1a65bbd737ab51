from typing import Any, ClassVar

import keras

from keras_nalu import initializers  # noqa: F401 (registers the default)
from keras_nalu import ops as nalu_ops
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._precision import compute_in_float32
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE, SparseUnit


@keras.saving.register_keras_serializable(package="keras_nalu")
class NMU(SparseUnit):
    """Neural multiplication unit: multiplies inputs, including negative ones and 0.

    `y_j = prod_i (W_ij x_i + 1 - W_ij)` with `W` clipped to `[0, 1]`: a weight
    1 multiplies the input in, a weight 0 leaves it out (a factor 1). No
    logarithm is taken, so the sign of a product is exact and a zero input
    gives a zero product, which the NALU's `exp(log|x| @ W)` cannot do. The
    sparsity penalty `mean(min(W, 1 - W))` is added to the loss on the same
    schedule as `keras_nalu.NAU`'s.

    Under a 16-bit policy the layer computes in float32 (products outgrow
    float16 quickly) and returns float32.

    Args:
        units: Positive integer, dimensionality of the output space.
        regularization_strength: The penalty's largest weight, as for
            `keras_nalu.NAU`.
        regularization_start: Training step at which the penalty starts.
        regularization_end: Training step at which it reaches full strength.
        kernel_initializer: Initializer for `kernel` (default: Madsen &
            Johansen's `U[0.25, 0.75]`, `keras_nalu.initializers.NMUUniform`).
        kernel_regularizer: Regularizer for `kernel`, on top of the penalty.
        kernel_constraint: Constraint for `kernel`; the kernel is clipped to
            `[0, 1]` after it.
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
        effective_kernel: `clip(kernel, 0, 1)` (read-only).
        regularization_weight: The penalty's current weight (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NMU
    >>> layer = NMU(1, kernel_initializer=keras.initializers.Constant(1.0))
    >>> keras.ops.convert_to_numpy(layer(np.array([[-2.0, 3.0, 0.5]]))).tolist()
    [[-3.0]]

    Reference:
        Madsen & Johansen, 2020, "Neural Arithmetic Units", ICLR,
        https://openreview.net/forum?id=H1gNOeHKPS
    """

    low, high = 0.0, 1.0
    exact_values: ClassVar[dict[str, tuple[float, ...]]] = {"kernel": (0.0, 1.0)}

    def __init__(
        self,
        units: int,
        regularization_strength: float = DEFAULT_SCHEDULE["regularization_strength"],
        regularization_start: int = DEFAULT_SCHEDULE["regularization_start"],
        regularization_end: int = DEFAULT_SCHEDULE["regularization_end"],
        kernel_initializer: InitializerLike = "keras_nalu>NMUUniform",
        kernel_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
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
        compute_in_float32(self)

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        return nalu_ops.nmu(x, self.effective_weights(weights)["kernel"])

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        return writer.products(writer.matrix(self.effective_kernel), h)
