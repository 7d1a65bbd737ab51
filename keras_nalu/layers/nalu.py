from collections.abc import Sequence
from typing import Any

import keras

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._precision import compute_in_float32
from keras_nalu.layers.arithmetic_unit import GATE_SCALE
from keras_nalu.layers.nac import NAC, log_space_products


@keras.saving.register_keras_serializable(package="keras_nalu")
class NALU(NAC):
    """Neural arithmetic logic unit: learns +, -, *, / and powers of inputs.

    `y = g * a + (1 - g) * m` with `a = x @ W` (a NAC),
    `m = exp(log(|x| + epsilon) @ W)` (a NAC in log space, which multiplies,
    divides and raises to powers), `g = sigmoid(x @ G)` (a learned gate) and
    `W = tanh(w_hat) * sigmoid(m_hat)`.

    With `tied_weights=True` (the paper) one `W` serves both paths. With
    `tied_weights=False` the multiplicative path has its own
    `W_mul = tanh(mul_w_hat) * sigmoid(mul_m_hat)`.

    Numerics: `log(0)` is guarded by `epsilon`. The output is `inf` only where
    the true value exceeds the largest float32, and a closed gate over an
    overflowing product returns the additive path, not NaN (see
    `keras_nalu.ops.nalu`). Products outgrow float16 quickly (its largest value
    is 65504), so under a `float16` or `bfloat16` policy, including
    `"mixed_float16"`, the layer keeps its weights and all of its math in
    float32 and returns float32.

    Args:
        units: Positive integer, dimensionality of the output space.
        epsilon: Positive float added to `|x|` before the logarithm.
        tied_weights: Whether the additive and multiplicative paths share `W`.
        w_hat_initializer: Initializer for `w_hat`.
        m_hat_initializer: Initializer for `m_hat`.
        gate_initializer: Initializer for `gate_kernel`.
        mul_w_hat_initializer: Initializer for `mul_w_hat` (used with
            `tied_weights=False`).
        mul_m_hat_initializer: Initializer for `mul_m_hat` (used with
            `tied_weights=False`).
        w_hat_regularizer: Regularizer for `w_hat`.
        m_hat_regularizer: Regularizer for `m_hat`.
        gate_regularizer: Regularizer for `gate_kernel`.
        mul_w_hat_regularizer: Regularizer for `mul_w_hat`.
        mul_m_hat_regularizer: Regularizer for `mul_m_hat`.
        w_hat_constraint: Constraint for `w_hat`.
        m_hat_constraint: Constraint for `m_hat`.
        gate_constraint: Constraint for `gate_kernel`.
        mul_w_hat_constraint: Constraint for `mul_w_hat`.
        mul_m_hat_constraint: Constraint for `mul_m_hat`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2. Integer inputs are cast to float.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        w_hat: Trainable weight `W_hat`, `(input_dim, units)`.
        m_hat: Trainable weight `M_hat`, `(input_dim, units)`.
        gate_kernel: Trainable weight `G`, `(input_dim, units)`.
        mul_w_hat: `W_hat` of the multiplicative path, only with
            `tied_weights=False`.
        mul_m_hat: `M_hat` of the multiplicative path, only with
            `tied_weights=False`.
        effective_kernel: `W` of the additive path (read-only).
        effective_mul_kernel: `W` of the multiplicative path (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NALU
    >>> model = keras.Sequential([keras.Input((100,)), NALU(2), NALU(1)])
    >>> model.compile(optimizer="adam", loss="mse")
    >>> tuple(model(np.ones((4, 100))).shape)
    (4, 1)

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units",
        https://arxiv.org/abs/1808.00508
    """

    def __init__(
        self,
        units: int,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        tied_weights: bool = True,
        w_hat_initializer: InitializerLike = "glorot_uniform",
        m_hat_initializer: InitializerLike = "glorot_uniform",
        gate_initializer: InitializerLike = "glorot_uniform",
        mul_w_hat_initializer: InitializerLike = "glorot_uniform",
        mul_m_hat_initializer: InitializerLike = "glorot_uniform",
        w_hat_regularizer: RegularizerLike | None = None,
        m_hat_regularizer: RegularizerLike | None = None,
        gate_regularizer: RegularizerLike | None = None,
        mul_w_hat_regularizer: RegularizerLike | None = None,
        mul_m_hat_regularizer: RegularizerLike | None = None,
        w_hat_constraint: ConstraintLike | None = None,
        m_hat_constraint: ConstraintLike | None = None,
        gate_constraint: ConstraintLike | None = None,
        mul_w_hat_constraint: ConstraintLike | None = None,
        mul_m_hat_constraint: ConstraintLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            units,
            w_hat_initializer=w_hat_initializer,
            m_hat_initializer=m_hat_initializer,
            w_hat_regularizer=w_hat_regularizer,
            m_hat_regularizer=m_hat_regularizer,
            w_hat_constraint=w_hat_constraint,
            m_hat_constraint=m_hat_constraint,
            **kwargs,
        )
        self.epsilon = validation.positive_float("epsilon", epsilon)
        self.tied_weights = validation.boolean("tied_weights", tied_weights)
        self._set_weight_arguments(
            gate=(gate_initializer, gate_regularizer, gate_constraint),
            mul_w_hat=(
                mul_w_hat_initializer,
                mul_w_hat_regularizer,
                mul_w_hat_constraint,
            ),
            mul_m_hat=(
                mul_m_hat_initializer,
                mul_m_hat_regularizer,
                mul_m_hat_constraint,
            ),
        )
        compute_in_float32(self)

    def build(self, input_shape):
        super().build(input_shape)
        input_dim = self.w_hat.shape[0]
        shape = (input_dim, self.units)
        self.gate_kernel = self._add_weight_from_arguments(
            "gate_kernel", shape, arguments="gate"
        )
        if not self.tied_weights:
            self.mul_w_hat = self._add_weight_from_arguments("mul_w_hat", shape)
            self.mul_m_hat = self._add_weight_from_arguments("mul_m_hat", shape)

    linear = False

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """The NAC's `kernel`, and with `tied_weights=False` the
        multiplicative path's `mul_kernel`, each to -1, 0 or 1."""
        if self.tied_weights:
            return super().exact_values
        return {**super().exact_values, "mul_kernel": (-1.0, 0.0, 1.0)}

    @property
    def effective_mul_kernel(self):
        """`W` of the multiplicative path, shape `(input_dim, units)`."""
        validation.check_built(self, "effective_mul_kernel")
        effective = self.effective_weights()
        return effective.get("mul_kernel", effective["kernel"])

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        w = self.effective_weights(weights)
        return nalu_ops.nalu(
            x,
            w["kernel"],
            weights["gate_kernel"],
            mul_w=w.get("mul_kernel"),
            epsilon=self.epsilon,
        )

    def snap(self, names: Sequence[str] | None = None) -> None:
        """Snaps the paths' weights (those of `names`, default all), and
        when snapping all of them scales the gate's kernel by `GATE_SCALE`,
        so a gate decided on an input is exactly open or closed there."""
        super().snap(names)
        if names is None:
            self.gate_kernel.assign(GATE_SCALE * self.gate_kernel)

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        """`g * a + (1 - g) * m`: the gate `sigmoid(h @ G)`, written 1 or 0
        where it is decided on every row of `x`."""
        sympy = writer.sympy
        a = writer.sums(writer.matrix(self.effective_kernel), h)
        m = log_space_products(
            writer, writer.matrix(self.effective_mul_kernel), h, signed=False
        )
        logits = writer.sums(writer.matrix(self.gate_kernel), h)
        values = None
        if x is not None:
            z = nalu_ops.matmul(x, self.gate_kernel)
            values = keras.ops.convert_to_numpy(keras.ops.sigmoid(z))
        gates = [
            writer.gate(
                None if values is None else values[:, j],
                sympy.Function("sigmoid")(logit),
            )
            for j, logit in enumerate(logits)
        ]
        return [gj * aj + (1 - gj) * mj for gj, aj, mj in zip(gates, a, m, strict=True)]

    def get_config(self):
        config = {
            "epsilon": self.epsilon,
            "tied_weights": self.tied_weights,
            **self._weight_arguments_config("gate", "mul_w_hat", "mul_m_hat"),
        }
        return {**super().get_config(), **config}
