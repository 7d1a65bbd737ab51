"""What turns a NAC-family layer into a Keras RNN cell."""

import keras
from keras import ops

from keras_nalu import validation


class RecurrentCellMixin:
    """`h_t = Unit([x_t, h_{t-1}])`: the unit applied to the input and state.

    Mixed in before a NAC-family layer, whose weights then have shape
    `(input_dim + units, units)`: the first `input_dim` rows read `x_t`, the
    last `units` rows read `h_{t-1}`. The output is `h_t`; the initial state
    is zeros. Follows Keras's RNN cell contract (`state_size`, `output_size`,
    `call(inputs, states, training)`, `get_initial_state(batch_size)`).
    """

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        input_dim = validation.feature_dim(self, input_shape)
        super().build(tuple(input_shape)[:-1] + (input_dim + self.units,))
        self.input_spec = keras.InputSpec(min_ndim=2, axes={-1: input_dim})

    def call(self, inputs, states, training=False):
        previous = states[0] if isinstance(states, (list, tuple)) else states
        inputs = ops.cast(inputs, self.compute_dtype)  # integer inputs come here
        output = self._step(ops.concatenate([inputs, previous], axis=-1), training)
        return output, [output]

    def _step(self, inputs, training):
        """The unit on `[x_t, h_{t-1}]`; it runs inside the RNN's loop (a
        `tf.while_loop`, a `lax.scan`), so it must not change variables or
        add losses."""
        return self.math(inputs, self.unit_weights(), training)

    def _state_diagonal(self, state_rows):
        """`state_weights` from `state_rows()`: the `(units, units)` rows of
        the unit's matrix that read `h_{t-1}`, or their diagonal `(units,)`."""
        validation.check_built(self, "state_weights")
        rows = state_rows()
        return rows if len(rows.shape) == 1 else ops.diagonal(rows)

    def get_initial_state(self, batch_size=None):
        return [ops.zeros((batch_size, self.units), dtype=self.compute_dtype)]

    def compute_output_shape(self, inputs_shape, states_shape=None):
        output_shape = tuple(inputs_shape)[:-1] + (self.units,)
        return output_shape, [output_shape]
