from typing import Any

import keras

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE
from keras_nalu.layers.nmu import NMU


@keras.saving.register_keras_serializable(package="keras_nalu")
class NMRU(NMU):
    """Neural multiplicative reciprocal unit: multiplies and divides inputs.

    An NMU over the inputs and their reciprocals: `z = concat(x, 1 / x)`,
    `y_j = prod_i (W_ij z_i + 1 - W_ij)` with `W` of shape
    `(2 * input_dim, units)` clipped to `[0, 1]`. A weight 1 in the first half
    multiplies by `x_i`, in the second half divides by it. `|1 / x|` is bounded
    by `1 / epsilon`, so a zero input gives a large finite value, not `inf`.
    An infinite input counts as the largest finite number of the dtype in
    the first half and as 0 in the second, so that dividing by it, which
    leaves the first half out (`0 * inf` otherwise, NaN), gives 0: `3 / inf`
    is 0. A product past the dtype's range is `inf`, as for finite inputs.
    The sparsity penalty and its schedule are the NMU's.

    `sign_retrieval=True` is Mistry et al.'s published unit: it multiplies
    the magnitudes and restores the sign as `cos(pi * sum_i W_ij [z_i < 0])`
    (`keras_nalu.ops.nmru`). Both agree once `W` is 0 or 1, but on negative
    inputs the default's factors pass through 0 during training, where the
    sign-retrieving unit's never do: use it when inputs can be negative.

    Args:
        units: Positive integer, dimensionality of the output space.
        epsilon: Positive float, the smallest `|x|` a reciprocal is taken of.
        sign_retrieval: Boolean, whether to multiply magnitudes and restore
            the sign by Mistry et al.'s cosine (see above).
        regularization_strength: The penalty's largest weight, as for
            `keras_nalu.NAU`.
        regularization_start: Training step at which the penalty starts.
        regularization_end: Training step at which it reaches full strength.
        kernel_initializer: Initializer for `kernel`, as for `keras_nalu.NMU`.
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
        kernel: The trainable weight, `(2 * input_dim, units)`: rows
            `[0, input_dim)` read `x`, the rest read `1 / x`.
        regularization_step: Training calls counted so far.
        effective_kernel: `clip(kernel, 0, 1)` (read-only).
        regularization_weight: The penalty's current weight (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NMRU
    >>> divide = keras.initializers.Constant([[1.0], [0.0], [0.0], [1.0]])
    >>> layer = NMRU(1, kernel_initializer=divide)  # x_0 / x_1
    >>> keras.ops.convert_to_numpy(layer(np.array([[6.0, -4.0]]))).tolist()
    [[-1.5]]

    Reference:
        Mistry, Farrahi & Hare, 2021, "Learning Division with Neural
        Arithmetic Logic Modules", https://arxiv.org/abs/2110.05177
    """

    _rows_per_input = 2

    def __init__(
        self,
        units: int,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        sign_retrieval: bool = False,
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
        self.epsilon = validation.positive_float("epsilon", epsilon)
        self.sign_retrieval = validation.boolean("sign_retrieval", sign_retrieval)

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        w = self.effective_weights(weights)["kernel"]
        return nalu_ops.nmru(x, w, self.epsilon, self.sign_retrieval)

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        w = writer.matrix(self.effective_kernel)
        z = [*h, *(1 / hi for hi in h)]
        exact = all(v.is_Integer for row in w for v in row)
        if not self.sign_retrieval or exact:
            return writer.products(w, z)  # the same function at weights 0 and 1
        # `prod (w |z| + 1 - w)` times `cos(pi * sum w [z < 0])`, `[z < 0]`
        # written `Heaviside(-z)`.
        sympy = writer.sympy
        out = []
        for row in w:
            pairs = list(zip(row, z, strict=True))
            magnitude = sympy.Mul(*(wi * sympy.Abs(zi) + 1 - wi for wi, zi in pairs))
            negatives = sympy.Add(*(wi * sympy.Heaviside(-zi) for wi, zi in pairs))
            out.append(magnitude * sympy.cos(sympy.pi * negatives))
        return out

    def get_config(self):
        return {
            **super().get_config(),
            "epsilon": self.epsilon,
            "sign_retrieval": self.sign_retrieval,
        }
