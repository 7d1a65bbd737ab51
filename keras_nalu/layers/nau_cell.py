from typing import Any, ClassVar

import keras
import numpy as np
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation
from keras_nalu._types import (
    ConstraintLike,
    InitializerLike,
    RegularizerLike,
    Tensor,
)
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

    The state weight is apart from the input kernel, as Keras's
    `SimpleRNNCell` keeps its `recurrent_kernel`. It starts at
    `recurrent_initializer`, by default the identity: the cell starts as a
    running sum of what its input weights read, as Le et al.'s IRNN (2015)
    starts a ReLU RNN, and training moves the input weights. On the digit
    counting task (a convnet under the cell), the identity start reached a
    training loss of 0.23 in 2,000 steps where Madsen & Johansen's
    initializer on every weight reached 0.72
    (docs/experiments/mnist-counting.md). The input kernel is drawn as the
    first `input_dim` rows of one draw of `kernel_initializer` over the
    rows of `[x_t, h_{t-1}]`, the unit it is, so that a fan-based
    initializer's range counts the state too.

    With `diagonal_state=True` each unit reads only its own previous state,
    `h_t = x_t @ W_x + h_{t-1} * w_h` (the form of Li et al.'s IndRNN, 2018):
    the recurrent kernel is the vector `w_h`. A full state matrix lets the
    units leak into one another; when their states are correlated (sums of
    positive inputs grow together) the data hardly tell the leaks apart,
    and any leak left makes the states grow exponentially with the length.
    A counter or running sum needs only the diagonal.

    Models saved before the state weight was apart (one `kernel` of
    `input_dim + units` rows) load: their rows are split on loading.

    Args:
        units: Positive integer, dimensionality of the output and state.
        kernel_initializer: Initializer for `kernel` (default: Madsen &
            Johansen's, `keras_nalu.initializers.NAUUniform`), drawn over
            the rows of `[x_t, h_{t-1}]` (see above).
        recurrent_initializer: Initializer for `recurrent_kernel`, the
            weights that read `h_{t-1}` (default `"identity"`; its diagonal
            under `diagonal_state=True`), or None for the state rows of the
            draw of `kernel_initializer`.
        kernel_regularizer: Regularizer for `kernel`, for example
            `keras_nalu.regularizers.Sparsity`.
        recurrent_regularizer: Regularizer for `recurrent_kernel`, for
            example `Sparsity(1.0)` to pull the state weights to exactly 0 or
            1 without pulling the input weights.
        kernel_constraint: Constraint for `kernel`; the kernel is clipped to
            `[-1, 1]` after it.
        recurrent_constraint: Constraint for `recurrent_kernel`, which is
            clipped to `[-1, 1]` after it.
        centered_gradient: Boolean, whether training takes the kernels'
            gradient of the batch-centered `[x_t, h_{t-1}]` (see `NAU`).
        diagonal_state: Boolean, whether each unit reads only its own
            previous state (`recurrent_kernel` a vector).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A 2D tensor `(batch_size, input_dim)`, the step's input `x_t`.
        states: A list with one tensor `(batch_size, units)`, `h_{t-1}`.
        training: Whether the batch-centered gradient applies.

    Attributes:
        kernel: Trainable weight of shape `(input_dim, units)`, reading `x_t`.
        recurrent_kernel: Trainable weight of shape `(units, units)`, reading
            `h_{t-1}`; `(units,)` under `diagonal_state=True`.
        effective_kernel: `clip(kernel, -1, 1)` (read-only).
        effective_recurrent_kernel: `clip(recurrent_kernel, -1, 1)`
            (read-only).
        state_weights: The weight with which unit `j` carries its own state
            to the next step, the diagonal of `effective_recurrent_kernel`,
            shape `(units,)` (read-only): a running sum or count stays exact
            over any length only where it is exactly 1.

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
    exact_values: ClassVar[dict[str, tuple[float, ...]]] = {
        "kernel": (-1.0, 0.0, 1.0),
        "recurrent_kernel": (-1.0, 0.0, 1.0),
    }

    def __init__(
        self,
        units: int,
        kernel_initializer: InitializerLike = "keras_nalu>NAUUniform",
        recurrent_initializer: InitializerLike | None = "identity",
        kernel_regularizer: RegularizerLike | None = None,
        recurrent_regularizer: RegularizerLike | None = None,
        kernel_constraint: ConstraintLike | None = None,
        recurrent_constraint: ConstraintLike | None = None,
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
        self._set_weight_arguments(
            recurrent=(
                recurrent_initializer,
                recurrent_regularizer,
                recurrent_constraint,
            )
        )

    def build(self, input_shape):
        input_dim = validation.feature_dim(self, input_shape)
        shape = (input_dim + self.units, self.units)
        # One draw over the rows of [x_t, h_{t-1}] (see the class docstring).
        drawn = self.kernel_initializer(shape, dtype=self.variable_dtype)
        recurrent = (
            drawn[input_dim:]
            if self.recurrent_initializer is None
            else self.recurrent_initializer(
                (self.units, self.units), dtype=self.variable_dtype
            )
        )
        if self.diagonal_state:
            recurrent = ops.diagonal(recurrent)
        bounds = (self.low, self.high)
        self.kernel = self._add_weight_from_arguments(
            "kernel", (input_dim, self.units), bounds=bounds, initial=drawn[:input_dim]
        )
        self.recurrent_kernel = self._add_weight_from_arguments(
            "recurrent_kernel",
            tuple(recurrent.shape),
            arguments="recurrent",
            bounds=bounds,
            initial=recurrent,
        )
        self.input_spec = keras.InputSpec(min_ndim=2, axes={-1: input_dim})

    def load_own_variables(self, store: Any) -> None:
        if len(store.keys()) == 1:
            # Saved before the state weight was apart: one kernel whose last
            # `units` rows read h_{t-1} (masked to their diagonal under
            # `diagonal_state`).
            saved = np.asarray(store["0"])
            rows = saved.shape[0] - self.units
            state = saved[rows:]
            store = {
                "0": saved[:rows],
                "1": np.diagonal(state) if self.diagonal_state else state,
            }
        super().load_own_variables(store)

    def effective_weights(
        self, weights: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{"kernel": clip(kernel), "recurrent_kernel": clip(recurrent_kernel)}`,
        each clipped to `[-1, 1]`."""
        weights = self.unit_weights() if weights is None else weights
        return {
            name: nalu_ops.clip_weight(weights[name], self.low, self.high)
            for name in ("kernel", "recurrent_kernel")
        }

    @property
    def effective_recurrent_kernel(self) -> Any:
        """`clip(recurrent_kernel, -1, 1)` (read-only)."""
        validation.check_built(self, "effective_recurrent_kernel")
        return self.effective_weights()["recurrent_kernel"]

    @property
    def state_weights(self) -> Any:
        """The diagonal of `effective_recurrent_kernel` (read-only)."""
        return self._state_diagonal(lambda: self.effective_recurrent_kernel)

    def _unit_kernel(self, effective):
        """The matrix of the NAU over `[x_t, h_{t-1}]`: the input kernel over
        the state weights (a diagonal matrix under `diagonal_state`)."""
        state = effective["recurrent_kernel"]
        if self.diagonal_state:
            eye = ops.eye(self.units, dtype=state.dtype)
            state = ops.expand_dims(state, -2) * eye
        return ops.concatenate([effective["kernel"], state], axis=-2)

    def math(
        self, x: Tensor, weights: dict[str, Any], training: bool = False
    ) -> Tensor:
        kernel = self._unit_kernel(self.effective_weights(weights))
        return self._nau(x, kernel, training)

    def expression(self, h: list[Any], writer: Any, x: Any = None) -> list[Any]:
        kernel = self._unit_kernel(self.effective_weights())
        return writer.sums(writer.matrix(kernel), h)

    def get_config(self):
        return {
            **super().get_config(),
            "diagonal_state": self.diagonal_state,
            **self._weight_arguments_config("recurrent"),
        }
