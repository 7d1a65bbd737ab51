from typing import Any

import keras
import numpy as np

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._precision import compute_in_float32
from keras_nalu.layers.arithmetic_unit import SATURATION
from keras_nalu.layers.nac import NAC, log_space_products


@keras.saving.register_keras_serializable(package="keras_nalu")
class INALU(NAC):
    """Improved NALU: sign-aware, stable, with separate weights per path.

    `y = g * a + (1 - g) * m * s` with the additive path `a = x @ W`, the
    multiplicative path `m = exp(min(log(|x| + epsilon) @ W_mul, max_exponent))`,
    its sign `s = prod_i (sign(x_i) |W_mul,ij| + 1 - |W_mul,ij|)`, and a gate
    `g = sigmoid(gate)` that does not depend on the input. `W` and `W_mul` are
    NAC weights (`tanh(w_hat) * sigmoid(m_hat)`) of their own. iNALU's penalty
    `mean(max(min(-w, w) + t, 0) / t)` over the four latent weights (0 once
    every `|w| >= t`, where `W` is exactly -1, 0 or 1) is added to the loss on
    the schedule of `keras_nalu.NAU`.

    What it fixes in the NALU (Schlör et al., 2020): products of negative
    inputs get their sign; the clipped exponent bounds `m` by
    `exp(max_exponent)`, so neither the output nor the gradients overflow; a
    gate per output unit stops the NALU's input-dependent gate from picking a
    different path on the extrapolation range. Not included: the paper's
    reinitialization of weights when the loss stalls. Under a 16-bit policy
    the layer computes in float32 and returns float32.

    Args:
        units: Positive integer, dimensionality of the output space.
        epsilon: Positive float added to `|x|` before the logarithm.
        max_exponent: Positive float, the largest exponent of `m`.
        regularization_strength: The penalty's largest weight, as for
            `keras_nalu.NAU`.
        regularization_start: Training step at which the penalty starts.
        regularization_end: Training step at which it reaches full strength.
        regularization_threshold: Positive float `t` of the penalty.
        w_hat_initializer: Initializer for `w_hat`.
        m_hat_initializer: Initializer for `m_hat`.
        mul_w_hat_initializer: Initializer for `mul_w_hat`.
        mul_m_hat_initializer: Initializer for `mul_m_hat`.
        gate_initializer: Initializer for `gate` (default zeros: the gate
            starts at 0.5).
        w_hat_regularizer: Regularizer for `w_hat`.
        m_hat_regularizer: Regularizer for `m_hat`.
        mul_w_hat_regularizer: Regularizer for `mul_w_hat`.
        mul_m_hat_regularizer: Regularizer for `mul_m_hat`.
        gate_regularizer: Regularizer for `gate`.
        w_hat_constraint: Constraint for `w_hat`.
        m_hat_constraint: Constraint for `m_hat`.
        mul_w_hat_constraint: Constraint for `mul_w_hat`.
        mul_m_hat_constraint: Constraint for `mul_m_hat`.
        gate_constraint: Constraint for `gate`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2.
        training: Whether to count the step and add the penalty.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        w_hat: Trainable weight `W_hat` of the additive path,
            `(input_dim, units)`.
        m_hat: Trainable weight `M_hat` of the additive path.
        mul_w_hat: `W_hat` of the multiplicative path.
        mul_m_hat: `M_hat` of the multiplicative path.
        gate: Trainable gate logits, `(units,)`.
        effective_kernel: `W = tanh(w_hat) * sigmoid(m_hat)` (read-only).
        effective_mul_kernel: `W_mul`, the same of the multiplicative path
            (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import INALU
    >>> one = keras.initializers.Constant(30.0)
    >>> layer = INALU(1, mul_w_hat_initializer=one, mul_m_hat_initializer=one,
    ...               gate_initializer=keras.initializers.Constant(-30.0))
    >>> y = keras.ops.convert_to_numpy(layer(np.array([[-2.0, 3.0]])))
    >>> round(float(y[0, 0]), 4)  # closed gate: the signed product
    -6.0

    Reference:
        Schlör, Ring & Hotho, 2020, "iNALU: Improved Neural Arithmetic Logic
        Unit", Frontiers in Artificial Intelligence,
        https://arxiv.org/abs/2003.07629
    """

    def __init__(
        self,
        units: int,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        max_exponent: float = 20.0,
        regularization_strength: float = 1.0,
        regularization_start: int = 20_000,
        regularization_end: int = 35_000,
        regularization_threshold: float = 20.0,
        w_hat_initializer: InitializerLike = "glorot_uniform",
        m_hat_initializer: InitializerLike = "glorot_uniform",
        mul_w_hat_initializer: InitializerLike = "glorot_uniform",
        mul_m_hat_initializer: InitializerLike = "glorot_uniform",
        gate_initializer: InitializerLike = "zeros",
        w_hat_regularizer: RegularizerLike | None = None,
        m_hat_regularizer: RegularizerLike | None = None,
        mul_w_hat_regularizer: RegularizerLike | None = None,
        mul_m_hat_regularizer: RegularizerLike | None = None,
        gate_regularizer: RegularizerLike | None = None,
        w_hat_constraint: ConstraintLike | None = None,
        m_hat_constraint: ConstraintLike | None = None,
        mul_w_hat_constraint: ConstraintLike | None = None,
        mul_m_hat_constraint: ConstraintLike | None = None,
        gate_constraint: ConstraintLike | None = None,
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
        self.max_exponent = validation.positive_float("max_exponent", max_exponent)
        self.set_penalty_schedule(
            regularization_strength, regularization_start, regularization_end
        )
        self.regularization_threshold = validation.positive_float(
            "regularization_threshold", regularization_threshold
        )
        self._set_weight_arguments(
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
            gate=(gate_initializer, gate_regularizer, gate_constraint),
        )
        compute_in_float32(self)

    def build(self, input_shape):
        super().build(input_shape)
        input_dim = self.w_hat.shape[0]
        shape = (input_dim, self.units)
        self.mul_w_hat = self._add_weight_from_arguments("mul_w_hat", shape)
        self.mul_m_hat = self._add_weight_from_arguments("mul_m_hat", shape)
        self.gate = self._add_weight_from_arguments("gate", (self.units,))
        self.build_penalty_schedule()

    linear = False

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """The paths' `kernel` and `mul_kernel` to -1, 0 or 1, the gate
        `sigmoid(gate)` to 0 or 1."""
        return {
            **super().exact_values,
            "mul_kernel": (-1.0, 0.0, 1.0),
            "gate": (0.0, 1.0),
        }

    @property
    def effective_mul_kernel(self):
        """`W_mul = tanh(mul_w_hat) * sigmoid(mul_m_hat)`, `(input_dim, units)`."""
        validation.check_built(self, "effective_mul_kernel")
        return self.effective_weights()["mul_kernel"]

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The paths' `kernel` and `mul_kernel`, and the gate `sigmoid(gate)`."""
        weights = self.unit_weights() if weights is None else weights
        return {
            **super().effective_weights(weights),
            "gate": keras.ops.sigmoid(weights["gate"]),
        }

    def set_effective_weights(self, values: dict[str, Any]) -> None:
        """As the NAC's, and the gate `sigmoid(gate)` set to 0 or 1 exactly
        (`gate = -+SATURATION`)."""
        values = dict(values)
        if "gate" in values:
            gate = np.asarray(values.pop("gate"), dtype=np.float64)
            self.gate.assign((SATURATION * (2.0 * gate - 1.0)).astype(self.gate.dtype))
        super().set_effective_weights(values)

    def penalty(self, weights: dict[str, Any]) -> Any:
        """iNALU's penalty: the mean over its four latent weights of
        `keras_nalu.ops.inalu_penalty`."""
        names = ("w_hat", "m_hat", "mul_w_hat", "mul_m_hat")
        total = sum(
            nalu_ops.inalu_penalty(weights[n], self.regularization_threshold)
            for n in names
        )
        return total / len(names)

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        w = self.effective_weights(weights)
        return nalu_ops.inalu(
            x,
            w["kernel"],
            w["mul_kernel"],
            keras.ops.expand_dims(weights["gate"], -2),  # against the batch
            epsilon=self.epsilon,
            max_exponent=self.max_exponent,
        )

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        a = writer.sums(writer.matrix(self.effective_kernel), h)
        m = log_space_products(
            writer, writer.matrix(self.effective_mul_kernel), h, signed=True
        )
        g = keras.ops.convert_to_numpy(self.effective_weights()["gate"])
        gates = [writer.gate(np.array([v]), writer.number(v)) for v in g]
        return [gj * aj + (1 - gj) * mj for gj, aj, mj in zip(gates, a, m, strict=True)]

    def get_config(self):
        config = {
            "epsilon": self.epsilon,
            "max_exponent": self.max_exponent,
            **self.penalty_schedule_config(),
            "regularization_threshold": self.regularization_threshold,
            **self._weight_arguments_config("mul_w_hat", "mul_m_hat", "gate"),
        }
        return {**super().get_config(), **config}
