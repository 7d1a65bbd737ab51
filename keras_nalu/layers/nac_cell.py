from typing import Any

import keras

from keras_nalu.layers._recurrent import RecurrentCellMixin
from keras_nalu.layers.nac import NAC


@keras.saving.register_keras_serializable(package="keras_nalu")
class NACCell(RecurrentCellMixin, NAC):  # type: ignore[misc]  # the cell's call(inputs, states)
    """Recurrent NAC cell for `keras.layers.RNN`: `h_t = NAC([x_t, h_{t-1}])`.

    `h_t = [x_t, h_{t-1}] @ W` with `W = tanh(w_hat) * sigmoid(m_hat)`, the
    output is `h_t` and the initial state is zeros. With `W = 1` on an input
    and on the state, the cell keeps a running sum over any length, exact as
    long as the sums are exact in float32 (integers below 2^24). Trained,
    its weights approach 1 without reaching it, and the shortfall compounds
    over the steps: `keras_nalu.NAUCell`, whose clipped weights reach 1, is
    the cell for running sums and counts (measured: 24% off at ten times the
    training length against the NAUCell's 1e-7; docs: "Which recurrent
    cell?").

    The cell takes the arguments of `keras_nalu.NAC`: `units`, then the
    initializers, regularizers and constraints of `w_hat` and `m_hat`.

    Args:
        units: Positive integer, dimensionality of the output and state.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A 2D tensor `(batch_size, input_dim)`, the step's input `x_t`.
        states: A list with one tensor `(batch_size, units)`, `h_{t-1}`.
        training: Unused; accepted for the RNN cell contract.

    Attributes:
        w_hat: Trainable weight of shape `(input_dim + units, units)`; the
            first `input_dim` rows read `x_t`, the rest read `h_{t-1}`.
        m_hat: Trainable weight of the same shape and layout.
        effective_kernel: The matrix `W` the cell applies (read-only).
        state_weights: The weight `W[input_dim + j, j]` with which unit `j`
            carries its own state to the next step, shape `(units,)`
            (read-only): a running sum stays exact over any length only
            where it is exactly 1.

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NACCell
    >>> rnn = keras.layers.RNN(NACCell(2), return_sequences=True)
    >>> tuple(rnn(np.ones((3, 10, 4))).shape)
    (3, 10, 2)

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units",
        https://arxiv.org/abs/1808.00508
    """

    @property
    def state_weights(self) -> Any:
        """The diagonal of the rows of `effective_kernel` that read `h_{t-1}`
        (read-only)."""
        return self._state_diagonal(lambda: self.effective_kernel[-self.units :])
