from typing import Any

import keras

from keras_nalu import (
    initializers,  # noqa: F401 (registers the default)
    validation,
)
from keras_nalu import ops as nalu_ops
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._precision import compute_in_float32
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE, SparseUnit

# Heim et al.'s start: every relevance gate at 0.5.
HALF_OPEN = {"class_name": "Constant", "config": {"value": 0.5}}


@keras.saving.register_keras_serializable(package="keras_nalu")
class RealNPU(SparseUnit):
    """Real neural power unit: products and ratios of inputs, with their signs.

    `y_j = exp(sum_i W_ij log r_i) * cos(pi * sum_i W_ij k_i)` with
    `r = g |x| + 1 - g` and `k = g [x < 0]` (`keras_nalu.ops.real_npu`): the
    magnitude `prod_i r_i^W_ij` and the sign of the product of the negative
    inputs it reads. A weight 1 multiplies by `x_i`, -1 divides by it, 0
    leaves it out, so one unit computes `x_0 * x_1 / x_2` exactly, sign
    included. The relevance gate `g` (one per input, in `[0, 1]`) turns an
    input off (`r_i = 1`); `gated=False` leaves every gate open and has no
    gate weight.

    Heim, Pevný & Šmídl's RealNPU (2020), with two changes that make it a
    member of the NAU family: `W` is clipped to `[-1, 1]` (as Mistry et al.'s
    `npu_clip`), and the NAU's sparsity penalty `mean(min(|W|, 1 - |W|))` (plus
    `mean(min(g, 1 - g))` of the gate) on the NAU's schedule replaces their
    L1 penalty, so every exponent ends at -1, 0 or 1; it learns products and
    ratios, not general powers. `|x|` is raised to at least `epsilon` before
    its logarithm (a zero input stays finite) and the exponent is capped at
    `max_exponent`, so the output never overflows float32; under a 16-bit
    policy the layer computes in float32 and returns float32.

    Unlike the NMRU's factors `W z + 1 - W`, whose value at `W = 0.5` on an
    input of 37 is 19, the power `x^W` moves between "left out" and "divide
    by it" without a barrier: after a NAU that sums many inputs, it learns a
    ratio of sums that the NMRU cannot ([benchmark of the
    units](../../experiments/units-benchmark.md)).

    Args:
        units: Positive integer, dimensionality of the output space.
        gated: Boolean, whether the unit has Heim et al.'s relevance gate.
        epsilon: Positive float, the smallest `r` whose logarithm is taken.
        max_exponent: Positive float, the largest exponent of the magnitude.
        regularization_strength: The penalty's largest weight, as for
            `keras_nalu.NAU`.
        regularization_start: Training step at which the penalty starts.
        regularization_end: Training step at which it reaches full strength.
        kernel_initializer: Initializer for `kernel` (default: the NAU's,
            `keras_nalu.initializers.NAUUniform`). A ratio of two inputs
            starts at `keras.initializers.Constant([[1.0], [-1.0]])`.
        kernel_regularizer: Regularizer for `kernel`, on top of the penalty.
        kernel_constraint: Constraint for `kernel`; the kernel is clipped to
            `[-1, 1]` after it.
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
        kernel: The trainable exponents, `(input_dim, units)`.
        gate: The trainable relevance gate, `(input_dim,)` (if `gated`).
        regularization_step: Training calls counted so far.
        effective_kernel: `clip(kernel, -1, 1)` (read-only).
        effective_gate: `clip(gate, 0, 1)`, or None if not `gated`
            (read-only).
        regularization_weight: The penalty's current weight (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import RealNPU
    >>> ratio = keras.initializers.Constant([[1.0], [-1.0]])  # x_0 / x_1
    >>> layer = RealNPU(1, gated=False, kernel_initializer=ratio)
    >>> keras.ops.convert_to_numpy(layer(np.array([[6.0, -4.0]]))).tolist()
    [[-1.5]]

    Reference:
        Heim, Pevný & Šmídl, 2020, "Neural Power Units", NeurIPS,
        https://arxiv.org/abs/2006.01681
    """

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
        gate_initializer: InitializerLike = HALF_OPEN,
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
        self.gated = validation.boolean("gated", gated)
        self.epsilon = validation.positive_float("epsilon", epsilon)
        self.max_exponent = validation.positive_float("max_exponent", max_exponent)
        # The gate has an initializer argument only.
        self._set_weight_arguments(gate=(gate_initializer, None, None))
        compute_in_float32(self)

    def build(self, input_shape):
        super().build(input_shape)
        if self.gated:
            self.gate = self._add_weight_from_arguments(
                "gate", (validation.feature_dim(self, input_shape),), bounds=(0, 1)
            )

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """`kernel` to -1, 0 or 1, and the gate to 0 or 1 (if `gated`)."""
        if not self.gated:
            return super().exact_values
        return {**super().exact_values, "gate": (0.0, 1.0)}

    @property
    def effective_gate(self):
        """The gate the unit applies, `clip(gate, 0, 1)`, or None (read-only)."""
        validation.check_built(self, "effective_gate")
        return self.effective_weights().get("gate")

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{"kernel": clip(kernel, -1, 1), "gate": clip(gate, 0, 1)}` (no
        gate if not `gated`)."""
        weights = self.unit_weights() if weights is None else weights
        effective = super().effective_weights(weights)
        if self.gated:
            effective["gate"] = nalu_ops.clip_weight(weights["gate"], 0.0, 1.0)
        return effective

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        w = self.effective_weights(weights)
        return nalu_ops.real_npu(
            x, w["kernel"], w.get("gate"), self.epsilon, self.max_exponent
        )

    def penalty(self, weights: dict[str, Any]) -> Any:
        w = self.effective_weights(weights)
        return nalu_ops.real_npu_penalty(w["kernel"], w.get("gate"))

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        """Exact powers `h_i^(w_i g_i)` once `w` and `g` are integers, else
        `prod r_i^w_i * cos(pi * sum w_i k_i)`, `[h_i < 0]` written
        `Heaviside(-h_i)`."""
        sympy = writer.sympy
        w = writer.matrix(self.effective_kernel)
        g = self._gate_numbers(writer, len(h))
        exact = all(v.is_Integer for v in g) and all(
            v.is_Integer for row in w for v in row
        )
        out = []
        for row in w:
            terms = list(zip(row, h, g, strict=True))
            if exact:
                out.append(sympy.Mul(*(hi ** (wi * gi) for wi, hi, gi in terms)))
                continue
            magnitude = sympy.Mul(
                *((gi * sympy.Abs(hi) + 1 - gi) ** wi for wi, hi, gi in terms)
            )
            negatives = sympy.Add(
                *(wi * gi * sympy.Heaviside(-hi) for wi, hi, gi in terms)
            )
            out.append(magnitude * sympy.cos(sympy.pi * negatives))
        return out

    def _gate_numbers(self, writer, size):
        """The gate as the writer's numbers, or `size` ones without a gate."""
        gate = self.effective_gate
        if gate is None:
            return [writer.sympy.Integer(1)] * size
        return [writer.number(v) for v in keras.ops.convert_to_numpy(gate)]

    def get_config(self):
        return {
            **super().get_config(),
            "gated": self.gated,
            "epsilon": self.epsilon,
            "max_exponent": self.max_exponent,
            "gate_initializer": keras.initializers.serialize(self.gate_initializer),
        }
