"""The neural power unit (Heim, Pevný & Šmídl, 2020), complex weights and all."""

from typing import Any

import keras
import numpy as np
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE
from keras_nalu.layers.real_npu import HALF_OPEN, RealNPU


@keras.saving.register_keras_serializable(package="keras_nalu")
class NPU(RealNPU):
    """Neural power unit: products, ratios and roots of inputs of any sign.

    Heim, Pevný & Šmídl's NPU raises its inputs, as complex numbers, to
    complex powers `W = W_re + i W_im` and keeps the real part:
    `log x = log r + i pi k` with `r = g |x| + 1 - g` and `k = g [x < 0]`
    (the relevance gate `g` of the `RealNPU`), and

        y_j = exp(log r @ W_re - pi k @ W_im) * cos(log r @ W_im + pi k @ W_re).

    With `W_im = 0` it is the `RealNPU`; the imaginary exponents are what
    the NPU paper adds. With no negative input they get no gradient at 0
    (their initial value), so there the NPU trains as the `RealNPU`; on
    inputs of both signs it learned `a * b` where the `RealNPU` did not
    (docs: NPU). Where `W_re` is -1, 0 or 1, `W_im` is 0 and `g` is 0 or 1, the unit
    computes `prod_i x_i^(W_ij g_i)` exactly, sign included.

    As in the `RealNPU` (and unlike Heim et al.'s L1 penalty on both parts),
    `W_re` and `W_im` are clipped to `[-1, 1]` and the penalty is the NAU's
    sparsity penalty of `W_re` and of the gate plus `mean |W_im|`, on the
    NAU's schedule, so every weight ends at an exact value. `epsilon` and
    `max_exponent` keep `log` and `exp` finite; under a 16-bit policy the
    layer computes in float32 and returns float32.

    An infinite input adds nothing to the phase (its term `W_im log r` has
    no limit; taken as 0), so with `W_im = 0` the NPU gives the `RealNPU`'s
    outputs on infinite inputs too: `+-exp(max_exponent)` (1.65e38) for a
    positive exponent, 0 for a negative one, NaN for an exponent 0 or an
    open gate 0 (`0 * inf`, as `keras.layers.Dense` gives). Finite inputs
    are unaffected.

    Args:
        units: Positive integer, dimensionality of the output space.
        gated: Boolean, whether the unit has the relevance gate.
        epsilon: Positive float, the smallest `r` whose logarithm is taken.
        max_exponent: Positive float, the largest exponent of the magnitude.
        regularization_strength: The penalty's largest weight, as for
            `keras_nalu.NAU`.
        regularization_start: Training step at which the penalty starts.
        regularization_end: Training step at which it reaches full strength.
        kernel_initializer: Initializer for `kernel`, `W_re` (default: the
            NAU's, `keras_nalu.initializers.NAUUniform`).
        kernel_regularizer: Regularizer for `kernel`, on top of the penalty.
        kernel_constraint: Constraint for `kernel`; it is clipped to
            `[-1, 1]` after it.
        imaginary_initializer: Initializer for `imaginary_kernel`, `W_im`
            (default zeros, Heim et al.'s).
        imaginary_regularizer: Regularizer for `imaginary_kernel`.
        imaginary_constraint: Constraint for `imaginary_kernel`; it is
            clipped to `[-1, 1]` after it.
        gate_initializer: Initializer for `gate` (default 0.5, Heim et
            al.'s); ignored when `gated=False`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2.
        training: Whether to count the step and add the penalty.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        kernel: The real parts of the exponents, `(input_dim, units)`.
        imaginary_kernel: Their imaginary parts, `(input_dim, units)`.
        gate: The relevance gate, `(input_dim,)` (if `gated`).
        regularization_step: Training calls counted so far.
        effective_kernel: `clip(kernel, -1, 1)` (read-only).
        effective_gate: `clip(gate, 0, 1)`, or None if not `gated`
            (read-only).
        regularization_weight: The penalty's current weight (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NPU
    >>> ratio = keras.initializers.Constant([[1.0], [-1.0]])  # x_0 / x_1
    >>> layer = NPU(1, gated=False, kernel_initializer=ratio)
    >>> keras.ops.convert_to_numpy(layer(np.array([[6.0, -4.0]]))).tolist()
    [[-1.5]]

    Reference:
        Heim, Pevný & Šmídl, 2020, "Neural Power Units", NeurIPS,
        https://arxiv.org/abs/2006.01681
    """

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """The `RealNPU`'s, and `imaginary_kernel` to 0."""
        return {**super().exact_values, "imaginary_kernel": (0.0,)}

    def __init__(
        self,
        units: int,
        gated: bool = True,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        max_exponent: float = nalu_ops.FLOAT32_MAX_EXPONENT,
        regularization_strength: float = DEFAULT_SCHEDULE["regularization_strength"],
        regularization_start: int = DEFAULT_SCHEDULE["regularization_start"],
        regularization_end: int = DEFAULT_SCHEDULE["regularization_end"],
        kernel_initializer: InitializerLike = "keras_nalu>NAUUniform",
        kernel_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        imaginary_initializer: InitializerLike = "zeros",
        imaginary_regularizer: RegularizerLike | None = None,
        imaginary_constraint: ConstraintLike | None = None,
        gate_initializer: InitializerLike = HALF_OPEN,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            units,
            gated=gated,
            epsilon=epsilon,
            max_exponent=max_exponent,
            regularization_strength=regularization_strength,
            regularization_start=regularization_start,
            regularization_end=regularization_end,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            gate_initializer=gate_initializer,
            **kwargs,
        )
        self._set_weight_arguments(
            imaginary=(
                imaginary_initializer,
                imaginary_regularizer,
                imaginary_constraint,
            )
        )

    def build(self, input_shape):
        super().build(input_shape)
        self.imaginary_kernel = self._add_weight_from_arguments(
            "imaginary_kernel", self.kernel.shape, arguments="imaginary", bounds=(-1, 1)
        )

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The `RealNPU`'s, and `imaginary_kernel` clipped to `[-1, 1]`."""
        weights = self.unit_weights() if weights is None else weights
        effective = super().effective_weights(weights)
        effective["imaginary_kernel"] = nalu_ops.clip_weight(
            weights["imaginary_kernel"], -1.0, 1.0
        )
        return effective

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        w = self.effective_weights(weights)
        real, imaginary = w["kernel"], w["imaginary_kernel"]
        magnitude = ops.abs(x)
        negative = ops.cast(x < 0, x.dtype)
        gate = w.get("gate")
        if gate is not None:
            gate = ops.expand_dims(gate, -2)  # against the batch
            magnitude = gate * magnitude + (1.0 - gate)
            negative = gate * negative
        log_r = ops.log(ops.maximum(magnitude, self.epsilon))
        angle = np.pi * negative
        log_magnitude = nalu_ops.matmul(log_r, real) - nalu_ops.matmul(angle, imaginary)
        # An infinite input adds no phase: `W_im log r` has no limit there,
        # and `0 * inf` (W_im = 0) would make every output NaN.
        finite_log_r = ops.where(ops.isinf(log_r), ops.zeros_like(log_r), log_r)
        phase = nalu_ops.matmul(finite_log_r, imaginary) + nalu_ops.matmul(angle, real)
        return ops.exp(ops.minimum(log_magnitude, self.max_exponent)) * ops.cos(phase)

    def penalty(self, weights: dict[str, Any]) -> Any:
        """The `RealNPU`'s penalty plus `mean |W_im|`, per copy."""
        imaginary = self.effective_weights(weights)["imaginary_kernel"]
        return super().penalty(weights) + ops.mean(ops.abs(imaginary), axis=(-2, -1))

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        """The `RealNPU`'s where `W_im` is 0 (exact powers once every weight
        is), else `exp(sum W_re log r - pi W_im k) * cos(sum W_im log r +
        pi W_re k)`, `k_i = g_i Heaviside(-h_i)`."""
        imaginary = writer.matrix(self.effective_weights()["imaginary_kernel"])
        if all(v == 0 for row in imaginary for v in row):
            return super().expression(h, writer, x)
        sympy = writer.sympy
        real = writer.matrix(self.effective_kernel)
        g = self._gate_numbers(writer, len(h))
        pairs = list(zip(h, g, strict=True))
        log_r = [sympy.log(gi * sympy.Abs(hi) + 1 - gi) for hi, gi in pairs]
        k = [gi * sympy.Heaviside(-hi) for hi, gi in pairs]
        out = []
        for re_row, im_row in zip(real, imaginary, strict=True):
            terms = list(zip(re_row, im_row, log_r, k, strict=True))
            magnitude = sum(a * lr - sympy.pi * b * kk for a, b, lr, kk in terms)
            phase = sum(b * lr + sympy.pi * a * kk for a, b, lr, kk in terms)
            out.append(sympy.exp(magnitude) * sympy.cos(phase))
        return out

    def get_config(self):
        return {**super().get_config(), **self._weight_arguments_config("imaginary")}
