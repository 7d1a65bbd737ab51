from typing import Any

import keras
import numpy as np

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers.arithmetic_unit import SATURATION, ArithmeticUnit

# The effective weights of the NAC family, `tanh(w_hat) * sigmoid(m_hat)`,
# and the latent weights of each.
LATENT = {"kernel": ("w_hat", "m_hat"), "mul_kernel": ("mul_w_hat", "mul_m_hat")}


@keras.saving.register_keras_serializable(package="keras_nalu")
class NAC(ArithmeticUnit):
    """Neural accumulator: a linear layer biased to add and subtract inputs.

    `y = x @ W` with `W = tanh(w_hat) * sigmoid(m_hat)`, no bias and no
    activation. The elements of `W` lie in `[-1, 1]` and saturate at -1, 0
    and 1, so a trained NAC sums and subtracts inputs without rescaling them,
    and what it learned on small numbers holds on large ones.

    With `multiplicative=True` it is the NAC in log space, `y = exp(log(|x| +
    epsilon) @ W)` (Trask et al.'s multiplicative path alone, "NAC*" in
    Mistry et al.'s benchmark): products and quotients of the inputs'
    magnitudes, `prod |x_i|^W_ij`, and no sign.

    Args:
        units: Positive integer, dimensionality of the output space.
        w_hat_initializer: Initializer for the `w_hat` weights.
        m_hat_initializer: Initializer for the `m_hat` weights.
        w_hat_regularizer: Regularizer function applied to `w_hat`.
        m_hat_regularizer: Regularizer function applied to `m_hat`.
        w_hat_constraint: Constraint function applied to `w_hat`.
        m_hat_constraint: Constraint function applied to `m_hat`.
        multiplicative: Whether the layer is the NAC in log space (NAC*),
            `exp(log(|x| + epsilon) @ W)`. The NAC's own option: its
            subclasses (NALU, iNALU, the cell) refuse it.
        epsilon: Positive float added to `|x|` before the logarithm (read
            with `multiplicative=True`).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2. Integer inputs are cast to the
            layer's compute dtype.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        w_hat: Trainable weight `W_hat`, of shape `(input_dim, units)`.
        m_hat: Trainable weight `M_hat`, of shape `(input_dim, units)`.
        effective_kernel: The matrix `W` the layer applies (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NAC
    >>> layer = NAC(1, w_hat_initializer=keras.initializers.Constant(20.0),
    ...             m_hat_initializer=keras.initializers.Constant(20.0))
    >>> tuple(layer(np.array([[1.0, 2.0, 3.0]])).shape)
    (1, 1)
    >>> keras.ops.convert_to_numpy(layer.effective_kernel).ravel().tolist()
    [1.0, 1.0, 1.0]

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units",
        https://arxiv.org/abs/1808.00508
    """

    def __init__(
        self,
        units: int,
        w_hat_initializer: InitializerLike = "glorot_uniform",
        m_hat_initializer: InitializerLike = "glorot_uniform",
        w_hat_regularizer: RegularizerLike | None = None,
        m_hat_regularizer: RegularizerLike | None = None,
        w_hat_constraint: ConstraintLike | None = None,
        m_hat_constraint: ConstraintLike | None = None,
        multiplicative: bool = False,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = validation.positive_int("units", units)
        self.multiplicative = validation.boolean("multiplicative", multiplicative)
        if self.multiplicative and type(self) is not NAC:
            raise ValueError(
                f"Received multiplicative=True for a {type(self).__name__}, "
                "expected it only for a NAC (the NAC in log space); the "
                f"{type(self).__name__} has its own math. Received: "
                f"multiplicative={multiplicative!r}"
            )
        self.epsilon = validation.positive_float("epsilon", epsilon)
        self._set_weight_arguments(
            w_hat=(w_hat_initializer, w_hat_regularizer, w_hat_constraint),
            m_hat=(m_hat_initializer, m_hat_regularizer, m_hat_constraint),
        )

    def build(self, input_shape):
        input_dim = validation.feature_dim(self, input_shape)
        self.w_hat = self._add_weight_from_arguments("w_hat", (input_dim, self.units))
        self.m_hat = self._add_weight_from_arguments("m_hat", (input_dim, self.units))
        self.input_spec = keras.InputSpec(min_ndim=2, axes={-1: input_dim})

    linear = True

    @property
    def exact_values(self) -> dict[str, tuple[float, ...]]:
        """`{"kernel": (-1.0, 0.0, 1.0)}`: `W` snaps to -1, 0 or 1."""
        return {"kernel": (-1.0, 0.0, 1.0)}

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{"kernel": tanh(w_hat) * sigmoid(m_hat)}` (and `mul_kernel` of
        the multiplicative path's own latent weights, where a subclass has
        them)."""
        weights = self.unit_weights() if weights is None else weights
        return {
            name: nalu_ops.nac_weight(weights[w_hat], weights[m_hat])
            for name, (w_hat, m_hat) in LATENT.items()
            if w_hat in weights
        }

    def set_effective_weights(self, values: dict[str, Any]) -> None:
        """Sets `tanh(w_hat) * sigmoid(m_hat)` to `round(value)` exactly
        (`w_hat = +-SATURATION` or 0, `m_hat = SATURATION`), the nearest
        value a NAC holds exactly; other names as the base class does."""
        weights = self.unit_weights()
        rest = {}
        for name, value in values.items():
            if name not in LATENT:
                rest[name] = value
                continue
            w_hat, m_hat = (weights[n] for n in LATENT[name])
            target = np.round(np.asarray(value, dtype=np.float64))
            w_hat.assign((SATURATION * target).astype(w_hat.dtype))
            m_hat.assign(np.full(target.shape, SATURATION, m_hat.dtype))
        super().set_effective_weights(rest)

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        kernel = self.effective_weights(weights)["kernel"]
        if self.multiplicative:
            logs = nalu_ops.log_magnitude(x, self.epsilon)
            return keras.ops.exp(nalu_ops.nac(logs, kernel))
        return nalu_ops.nac(x, kernel)

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        """`h @ W`, or `prod |h_i|^W_ij` when multiplicative."""
        w = writer.matrix(self.effective_kernel)
        if self.multiplicative:
            return log_space_products(writer, w, h, signed=False)
        return writer.sums(w, h)

    def compute_output_shape(self, input_shape: Any) -> tuple[int | None, ...]:
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        config = {
            "units": self.units,
            **self._weight_arguments_config("w_hat", "m_hat"),
            "multiplicative": self.multiplicative,
            "epsilon": self.epsilon,
        }
        if type(self) is not NAC:  # the NAC's own option; a subclass refuses True
            del config["multiplicative"]
        return {**super().get_config(), **config}


def log_space_products(writer, w, h, signed):
    """`prod |h_i|^w_i` per row of `w`, the multiplicative path of NALU and
    iNALU; with iNALU's sign (`signed`) as `h_i^w_i` at `|w_i| = 1` and the
    factor `|w_i| sign(h_i) + 1 - |w_i|` elsewhere."""
    sympy = writer.sympy
    out = []
    for row in w:
        factors = []
        for wi, hi in zip(row, h, strict=True):
            if signed and abs(wi) == 1:
                factors.append(hi**wi)
            elif signed:
                size = abs(wi)
                sign = size * sympy.sign(hi) + 1 - size
                factors.append(sympy.Abs(hi) ** wi * sign)
            else:
                factors.append(sympy.Abs(hi) ** wi)
        out.append(sympy.Mul(*factors))
    return out
