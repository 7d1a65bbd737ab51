"""The arithmetic of NAC and NALU as pure functions of inputs and weights.

These functions are the one implementation of the units' math: the layers call
them with their own weights, and code that trains many models at once calls
them with stacked weights. Every function uses `keras.ops` only and broadcasts
over leading axes, so `x` of shape `(seeds, batch, in)` with `w` of shape
`(seeds, in, out)` evaluates one model per seed in a single call.

Example:

>>> import numpy as np
>>> from keras_nalu import ops as nalu_ops
>>> w = nalu_ops.nac_weight(np.full((2, 1), 20.0), np.full((2, 1), 20.0))
>>> x = np.array([[3.0, 4.0]])
>>> round(float(nalu_ops.nac(x, w)[0, 0]), 4)
7.0
>>> gate = np.full((2, 1), -20.0)  # closed gate: the multiplicative path
>>> round(float(nalu_ops.nalu(x, w, gate)[0, 0]), 4)
12.0
"""

from keras import ops

DEFAULT_EPSILON = 1e-7


def nac_weight(w_hat, m_hat):
    """The NAC transformation matrix `W = tanh(w_hat) * sigmoid(m_hat)`.

    The elements of `W` lie in `[-1, 1]` and saturate at -1, 0 and 1.
    """
    return ops.tanh(w_hat) * ops.sigmoid(m_hat)


def nac(x, w):
    """The neural accumulator `a = x @ W`: sums and differences of inputs."""
    return ops.matmul(x, w)


def log_magnitude(x, epsilon=DEFAULT_EPSILON):
    """`log(|x| + epsilon)`: the log space of the multiplicative path.

    `epsilon` keeps `log(0)` finite: a zero input maps to `log(epsilon)`.
    """
    return ops.log(ops.abs(x) + epsilon)


def nalu(x, w, gate_kernel, mul_w=None, epsilon=DEFAULT_EPSILON):
    """The neural arithmetic logic unit `y = g * a + (1 - g) * m`.

    With `a = x @ W`, `m = exp(log(|x| + epsilon) @ W_mul)` and
    `g = sigmoid(x @ G)`. `W_mul` is `mul_w` when given (separate weights),
    else `w` (the paper's tied weights).

    The multiplicative term is evaluated as
    `exp(log(|x| + epsilon) @ W_mul + log_sigmoid(-x @ G))`, which equals
    `(1 - g) * m` but never forms `0 * inf`: a closed gate over an overflowing
    product gives the additive output instead of NaN, and the output is `inf`
    only when the true value exceeds the largest float of the dtype.
    """
    gate_logits = ops.matmul(x, gate_kernel)
    log_product = ops.matmul(log_magnitude(x, epsilon), w if mul_w is None else mul_w)
    additive = ops.sigmoid(gate_logits) * nac(x, w)
    multiplicative = ops.exp(log_product + ops.log_sigmoid(-gate_logits))
    return additive + multiplicative
