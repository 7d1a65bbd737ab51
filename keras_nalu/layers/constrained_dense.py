from typing import Any

import keras
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike

WEIGHT_TRANSFORMS = ("linear", "sigmoid", "tanh", "nac")


@keras.saving.register_keras_serializable(package="keras_nalu")
class ConstrainedDense(keras.layers.Layer):
    """A dense layer whose weights pass through a squashing function first.

    `y = f(W) @ x + b`, written `y = x @ f(kernel) + bias` for a batch, with
    `f` chosen by `weight_transform`:

    - `"linear"`: `f(W) = W`, a plain affine layer (`keras.layers.Dense`
      without activation);
    - `"sigmoid"`: `f(W) = sigmoid(W)`, weights in `(0, 1)`;
    - `"tanh"`: `f(W) = tanh(W)`, weights in `(-1, 1)`;
    - `"nac"`: `f = tanh(W_hat) * sigmoid(M_hat)`, the NAC's weights, in
      `[-1, 1]` and biased toward -1, 0 and 1 (`kernel` is `W_hat`, and the
      layer has a second weight `m_hat`).

    With `use_bias=False` the bias is left out (`+ 0`). These are the seven
    rows of the ablation of Table 4 of the paper (Wx+b, sigmoid(W)x+b,
    tanh(W)x+b, Wx+0, sigmoid(W)x+0, tanh(W)x+0 and the NAC); `"nac"` without
    a bias computes exactly what `keras_nalu.NAC` computes.

    Args:
        units: Positive integer, dimensionality of the output space.
        weight_transform: One of `"linear"`, `"sigmoid"`, `"tanh"`, `"nac"`.
        use_bias: Whether to add a learned bias `b`.
        kernel_initializer: Initializer for `kernel` (`W`, or `W_hat`).
        m_hat_initializer: Initializer for `m_hat` (`"nac"` only).
        bias_initializer: Initializer for `bias`.
        kernel_regularizer: Regularizer for `kernel`.
        m_hat_regularizer: Regularizer for `m_hat` (`"nac"` only).
        bias_regularizer: Regularizer for `bias`.
        kernel_constraint: Constraint for `kernel`.
        m_hat_constraint: Constraint for `m_hat` (`"nac"` only).
        bias_constraint: Constraint for `bias`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A tensor of rank >= 2. Integer inputs are cast to the
            layer's compute dtype.

    Input shape:
        N-D tensor with shape `(batch_size, ..., input_dim)`.

    Output shape:
        N-D tensor with shape `(batch_size, ..., units)`.

    Attributes:
        kernel: Trainable weight `(input_dim, units)`: `W`, or `W_hat`.
        m_hat: Trainable weight `(input_dim, units)`, only for `"nac"`.
        bias: Trainable weight `(units,)`, only with `use_bias=True`.
        effective_kernel: The matrix `f(W)` the layer applies (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu.layers import ConstrainedDense
    >>> layer = ConstrainedDense(1, weight_transform="tanh", use_bias=False,
    ...                          kernel_initializer=keras.initializers.Constant(20.0))
    >>> keras.ops.convert_to_numpy(layer(np.array([[1.0, 2.0, 3.0]]))).tolist()
    [[6.0]]

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units", Section 4.6,
        Table 4, https://arxiv.org/abs/1808.00508
    """

    def __init__(
        self,
        units: int,
        weight_transform: str = "nac",
        use_bias: bool = False,
        kernel_initializer: InitializerLike = "glorot_uniform",
        m_hat_initializer: InitializerLike = "glorot_uniform",
        bias_initializer: InitializerLike = "zeros",
        kernel_regularizer: RegularizerLike | None = None,
        m_hat_regularizer: RegularizerLike | None = None,
        bias_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        m_hat_constraint: ConstraintLike | None = None,
        bias_constraint: ConstraintLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = validation.positive_int("units", units)
        self.weight_transform = validation.one_of(
            "weight_transform", weight_transform, WEIGHT_TRANSFORMS
        )
        self.use_bias = validation.boolean("use_bias", use_bias)
        for name, initializer, regularizer, constraint in (
            ("kernel", kernel_initializer, kernel_regularizer, kernel_constraint),
            ("m_hat", m_hat_initializer, m_hat_regularizer, m_hat_constraint),
            ("bias", bias_initializer, bias_regularizer, bias_constraint),
        ):
            setattr(self, f"{name}_initializer", keras.initializers.get(initializer))
            setattr(self, f"{name}_regularizer", keras.regularizers.get(regularizer))
            setattr(self, f"{name}_constraint", keras.constraints.get(constraint))

    def _add(self, name, shape):
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=getattr(self, f"{name}_initializer"),
            regularizer=getattr(self, f"{name}_regularizer"),
            constraint=getattr(self, f"{name}_constraint"),
        )

    def build(self, input_shape):
        input_dim = validation.feature_dim(self, input_shape)
        self.kernel = self._add("kernel", (input_dim, self.units))
        if self.weight_transform == "nac":
            self.m_hat = self._add("m_hat", (input_dim, self.units))
        if self.use_bias:
            self.bias = self._add("bias", (self.units,))
        self.input_spec = keras.InputSpec(min_ndim=2, axes={-1: input_dim})

    @property
    def effective_kernel(self):
        """The matrix `f(W)` the layer applies, shape `(input_dim, units)`."""
        validation.check_built(self, "effective_kernel")
        if self.weight_transform == "sigmoid":
            return ops.sigmoid(self.kernel)
        if self.weight_transform == "tanh":
            return ops.tanh(self.kernel)
        if self.weight_transform == "nac":
            return nalu_ops.nac_weight(self.kernel, self.m_hat)
        return self.kernel

    def call(self, inputs):
        inputs = ops.cast(inputs, self.compute_dtype)
        outputs = nalu_ops.matmul(inputs, self.effective_kernel)
        if self.use_bias:
            outputs = outputs + self.bias
        return outputs

    def compute_output_shape(self, input_shape: Any) -> tuple[int | None, ...]:
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        config = {
            "units": self.units,
            "weight_transform": self.weight_transform,
            "use_bias": self.use_bias,
        }
        for name in ("kernel", "m_hat", "bias"):
            for kind, module in (
                ("initializer", keras.initializers),
                ("regularizer", keras.regularizers),
                ("constraint", keras.constraints),
            ):
                key = f"{name}_{kind}"
                config[key] = module.serialize(getattr(self, key))
        return {**super().get_config(), **config}
