import keras

from keras_nalu.layers._recurrent import RecurrentCellMixin
from keras_nalu.layers.nalu import NALU


@keras.saving.register_keras_serializable(package="keras_nalu")
class NALUCell(RecurrentCellMixin, NALU):  # type: ignore[misc]  # the cell's call(inputs, states)
    """Recurrent NALU cell for `keras.layers.RNN`: `h_t = NALU([x_t, h_{t-1}])`.

    The NALU of `keras_nalu.NALU` applied to the concatenation of the step's
    input and the previous state; the output is `h_t` and the initial state
    is zeros. Like `NALU`, it computes in float32 under a 16-bit policy;
    `keras.layers.RNN` casts its output to its own compute dtype, so under
    `"mixed_float16"` wrap the cell as `keras.layers.RNN(cell, dtype="float32")`
    to return float32 as well.

    For a plain running sum or count use `keras_nalu.NAUCell`: as
    `keras.layers.RNN(NALUCell(1))` this cell learned neither on any of 10
    seeds, where the `NAUCell` was exact at ten times the training length
    on all 10; and no cell, this one included, holds a running product from
    its zero initial state (docs: "Which recurrent cell?").

    The cell takes the arguments of `keras_nalu.NALU`: `units`, `epsilon`,
    `tied_weights`, then the initializers, regularizers and constraints of
    its weights.

    Args:
        units: Positive integer, dimensionality of the output and state.
        epsilon: Positive float added to `|x|` before the logarithm.
        tied_weights: Whether the additive and multiplicative paths share `W`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A 2D tensor `(batch_size, input_dim)`, the step's input `x_t`.
        states: A list with one tensor `(batch_size, units)`, `h_{t-1}`.
        training: Unused; accepted for the RNN cell contract.

    Attributes:
        w_hat: Trainable weight of shape `(input_dim + units, units)`; the
            first `input_dim` rows read `x_t`, the rest read `h_{t-1}`.
        m_hat: Trainable weight of the same shape and layout.
        gate_kernel: Trainable weight of the same shape and layout.
        mul_w_hat: As `w_hat`, only with `tied_weights=False`.
        mul_m_hat: As `m_hat`, only with `tied_weights=False`.

    Example:

    >>> import numpy as np
    >>> import keras
    >>> from keras_nalu import NALUCell
    >>> rnn = keras.layers.RNN(NALUCell(2))
    >>> tuple(rnn(np.ones((3, 10, 4))).shape)
    (3, 2)

    Reference:
        Trask et al., 2018, "Neural Arithmetic Logic Units",
        https://arxiv.org/abs/1808.00508
    """
