"""Regularizers for the weights of arithmetic units.

Example:

>>> import numpy as np
>>> from keras_nalu.regularizers import Sparsity
>>> w = np.array([[1.0, 0.0], [0.5, -0.25]])
>>> round(float(Sparsity(0.1)(w)), 6)  # 0.1 * mean(0, 0, 0.5, 0.25)
0.01875
"""

import keras
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import validation


@keras.saving.register_keras_serializable(package="keras_nalu")
class Sparsity(keras.regularizers.Regularizer):
    """`strength * mean(min(|W|, 1 - |W|))` of `W` clipped to `[-1, 1]`.

    The mean is over every element, whatever the weight's shape (a vector
    such as a diagonal `NAUCell`'s `recurrent_kernel` too).

    The sparsity penalty of the NAU and the NMU (Madsen & Johansen, 2020),
    `keras_nalu.ops.sparsity_penalty`, as a Keras weight regularizer of
    constant weight: 0 when every weight is -1, 0 or 1, so it pulls a
    weight to the nearest of them. The layers `NAU`, `NMU` and `NMRU` add
    the same penalty on a schedule of their own; a recurrent cell
    (`keras_nalu.NAUCell`) cannot count steps inside the RNN's loop and
    takes it as `kernel_regularizer=Sparsity(...)`, which Keras evaluates
    once per batch, outside the loop.

    Args:
        strength: Float >= 0, the penalty's weight.
    """

    def __init__(self, strength: float = 0.01) -> None:
        self.strength = validation.non_negative_float("strength", strength)

    def __call__(self, x):
        w = ops.reshape(nalu_ops.clip_weight(x, -1.0, 1.0), (1, -1))
        return self.strength * ops.cast(nalu_ops.sparsity_penalty(w), "float32")

    def get_config(self):
        return {"strength": self.strength}
