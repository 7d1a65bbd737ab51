from typing import Any

import keras
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike, Tensor
from keras_nalu.layers._precision import compute_in_float32


@keras.saving.register_keras_serializable(package="keras_nalu")
class ConfiguredNALU(keras.layers.Layer):
    """A NALU whose weights are computed from a control input, per example.

    `y = g * a + (1 - g) * m` with `a = x @ W`, `m = exp(log(|x| + epsilon) @
    W)`, `g = sigmoid(x @ G)` and `W = tanh(w_hat) * sigmoid(m_hat)`, the math
    of `keras_nalu.NALU` (`keras_nalu.ops.nalu`), except that `w_hat`, `m_hat`
    and `G` are not weights of the layer but affine functions of a second
    input `c` (for example an LSTM's output `h_t`):
    `w_hat = reshape(c @ K_w + b_w)`, `m_hat = reshape(c @ K_m + b_m)`,
    `G = reshape(c @ K_g + b_g)`, each of shape `(input_dim, units)` for every
    example and time step. The control input "configures" the unit (Trask et
    al., Section 4.4): it picks which inputs to add, subtract, multiply or
    divide, while the arithmetic on `x` stays the NALU's. With zero kernels
    `K` the layer is a static `NALU` whose weights are the biases `b`.

    With `tied_weights=False` the multiplicative path has its own
    `W_mul = tanh(mul_w_hat) * sigmoid(mul_m_hat)`, configured the same way.
    Under a `float16` or `bfloat16` policy, including `"mixed_float16"`, the
    layer keeps its weights and math in float32 and returns float32, as
    `NALU` does.

    Args:
        units: Positive integer, dimensionality of the output space.
        epsilon: Positive float added to `|x|` before the logarithm.
        tied_weights: Whether the additive and multiplicative paths share `W`.
        kernel_initializer: Initializer for the kernels `K` that map the
            control input to the NALU's parameters.
        bias_initializer: Initializer for the biases `b`.
        kernel_regularizer: Regularizer for the kernels `K`.
        bias_regularizer: Regularizer for the biases `b`.
        kernel_constraint: Constraint for the kernels `K`.
        bias_constraint: Constraint for the biases `b`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A list `[x, control]`: `x` of shape `(batch, ..., input_dim)`,
            the numbers to compute on, and `control` of shape
            `(batch, ..., control_dim)` with the same leading axes.

    Input shape:
        `[(batch_size, ..., input_dim), (batch_size, ..., control_dim)]`.

    Output shape:
        `(batch_size, ..., units)`.

    Attributes:
        w_hat_kernel: Kernel `K_w` of shape `(control_dim, input_dim * units)`.
        m_hat_kernel: Kernel `K_m`, of the same shape.
        gate_kernel: Kernel `K_g`, of the same shape.
        mul_w_hat_kernel: Kernel of `mul_w_hat`, only with `tied_weights=False`.
        mul_m_hat_kernel: Kernel of `mul_m_hat`, only with `tied_weights=False`.
        w_hat_bias: Bias `b_w` of shape `(input_dim * units,)`.
        m_hat_bias: Bias `b_m`, of the same shape.
        gate_bias: Bias `b_g`, of the same shape.
        mul_w_hat_bias: Bias of `mul_w_hat`, only with `tied_weights=False`.
        mul_m_hat_bias: Bias of `mul_m_hat`, only with `tied_weights=False`.

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu.layers import ConfiguredNALU
    >>> x = keras.Input((None, 2))        # numbers, one pair per time step
    >>> tokens = keras.Input((None, 8))   # what to do with them
    >>> h = keras.layers.LSTM(16, return_sequences=True)(tokens)
    >>> y = ConfiguredNALU(1)([x, h])
    >>> model = keras.Model([x, tokens], y)
    >>> tuple(model([np.ones((3, 5, 2)), np.ones((3, 5, 8))]).shape)
    (3, 5, 1)

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units", Section 4.4,
        https://arxiv.org/abs/1808.00508
    """

    # Read by `keras_nalu.snap_weights`, which refuses the layer with it.
    cannot_snap = "its controller sets its arithmetic weights per example"

    def __init__(
        self,
        units: int,
        epsilon: float = nalu_ops.DEFAULT_EPSILON,
        tied_weights: bool = True,
        kernel_initializer: InitializerLike = "glorot_uniform",
        bias_initializer: InitializerLike = "zeros",
        kernel_regularizer: RegularizerLike | None = None,
        bias_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        bias_constraint: ConstraintLike | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = validation.positive_int("units", units)
        self.epsilon = validation.positive_float("epsilon", epsilon)
        self.tied_weights = validation.boolean("tied_weights", tied_weights)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        compute_in_float32(self)

    @property
    def parameter_names(self):
        """The NALU parameters the control input sets, in order."""
        names = ("w_hat", "m_hat", "gate")
        return names if self.tied_weights else names + ("mul_w_hat", "mul_m_hat")

    def _shapes(self, input_shape):
        if (
            not isinstance(input_shape, (list, tuple))
            or len(input_shape) != 2
            or not all(isinstance(s, (list, tuple)) for s in input_shape)
        ):
            raise ValueError(
                f"Received an invalid input for {type(self).__name__} layer "
                f"'{self.name}', expected a list of two tensors [x, control]. "
                f"Received: input_shape={input_shape}"
            )
        x_shape, control_shape = (tuple(s) for s in input_shape)
        if len(x_shape) != len(control_shape):
            raise ValueError(
                f"Received an invalid input for {type(self).__name__} layer "
                f"'{self.name}', expected x and control of the same rank. "
                f"Received: input_shape={input_shape}"
            )
        return x_shape, control_shape

    def build(self, input_shape):
        x_shape, control_shape = self._shapes(input_shape)
        self.input_dim = validation.feature_dim(self, x_shape)
        control_dim = validation.feature_dim(self, control_shape)
        size = self.input_dim * self.units
        for name in self.parameter_names:
            kernel = self.add_weight(
                name=f"{name}_kernel",
                shape=(control_dim, size),
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
                constraint=self.kernel_constraint,
            )
            bias = self.add_weight(
                name=f"{name}_bias",
                shape=(size,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
            setattr(self, f"{name}_kernel", kernel)
            setattr(self, f"{name}_bias", bias)
        self.input_spec = [
            keras.InputSpec(min_ndim=2, axes={-1: self.input_dim}),
            keras.InputSpec(min_ndim=2, axes={-1: control_dim}),
        ]

    def configure(self, control: Tensor) -> dict[str, Tensor]:
        """`{name: tensor of shape (..., input_dim, units)}` for the control.

        The NALU parameters (`w_hat`, `m_hat`, `gate`, and `mul_w_hat`,
        `mul_m_hat` when untied) that the control input sets, per example.
        """
        control = ops.cast(control, self.compute_dtype)
        leading = ops.shape(control)[:-1]
        return {
            name: ops.reshape(
                nalu_ops.matmul(control, getattr(self, f"{name}_kernel"))
                + getattr(self, f"{name}_bias"),
                (*leading, self.input_dim, self.units),
            )
            for name in self.parameter_names
        }

    def call(self, inputs):
        x, control = inputs
        x = ops.cast(x, self.compute_dtype)
        parameters = self.configure(control)
        w = nalu_ops.nac_weight(parameters["w_hat"], parameters["m_hat"])
        mul_w = None
        if not self.tied_weights:
            mul_w = nalu_ops.nac_weight(
                parameters["mul_w_hat"], parameters["mul_m_hat"]
            )
        # x as a row vector per example: (..., 1, in) @ (..., in, units).
        y = nalu_ops.nalu(
            ops.expand_dims(x, -2),
            w,
            parameters["gate"],
            mul_w=mul_w,
            epsilon=self.epsilon,
        )
        return ops.squeeze(y, -2)

    def compute_output_shape(self, input_shape: Any) -> tuple[int | None, ...]:
        x_shape, _ = self._shapes(input_shape)
        return x_shape[:-1] + (self.units,)

    def get_config(self):
        config = {
            "units": self.units,
            "epsilon": self.epsilon,
            "tied_weights": self.tied_weights,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            "bias_constraint": keras.constraints.serialize(self.bias_constraint),
        }
        return {**super().get_config(), **config}
