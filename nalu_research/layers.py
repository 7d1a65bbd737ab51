"""The experiments' own layers, cells and activations.

Everything here is registered under the package name `nalu_research`, so a
saved experiment model reloads with `keras.saving.load_model` once
`nalu_research.layers` is imported. The arithmetic units themselves come from the
library, `keras_nalu`, but for the Feynman experiment's `ScaledPower`.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_nalu import ArithmeticUnit, validation
from keras_nalu import ops as nalu_ops
from keras_nalu.layers import NAC, ConfiguredNALU, NAUCell

_register = keras.saving.register_keras_serializable(package="nalu_research")


# Activations of the identity experiment (Figure 1, Table 5) that Keras lacks.
@_register
def threshold(x):
    """`x if x > 0.1 else 20`, PyTorch's `nn.Threshold(0.1, 20)`."""
    return ops.threshold(x, 0.1, 20.0)


@_register
def leaky_relu(x):
    """`x if x > 0 else 0.01 * x`, PyTorch's default `nn.LeakyReLU`."""
    return ops.leaky_relu(x, negative_slope=0.01)


@_register
def crelu(x):
    """`concat(relu(x), relu(-x))` on the last axis, which doubles it."""
    return ops.concatenate([ops.relu(x), ops.relu(-x)], axis=-1)


@_register
class CReLU(keras.layers.Layer):
    """`crelu` as a layer: the output's last axis is twice the input's."""

    def call(self, inputs):
        return crelu(inputs)

    def compute_output_shape(self, input_shape):
        last = None if input_shape[-1] is None else 2 * input_shape[-1]
        return (*input_shape[:-1], last)


@_register
class ImageSequenceEncoder(keras.layers.Layer):
    """Applies an image `encoder` to every image of a sequence of any length.

    `(batch, steps, h, w, c)` -> `(batch, steps, features)`, by folding the
    steps into the batch (unlike `keras.layers.TimeDistributed`, which
    unrolls a Python loop over a known number of steps).
    """

    def __init__(self, encoder, **kwargs):
        super().__init__(**kwargs)
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        self.encoder = encoder

    def build(self, input_shape):
        self.encoder.build((None,) + tuple(input_shape)[2:])

    def call(self, inputs, training=None):
        shape = ops.shape(inputs)
        flat = ops.reshape(inputs, (-1,) + tuple(inputs.shape[2:]))
        if training:
            features = self.encoder(flat, training=training)
        else:
            # One blank image more, dropped after: TensorFlow's convolution
            # fails on a batch of no images (an empty sequence, or an empty
            # batch), which a served model must answer. Not in training, where
            # it would enter batch statistics.
            blank = ops.zeros((1,) + tuple(inputs.shape[2:]), dtype=flat.dtype)
            features = self.encoder(ops.concatenate([flat, blank]), training=training)
            features = features[:-1]
        return ops.reshape(features, (shape[0], shape[1], features.shape[-1]))

    def compute_output_shape(self, input_shape):
        features = self.encoder.compute_output_shape((None,) + tuple(input_shape)[2:])
        return tuple(input_shape)[:2] + (features[-1],)

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder)}
        return {**super().get_config(), **config}


@_register
class SummedStates(keras.layers.Layer):
    """`[h, ids] -> cumsum_t(h_t)` over the tokens (padding, id 0, adds 0)."""

    def call(self, inputs):
        h, ids = inputs
        mask = ops.cast(ops.not_equal(ids, 0), h.dtype)
        return ops.cumsum(h * mask[..., None], axis=1)


@_register
class NextTokens(keras.layers.Layer):
    """`ids (batch, T) -> the id after each token (batch, T)`: `ids` moved one
    step left, with 0 (the padding, read as the end of the phrase) after the
    last column, so every token, the last one too, has a token after it.

    >>> import numpy as np
    >>> keras.ops.convert_to_numpy(NextTokens()(np.array([[5, 7, 0], [3, 4, 9]])))
    array([[7, 0, 0],
           [4, 9, 0]])
    """

    def call(self, ids):
        return ops.concatenate([ids[:, 1:], ops.zeros_like(ids[:, :1])], axis=1)


@_register
class LastToken(keras.layers.Layer):
    """`[per-step predictions (batch, T), ids] -> the last token's (batch,)`."""

    def call(self, inputs):
        steps, ids = inputs
        length = ops.sum(ops.cast(ops.not_equal(ids, 0), "int32"), axis=1)
        last = ops.maximum(length - 1, 0)
        return ops.take_along_axis(steps, last[:, None], axis=1)[:, 0]


@_register
class CheckedTokens(keras.layers.Layer):
    """Token ids -> what a served text model says about them, and bounded ids.

    For a batch of token ids `(batch, T)` as `keras.layers.TextVectorization`
    gives them (0 pads at the end, `oov_id` is an unknown word), returns a
    dict:

    - `tokens`: int32 `(batch,)`, the words of each phrase (ids not 0);
    - `unknown_tokens`: int32 `(batch,)`, its words equal to `oov_id`;
    - `valid`: bool `(batch,)`, `tokens >= 1`, `unknown_tokens == 0` and
      `tokens <= max_length`: a phrase a model of the language can read;
    - `ids`: the ids cut to their first `max_length` columns, then padded
      with one column of 0, `(batch, min(T, max_length) + 1)`.

    The cut bounds what a model pays for a phrase: a 500-word one costs no
    more than one of `max_length` words (it is invalid anyway). The padding
    column gives a model at least one step, so a batch of empty phrases
    (`T = 0`) still runs a recurrent layer; a causal model read at the last
    real token (`LastToken`) predicts the same as without it.

    Args:
        max_length: The most tokens a valid phrase has (a positive integer).
        oov_id: The id of an unknown word (an integer >= 1).

    Example:

    >>> import keras, numpy as np
    >>> from nalu_research.layers import CheckedTokens
    >>> ids = np.array([[5, 3, 4], [1, 1, 0], [0, 0, 0]], "int32")
    >>> checked = CheckedTokens(max_length=2)(ids)
    >>> for key in ("tokens", "unknown_tokens", "valid", "ids"):
    ...     print(key, keras.ops.convert_to_numpy(checked[key]).tolist())
    tokens [3, 2, 0]
    unknown_tokens [0, 2, 0]
    valid [False, False, False]
    ids [[5, 3, 0], [1, 1, 0], [0, 0, 0]]
    """

    def __init__(self, max_length, oov_id=1, **kwargs):
        super().__init__(**kwargs)
        self.max_length = validation.positive_int("max_length", max_length)
        self.oov_id = validation.positive_int("oov_id", oov_id)

    def call(self, inputs):
        ids = ops.cast(inputs, "int32")
        tokens = ops.sum(ops.cast(ops.not_equal(ids, 0), "int32"), axis=1)
        unknown = ops.sum(ops.cast(ops.equal(ids, self.oov_id), "int32"), axis=1)
        valid = ops.logical_and(
            ops.logical_and(tokens >= 1, tokens <= self.max_length),
            ops.equal(unknown, 0),
        )
        kept = ids[:, : self.max_length]
        pad = ops.zeros((ops.shape(ids)[0], 1), "int32")  # also when T is 0
        return {
            "ids": ops.concatenate([kept, pad], axis=1),
            "tokens": tokens,
            "unknown_tokens": unknown,
            "valid": valid,
        }

    def compute_output_spec(self, inputs):
        batch, steps = inputs.shape[0], inputs.shape[1]
        kept = None if steps is None else min(steps, self.max_length) + 1
        return {
            "ids": keras.KerasTensor((batch, kept), "int32"),
            "tokens": keras.KerasTensor((batch,), "int32"),
            "unknown_tokens": keras.KerasTensor((batch,), "int32"),
            "valid": keras.KerasTensor((batch,), "bool"),
        }

    def get_config(self):
        config = {"max_length": self.max_length, "oov_id": self.oov_id}
        return {**super().get_config(), **config}


@_register
class FirstUnit(keras.layers.Layer):
    """`(batch, units) -> (batch,)`: the first unit, the prediction."""

    def call(self, inputs):
        return inputs[:, 0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:1]


@_register
class LSTMConfiguredNALUCell(keras.layers.Layer):
    """RNN cell: an LSTM cell configures a `ConfiguredNALU` at every step.

    Input per step: `[value, one-hot token]`. States: the LSTM's `h`, `c` and
    the NALU's output `s`. `h_t = LSTM([token_t, tanh(s_{t-1})])`,
    `s_t = ConfiguredNALU([value_t, s_{t-1}], control=h_t)`; output `s_t`.
    """

    def __init__(self, units, control_units, tied_weights=True, **kwargs):
        super().__init__(**kwargs)
        self.units, self.control_units = units, control_units
        self.tied_weights = tied_weights
        self.controller = keras.layers.LSTMCell(control_units)
        self.nalu = ConfiguredNALU(units, tied_weights=tied_weights)
        self.state_size = [control_units, control_units, units]
        self.output_size = units

    def build(self, input_shape):
        tokens = input_shape[-1] - 1
        self.controller.build((None, tokens + self.units))
        self.nalu.build([(None, 1 + self.units), (None, self.control_units)])

    def call(self, inputs, states, training=False):
        h, c, s = states
        value, tokens = inputs[:, :1], inputs[:, 1:]
        control, (h, c) = self.controller(
            ops.concatenate([tokens, ops.tanh(s)], axis=-1), [h, c], training=training
        )
        s = self.nalu([ops.concatenate([value, s], axis=-1), control])
        return s, [h, c, s]

    def get_config(self):
        config = {
            "units": self.units,
            "control_units": self.control_units,
            "tied_weights": self.tied_weights,
        }
        return {**super().get_config(), **config}


@_register
class UGRNNCell(keras.layers.Layer):
    """Update-gate RNN (Collins et al., 2017):
    `c = tanh(W_c [x, h])`, `g = sigmoid(W_g [x, h])`, `h' = g * h + (1 - g) * c`.
    """

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units
        self.output_size = units

    def build(self, input_shape):
        rows = input_shape[-1] + self.units
        self.kernel = self.add_weight(
            name="kernel", shape=(rows, 2 * self.units), initializer="glorot_uniform"
        )
        self.bias = self.add_weight(
            name="bias", shape=(2 * self.units,), initializer="zeros"
        )

    def call(self, inputs, states, training=False):
        h = states[0] if isinstance(states, (list, tuple)) else states
        z = ops.matmul(ops.concatenate([inputs, h], axis=-1), self.kernel) + self.bias
        candidate = ops.tanh(z[:, : self.units])
        gate = ops.sigmoid(z[:, self.units :] + 1.0)  # biased to keep the state
        h = gate * h + (1.0 - gate) * candidate
        return h, [h]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@_register
class InstructedLSTMCell(keras.layers.Layer):
    """RNN cell: an LSTM core told an instruction, optionally through a NAC
    or beside an exact counter.

    Input per step: `[features, instruction]` (the instruction last). States:
    the LSTM's `h`, `c` and, with `nac_units` or `counter_units`, the unit's
    output `s`. With `nac_units`, `s_t = NAC([instruction_t, s_{t-1},
    h_{t-1}])`; with `counter_units`, `s_t = s_{t-1} * w_s + [1,
    instruction_t, h_{t-1}] @ W`, a diagonal `keras_nalu.NAUCell` whose
    weights are clipped to [-1, 1] and whose state weights `w_s` start at
    exactly 1 (the identity); then `h_t = LSTM([features_t, instruction_t,
    s_t])`; output `h_t`. With neither it is the LSTM alone on `[features,
    instruction]`.

    The NAC reads its own previous output and the LSTM's, so that it can
    count: `s_t = s_{t-1} + h` (a saturated unit `h` of 1) and
    `instruction - s_{t-1} - h`, the time left, are in its reach (weights of
    -1, 0 and 1), and hold for instructions past those seen in training; but
    the NAC's `tanh * sigmoid` weights only approach 1. The counter's state
    weights are 1 from the start and its constant input's weight can reach
    exactly 1: `s_t = t`, exact for any length.
    """

    def __init__(self, units, nac_units=0, counter_units=0, **kwargs):
        super().__init__(**kwargs)
        self.units = validation.positive_int("units", units)
        self.nac_units = validation.non_negative_int("nac_units", nac_units)
        self.counter_units = validation.non_negative_int("counter_units", counter_units)
        if nac_units and counter_units:
            raise ValueError(
                "Received both `nac_units` and `counter_units`, expected at most "
                f"one of them > 0. Received: nac_units={nac_units}, "
                f"counter_units={counter_units}"
            )
        self.core = keras.layers.LSTMCell(units)
        self.nac = NAC(nac_units) if nac_units else None
        self.counter = (
            NAUCell(counter_units, diagonal_state=True) if counter_units else None
        )
        extra = nac_units or counter_units
        self.state_size = [units, units] + ([extra] if extra else [])
        self.output_size = units

    def build(self, input_shape):
        extra = self.nac_units or self.counter_units
        self.core.build((None, input_shape[-1] + extra))
        if self.nac is not None:
            self.nac.build((None, 1 + self.nac_units + self.units))
        if self.counter is not None:
            self.counter.build((None, 2 + self.units))

    def call(self, inputs, states, training=False):
        h, c = states[0], states[1]
        if self.nac is None and self.counter is None:
            h, (h, c) = self.core(inputs, [h, c], training=training)
            return h, [h, c]
        instruction = inputs[:, -1:]
        if self.nac is not None:
            s = self.nac(ops.concatenate([instruction, states[2], h], axis=-1))
        else:
            one = ops.ones_like(instruction)
            read = ops.concatenate([one, instruction, h], axis=-1)
            s, _ = self.counter(read, [states[2]], training=training)
        x = ops.concatenate([inputs, s], axis=-1)
        h, (h, c) = self.core(x, [h, c], training=training)
        return h, [h, c, s]

    def get_config(self):
        config = {
            "units": self.units,
            "nac_units": self.nac_units,
            "counter_units": self.counter_units,
        }
        return {**super().get_config(), **config}


@_register
class ScaledPower(ArithmeticUnit):
    """A power unit with a constant: `y_j = s_j * prod_i h_i^W_ij`.

    The magnitude is `|s_j| exp(sum_i W_ij log|h_i|)` and the sign that of
    `s_j` times `cos(pi sum_i W_ij [h_i < 0])` (the `RealNPU`'s: the real
    power of a negative input where the exponent is an integer). The
    exponents `W` are any real numbers and snap to halves (square roots);
    the constant `s` (`scale`) does not snap: it is a number to read.

    Args:
        units: Positive integer, dimensionality of the output space.
        kernel_initializer: Initializer for `kernel`, the exponents.
        scale_initializer: Initializer for `scale`, the constants.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Example:

    >>> import numpy as np, keras
    >>> layer = ScaledPower(1, kernel_initializer=keras.initializers.Constant(
    ...     [[1.0], [-2.0]]), scale_initializer=keras.initializers.Constant(0.5))
    >>> keras.ops.convert_to_numpy(layer(np.array([[6.0, 2.0]]))).round(6).tolist()
    [[0.75]]
    """

    exact_values = {"kernel": tuple(v / 2 for v in range(-12, 13))}

    def __init__(
        self, units, kernel_initializer="zeros", scale_initializer="ones", **kwargs
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int) or isinstance(units, bool) or units < 1:
            raise ValueError(
                "Received an invalid value for `units`, expected a positive "
                f"integer. Received: units={units!r}"
            )
        self.units = units
        self._set_weight_arguments(
            kernel=(kernel_initializer, None, None),
            scale=(scale_initializer, None, None),
        )

    def build(self, input_shape):
        size = input_shape[-1]
        if size is None:
            raise ValueError(
                f"The last axis of the input of {self.name!r} must be known. "
                f"Received: input_shape={input_shape}"
            )
        self.kernel = self._add_weight_from_arguments("kernel", (size, self.units))
        self.scale = self._add_weight_from_arguments("scale", (self.units,))

    def effective_weights(self, weights=None):
        weights = self.unit_weights() if weights is None else weights
        return {"kernel": weights["kernel"], "scale": weights["scale"]}

    def math(self, x, weights, training=False):
        w, s = weights["kernel"], weights["scale"]
        tiny = np.finfo(keras.backend.standardize_dtype(x.dtype)).tiny
        log_h = ops.log(ops.maximum(ops.abs(x), tiny))
        negative = ops.cast(x < 0, x.dtype)
        sign = ops.cos(np.pi * nalu_ops.matmul(negative, w))
        return ops.expand_dims(s, -2) * ops.exp(nalu_ops.matmul(log_h, w)) * sign

    def expression(self, h, writer, x=None):
        """`s_j * prod_i h_i**W_ij`: exponents within `atol` of a half as
        that half, `s_j` as a float of full precision (or an integer)."""
        sympy = writer.sympy
        w = keras.ops.convert_to_numpy(self.kernel).astype("float64")
        s = keras.ops.convert_to_numpy(self.scale).astype("float64")
        out = []
        for j in range(self.units):
            exact = math.isfinite(s[j]) and abs(s[j]) < 2**53 and s[j] == round(s[j])
            factors = [sympy.Integer(int(s[j])) if exact else sympy.Float(s[j], 15)]
            for i, hi in enumerate(h):
                halves = round(2 * w[i, j])
                exponent = (
                    sympy.Rational(halves, 2)
                    if abs(2 * w[i, j] - halves) <= 2 * writer.atol
                    else sympy.Float(w[i, j], 4)
                )
                if exponent != 0:
                    factors.append(hi**exponent)
            out.append(sympy.Mul(*factors))
        return out

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.units,)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "scale_initializer": keras.initializers.serialize(self.scale_initializer),
        }
