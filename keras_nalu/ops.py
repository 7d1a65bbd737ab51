"""The arithmetic of the units as pure functions of inputs and weights.

NAC and NALU (Trask et al., 2018), NAU and NMU (Madsen & Johansen, 2020), iNALU
(Schlör et al., 2020), the real NPU (Heim et al., 2020) and NMRU (Mistry et
al., 2021). These functions are the
one implementation of the units' math: the layers call
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

import keras
import numpy as np
from keras import ops

from keras_nalu._types import ArrayLike, Tensor

DEFAULT_EPSILON = 1e-7
# exp(88) = 1.65e38 is below float32's largest value, 3.4e38.
FLOAT32_MAX_EXPONENT = 88.0


def matmul(x: ArrayLike, w: ArrayLike) -> Tensor:
    """`x @ w` at the full precision of the dtype, where the backend lets a
    program choose: every matrix product of the units goes through it.

    On NVIDIA GPUs since Ampere, JAX computes a float32 product in
    TensorFloat-32 by default (inputs rounded to 10 bits of mantissa), which
    turns an exact sum or an exact log-space product into one off by about
    1e-3: here JAX is asked for its highest precision, on that product only
    (a no-op on CPUs). PyTorch computes float32 products in full precision
    unless `torch.set_float32_matmul_precision("high")` was called;
    TensorFlow uses TensorFloat-32 on such GPUs unless
    `tf.config.experimental.enable_tensor_float_32_execution(False)` was
    called: neither can be set per product, so the docs' GPU page says to set
    them.

    Keras's torch `matmul` computes float64 products in float32; in float64
    this one computes them with `einsum`, which keeps float64.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        with jax.default_matmul_precision("highest"):
            return ops.matmul(x, w)
    if backend == "torch" and "float64" in (_dtype(x), _dtype(w)):
        x, w = ops.cast(x, "float64"), ops.cast(w, "float64")
        spec = "...bi,...ij->...bj" if len(x.shape) > 1 else "i,...ij->...j"
        return ops.einsum(spec, x, w)
    return ops.matmul(x, w)


def _dtype(x):
    """The dtype of `x` as Keras names it (`floatx` for a nested list)."""
    return keras.backend.standardize_dtype(getattr(x, "dtype", None))


def nac_weight(w_hat: ArrayLike, m_hat: ArrayLike) -> Tensor:
    """The NAC transformation matrix `W = tanh(w_hat) * sigmoid(m_hat)`.

    The elements of `W` lie in `[-1, 1]` and saturate at -1, 0 and 1.
    """
    return ops.tanh(w_hat) * ops.sigmoid(m_hat)


def nac(x: ArrayLike, w: ArrayLike) -> Tensor:
    """The neural accumulator `a = x @ W`: sums and differences of inputs."""
    return matmul(x, w)


def log_magnitude(x: ArrayLike, epsilon: float = DEFAULT_EPSILON) -> Tensor:
    """`log(|x| + epsilon)`: the log space of the multiplicative path.

    `epsilon` keeps `log(0)` finite: a zero input maps to `log(epsilon)`.
    """
    return ops.log(ops.abs(x) + epsilon)


def nalu(
    x: ArrayLike,
    w: ArrayLike,
    gate_kernel: ArrayLike,
    mul_w: ArrayLike | None = None,
    epsilon: float = DEFAULT_EPSILON,
) -> Tensor:
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
    gate_logits = matmul(x, gate_kernel)
    log_product = matmul(log_magnitude(x, epsilon), w if mul_w is None else mul_w)
    additive = ops.sigmoid(gate_logits) * nac(x, w)
    multiplicative = ops.exp(log_product + ops.log_sigmoid(-gate_logits))
    return additive + multiplicative


def clip_weight(w: ArrayLike, low: float, high: float) -> Tensor:
    """`clip(w, low, high)` whose gradient is 1 on `[low, high]`, bounds
    included, and 0 outside: `torch.clamp`'s, as in Madsen & Johansen's code,
    on every backend. (`jax.numpy.clip` passes half the gradient at a bound,
    TensorFlow and torch all of it; a weight sitting on its bound then trains
    differently on JAX.)"""
    w = ops.convert_to_tensor(w)
    inside = ops.logical_and(w >= low, w <= high)
    return ops.where(inside, w, ops.clip(w, low, high))


def ramp(step: ArrayLike, start: int, end: int) -> Tensor:
    """`clip((step - start) / (end - start), 0, 1)`: 0 before `start`, 1 from `end`.

    The schedule of the sparsity regularizers (Madsen & Johansen, 2020). With
    `end == start` it is a step from 0 to 1 at `start`.
    """
    step = ops.cast(step, "float32")
    if end == start:
        return ops.cast(step >= start, "float32")
    return ops.clip((step - start) / float(end - start), 0.0, 1.0)


def nau(x: ArrayLike, w: ArrayLike, center: ArrayLike | None = None) -> Tensor:
    """The neural addition unit `x @ clip(W, -1, 1)` (Madsen & Johansen, 2020).

    With `center` (a tensor broadcastable to `x`, typically the batch mean of
    `x`), the output is the same but the gradient of `W` is taken of the
    centered inputs: `(x - c) @ W + stop_gradient(c @ W)`, `c` itself
    stop-gradient. The gradient of `x` is unchanged.
    """
    w = clip_weight(w, -1.0, 1.0)
    if center is None:
        return matmul(x, w)
    x = ops.convert_to_tensor(x)
    center = ops.stop_gradient(ops.broadcast_to(center, ops.shape(x)))
    return matmul(x - center, w) + ops.stop_gradient(matmul(center, w))


def _gated_product(x, w):
    """`prod_i (x_i * W_ij + (1 - W_ij))` over the input axis, broadcast like matmul.

    `1 - W` is formed first: with `W = 1` the factor is `x_i` exactly, where
    `(x_i + 1) - 1` would lose the digits of a small `x_i` (a reciprocal
    `1 / 500` kept 4 of float32's 7).
    """
    x = ops.convert_to_tensor(x)
    w = w[..., None, :, :]  # (..., 1, in, out) against x (..., batch, in, 1)
    factors = x[..., :, None] * w + (1.0 - w)
    # The dtype given: Keras's torch `prod` returns float64 as float32.
    dtype = keras.backend.standardize_dtype(factors.dtype)
    return ops.prod(factors, axis=-2, dtype=dtype)


def nmu(x: ArrayLike, w: ArrayLike) -> Tensor:
    """The neural multiplication unit `y_j = prod_i (W_ij x_i + 1 - W_ij)`.

    `W` is clipped to `[0, 1]`: `W_ij = 1` multiplies `x_i` in, `W_ij = 0`
    leaves it out (a factor 1). Exact for zero and negative inputs, since no
    logarithm is taken (Madsen & Johansen, 2020).
    """
    return _gated_product(x, clip_weight(w, 0.0, 1.0))


def sparsity_penalty(w: ArrayLike) -> Tensor:
    """`mean(min(|W|, 1 - |W|))` over the last two axes: 0 when `W` is in {-1, 0, 1}.

    The sparsity regularizer of NAU and NMU (Madsen & Johansen, 2020), of a
    weight already clipped to `[-1, 1]`. At -1, 0 and 1 its gradient is 0 on
    every backend, as in their code (`abs` has gradient 0 at 0 in PyTorch), so
    a weight clipped at a bound feels no push from the penalty beyond it,
    which Adam's moments would otherwise keep.
    """
    w = ops.abs(w)
    inside = ops.logical_and(w > 0.0, w < 1.0)
    distance = ops.where(inside, ops.minimum(w, 1.0 - w), 0.0)
    return ops.mean(distance, axis=(-2, -1))


def sign_product(x: ArrayLike, w: ArrayLike) -> Tensor:
    """`prod_i (sign(x_i) * |W_ij| + 1 - |W_ij|)`: the sign of the product.

    iNALU's sign recovery (Schlör et al., 2020): for `|W|` in {0, 1}, the sign of
    `prod_i x_i^W_ij`, which `exp(log|x| @ W)` loses.
    """
    return _gated_product(ops.sign(x), ops.abs(w))


def inalu(
    x: ArrayLike,
    w: ArrayLike,
    mul_w: ArrayLike,
    gate_logits: ArrayLike,
    epsilon: float = DEFAULT_EPSILON,
    max_exponent: float = 20.0,
) -> Tensor:
    """The improved NALU `y = g * a + (1 - g) * m * s` (Schlör et al., 2020).

    With `a = x @ W`, `m = exp(min(log(|x| + epsilon) @ W_mul, max_exponent))`,
    the sign `s = sign_product(x, W_mul)` and an input-independent gate
    `g = sigmoid(gate_logits)`, broadcast against the output. The clipped
    exponent bounds `m` by `exp(max_exponent)`, so the output never overflows.
    """
    log_product = ops.minimum(matmul(log_magnitude(x, epsilon), mul_w), max_exponent)
    gate = ops.sigmoid(gate_logits)
    multiplicative = ops.exp(log_product) * sign_product(x, mul_w)
    return gate * nac(x, w) + (1.0 - gate) * multiplicative


def inalu_penalty(w_hat: ArrayLike, threshold: float = 20.0) -> Tensor:
    """`mean(max(min(-w, w) + t, 0) / t)`: iNALU's regularizer of a latent weight.

    Zero when `|w_hat| >= t`, where `tanh` and `sigmoid` saturate and the
    weight is exactly -1, 0 or 1 (Schlör et al., 2020). Reduces the last two
    axes.
    """
    penalty = ops.maximum(ops.minimum(-w_hat, w_hat) + threshold, 0.0) / threshold
    return ops.mean(penalty, axis=(-2, -1))


def reciprocal(x: ArrayLike, epsilon: float = DEFAULT_EPSILON) -> Tensor:
    """`1 / x` with `|x|` raised to at least `epsilon` (the sign of 0 taken as +),
    in the dtype of `x`."""
    x = ops.convert_to_tensor(x)
    one = ops.ones_like(x)
    sign = ops.where(x < 0, -one, one)
    return sign / ops.maximum(ops.abs(x), ops.cast(epsilon, x.dtype))


def _finite(x):
    """`x` with `+-inf` replaced by the largest finite number of its dtype
    (finite values, NaN and integers unchanged)."""
    dtype = keras.backend.standardize_dtype(x.dtype)
    if "float" not in dtype:
        return x
    import ml_dtypes  # a dependency of Keras 3; its `finfo` knows bfloat16

    largest = ops.full_like(x, float(ml_dtypes.finfo(dtype).max))
    return ops.where(ops.isinf(x), ops.where(x > 0, largest, -largest), x)


def nmru(
    x: ArrayLike,
    w: ArrayLike,
    epsilon: float = DEFAULT_EPSILON,
    sign_retrieval: bool = False,
) -> Tensor:
    """The neural multiplicative reciprocal unit: an NMU over `[x, 1 / x]`.

    `y_j = prod_i (W_ij z_i + 1 - W_ij)` with `z = concat(x, 1 / x)` and `W`
    of shape `(..., 2 * in, out)` clipped to `[0, 1]`: a weight 1 on `1 / x_i`
    divides by `x_i` (Mistry et al., 2021). `epsilon` bounds `|1 / x|`.

    With `sign_retrieval`, Mistry et al.'s published form: the product of the
    magnitudes, `prod_i (W_ij |z_i| + 1 - W_ij)`, times the sign
    `cos(pi * sum_i W_ij [z_i < 0])`. Both forms agree where `W` is 0 or 1;
    in between, a factor of a negative input no longer crosses 0 on its way
    from 0 to 1 (at `W = 1 / (1 - z)`), which stalls training on negative
    inputs.

    An infinite `x_i` appears twice in `z`: as itself, taken as the largest
    finite number of the dtype (`+-3.4e38` in float32), and as `1 / x_i = 0`.
    Dividing by it reads `1 / x_i` and leaves `x_i` out (`W = 0`), which
    would be `0 * inf`, NaN: so `3 / inf` is 0, not NaN. Finite inputs are
    unchanged; a product past the dtype's range is `inf`, as for finite
    inputs.
    """
    x = ops.convert_to_tensor(x)
    z = ops.concatenate([_finite(x), reciprocal(x, epsilon)], axis=-1)
    if not sign_retrieval:
        return nmu(z, w)
    w = clip_weight(w, 0.0, 1.0)
    sign = ops.cos(np.pi * matmul(ops.cast(z < 0, z.dtype), w))
    return _gated_product(ops.abs(z), w) * sign


def real_npu(
    x: ArrayLike,
    w: ArrayLike,
    gate: ArrayLike | None = None,
    epsilon: float = DEFAULT_EPSILON,
    max_exponent: float = FLOAT32_MAX_EXPONENT,
) -> Tensor:
    """The real NPU `y_j = exp(sum_i W_ij log r_i) * cos(pi * sum_i W_ij k_i)`.

    Heim et al. (2020)'s RealNPU with its exponents `W` clipped to `[-1, 1]`:
    `r = g |x| + 1 - g` and `k = g [x < 0]`, with the relevance gate `g`
    (shape `(..., in)`, clipped to `[0, 1]`) or, when `gate` is None, every
    gate open (`r = |x|`, `k = [x < 0]`). Where `W` is -1, 0 or 1 (and `g` 0
    or 1), `y_j = prod_i x_i^W_ij` exactly, the sign included: it multiplies
    and divides. `r` is raised to at least `epsilon` before its logarithm
    (so a zero input gives `epsilon^W`, not `log(0)`, and every `|x| >=
    epsilon` is taken exactly), and the exponent is capped at
    `max_exponent`, so the output stays finite.
    """
    x = ops.convert_to_tensor(x)
    w = clip_weight(w, -1.0, 1.0)
    magnitude = ops.abs(x)
    negative = ops.cast(x < 0, x.dtype)
    if gate is not None:
        gate = ops.expand_dims(clip_weight(gate, 0.0, 1.0), -2)  # against the batch
        magnitude = gate * magnitude + (1.0 - gate)
        negative = gate * negative
    log_product = matmul(ops.log(ops.maximum(magnitude, epsilon)), w)
    sign = ops.cos(np.pi * matmul(negative, w))
    return ops.exp(ops.minimum(log_product, max_exponent)) * sign


def real_npu_penalty(w: ArrayLike, gate: ArrayLike | None = None) -> Tensor:
    """The real NPU's sparsity penalty: `sparsity_penalty(W)` plus, with a
    gate (shape `(..., in)`, clipped to `[0, 1]`), `mean(min(g, 1 - g))`.
    Zero when every exponent is -1, 0 or 1 and every gate 0 or 1."""
    penalty = sparsity_penalty(w)
    if gate is None:
        return penalty
    gate = clip_weight(gate, 0.0, 1.0)
    return penalty + sparsity_penalty(ops.expand_dims(gate, -1))
