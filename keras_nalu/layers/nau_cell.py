from typing import Any

import keras
import numpy as np
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import ConstraintLike, InitializerLike, RegularizerLike
from keras_nalu.layers._recurrent import RecurrentCellMixin
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE
from keras_nalu.layers.nau import NAU


@keras.saving.register_keras_serializable(package="keras_nalu")
class NAUCell(RecurrentCellMixin, NAU):  # type: ignore[misc]  # the cell's call(inputs, states)
    """Recurrent NAU cell for `keras.layers.RNN`: `h_t = [x_t, h_{t-1}] @ W`.

    `W = clip(kernel, -1, 1)`, no bias; the output is `h_t` and the initial
    state is zeros. The weights reach -1, 0 and 1 exactly: a state weight
    that training pushes to 1 is clipped to exactly 1, where the NAC's
    `tanh * sigmoid` only approaches it, so a learned running sum or count
    stays exact over any length (as long as the sums are exact in the
    compute dtype: integers below 2^24 in float32).

    Unlike `NAU`, the cell adds no scheduled penalty: Keras's RNN calls it
    inside its loop (a `tf.while_loop`, a `lax.scan`), where a step counter
    cannot advance. Pass the penalty as a regularizer, which Keras evaluates
    once per batch outside the loop:
    `NAUCell(units, kernel_regularizer=keras_nalu.regularizers.Sparsity(0.01))`.

    The state rows of the kernel start at `recurrent_initializer`, by
    default the identity: the cell starts as a running sum of what its input
    rows read, as Le et al.'s IRNN (2015) starts a ReLU RNN, and training
    moves the input rows. On the digit counting task (a convnet under the
    cell), the identity start reached a training loss of 0.23 in 2,000
    steps where Madsen & Johansen's initializer on every row reached 0.72
    (docs/experiments/mnist-counting.md).

    With `diagonal_state=True` each unit reads only its own previous state,
    `h_t = x_t @ W_x + h_{t-1} * w_h` (the form of Li et al.'s IndRNN, 2018):
    the state rows of the kernel are masked to their diagonal. A full state
    block lets the units leak into one another; when their states are
    correlated (sums of positive inputs grow together) the data hardly
    tell the leaks apart, and any leak left makes the states grow
    exponentially with the length. A counter or running sum needs only the
    diagonal.

    Args:
        units: Positive integer, dimensionality of the output and state.
        kernel_initializer: Initializer for `kernel` (default: Madsen &
            Johansen's, `keras_nalu.initializers.NAUUniform`); for its
            first `input_dim` rows only unless `recurrent_initializer` is
            None.
        recurrent_initializer: Initializer for the last `units` rows of
            `kernel`, which read `h_{t-1}` (default `"identity"`), or None
            for `kernel_initializer`.
        kernel_regularizer: Regularizer for `kernel`, for example
            `keras_nalu.regularizers.Sparsity`; for its first `input_dim`
            rows only when `recurrent_regularizer` is given.
        recurrent_regularizer: Regularizer for the state rows as the cell
            applies them (clipped; only their diagonal, as a row, under
            `diagonal_state=True`), for example `Sparsity(1.0)` to pull the
            state weights to exactly 0 or 1 without pulling the input rows.
        kernel_constraint: Constraint for `kernel`; the kernel is clipped to
            `[-1, 1]` after it.
        centered_gradient: Boolean, whether training takes the kernel's
            gradient of the batch-centered `[x_t, h_{t-1}]` (see `NAU`).
        diagonal_state: Boolean, whether each unit reads only its own
            previous state (the state rows masked to their diagonal).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A 2D tensor `(batch_size, input_dim)`, the step's input `x_t`.
        states: A list with one tensor `(batch_size, units)`, `h_{t-1}`.
        training: Whether the batch-centered gradient applies.

    Attributes:
        kernel: Trainable weight of shape `(input_dim + units, units)`; the
            first `input_dim` rows read `x_t`, the rest read `h_{t-1}`.
        effective_kernel: `clip(kernel, -1, 1)`, with the state rows masked
            to their diagonal under `diagonal_state=True` (read-only).

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NAUCell
    >>> cell = NAUCell(1, kernel_initializer="ones")  # h_t = x_t + h_{t-1}
    >>> rnn = keras.layers.RNN(cell)
    >>> keras.ops.convert_to_numpy(rnn(np.ones((1, 1000, 1)))).tolist()
    [[1000.0]]

    Reference:
        Madsen & Johansen, 2020, "Neural Arithmetic Units", ICLR,
        https://openreview.net/forum?id=H1gNOeHKPS
    """

    _scheduled = False

    def __init__(
        self,
        units: int,
        kernel_initializer: InitializerLike = "keras_nalu>NAUUniform",
        recurrent_initializer: InitializerLike = "identity",
        kernel_regularizer: RegularizerLike | None = None,
        recurrent_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        centered_gradient: bool = False,
        diagonal_state: bool = False,
        **kwargs: Any,
    ) -> None:
        schedule = sorted(set(kwargs) & set(DEFAULT_SCHEDULE))
        if schedule:
            raise TypeError(
                f"NAUCell takes no penalty schedule ({', '.join(schedule)}): its "
                "call runs inside the RNN's loop, where no step counter can "
                "advance. Regularize its weights with kernel_regularizer and "
                "recurrent_regularizer (e.g. keras_nalu.regularizers.Sparsity)."
            )
        super().__init__(
            units,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            centered_gradient=centered_gradient,
            **kwargs,
        )
        self.diagonal_state = validation.boolean("diagonal_state", diagonal_state)
        self.recurrent_regularizer = keras.regularizers.get(recurrent_regularizer)
        self.recurrent_initializer = (
            None
            if recurrent_initializer is None
            else keras.initializers.get(recurrent_initializer)
        )

    def build(self, input_shape):
        super().build(input_shape)
        rows = self.kernel.shape[0] - self.units
        # The mask of `diagonal_state`, made once: `effective_kernel` runs at
        # every time step.
        self._state_mask = np.vstack([np.ones((rows, self.units)), np.eye(self.units)])
        if self.recurrent_initializer is not None:
            recurrent = self.recurrent_initializer(
                (self.units, self.units), dtype=self.kernel.dtype
            )
            self.kernel.assign(ops.concatenate([self.kernel[:rows], recurrent], 0))
        if self.recurrent_regularizer is not None:
            # One weight, two regularizers: Keras evaluates this once per
            # batch, outside the RNN's loop.
            self.kernel.regularizer = self._regularization

    def _regularization(self, kernel):
        rows = kernel.shape[0] - self.units
        state = nalu_ops.clip_weight(kernel[rows:], self.low, self.high)
        if self.diagonal_state:
            state = ops.expand_dims(ops.diagonal(state), 0)
        loss = self.recurrent_regularizer(state)
        if self.kernel_regularizer is not None:
            loss = loss + self.kernel_regularizer(kernel[:rows])
        return loss

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The clipped kernel, its state rows masked to their diagonal with
        `diagonal_state`."""
        effective = super().effective_weights(weights)
        if self.diagonal_state:
            w = effective["kernel"]
            effective["kernel"] = w * ops.convert_to_tensor(
                self._state_mask, dtype=w.dtype
            )
        return effective

    def get_config(self):
        config = super().get_config()
        config["diagonal_state"] = self.diagonal_state
        config["recurrent_regularizer"] = keras.regularizers.serialize(
            self.recurrent_regularizer
        )
        config["recurrent_initializer"] = (
            None
            if self.recurrent_initializer is None
            else keras.initializers.serialize(self.recurrent_initializer)
        )
        return config
