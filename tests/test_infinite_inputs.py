"""The units on infinite inputs: the NPU finite where the RealNPU is (the
same outputs when `W_im = 0`), the NMRU's `3 / inf` 0, finite inputs
unchanged to the bit; and, as in `keras.layers.Dense`, a zero weight on an
infinite input gives NaN (docs/numerics.md, "Infinite inputs")."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_nalu import NAC, NALU, NAU, NMRU, NMU, NPU, RealNPU
from keras_nalu import ops as nalu_ops

pytestmark = pytest.mark.backends

to_np = keras.ops.convert_to_numpy
constant = keras.initializers.Constant
RNG = np.random.default_rng(0)
INF = np.inf
# Inputs of every sign with an infinite one, and both infinite.
X = np.array(
    [[3.0, INF], [3.0, -INF], [INF, 2.0], [-INF, 2.0], [INF, INF], [-2.0, -INF]],
    "float32",
)
# Each product's exponents, and the rows of X where it is NaN (for the
# RealNPU and the NPU alike): `inf - inf` in a ratio of two infinite inputs,
# `0 * inf` for a zero exponent on an infinite input.
EXPONENTS = {
    "x0 * x1": ([[1.0], [1.0]], []),
    "x0 / x1": ([[1.0], [-1.0]], [4]),
    "x1 / x0": ([[-1.0], [1.0]], [4]),
    "sqrt(x0 * x1)": ([[0.5], [0.5]], []),
    "x0": ([[1.0], [0.0]], [0, 1, 4, 5]),
}


def npu(real, imaginary, gate=None, cls=NPU):
    real = np.asarray(real, "float32")
    options = {"kernel_initializer": constant(real)}
    if cls is NPU:
        options["imaginary_initializer"] = constant(imaginary)
    if gate is not None:
        options["gate_initializer"] = constant(gate)
    layer = cls(real.shape[1], gated=gate is not None, **options)
    layer.build((None, real.shape[0]))
    return layer


@pytest.mark.parametrize("gate", [None, [1.0, 1.0]], ids=["ungated", "open-gate"])
@pytest.mark.parametrize("name", EXPONENTS)
def test_the_npu_without_imaginary_part_is_the_real_npu_on_infinite_inputs(name, gate):
    real, nan_rows = EXPONENTS[name]
    want = to_np(npu(real, None, gate, cls=RealNPU)(X))
    got = to_np(npu(real, np.zeros_like(real), gate)(X))
    np.testing.assert_array_equal(got, want)  # NaN where the RealNPU's is
    assert np.nonzero(np.isnan(got[:, 0]))[0].tolist() == nan_rows
    finite = np.delete(got, nan_rows, axis=0)
    assert np.all(np.isfinite(finite))
    assert np.max(np.abs(finite)) == pytest.approx(np.exp(88.0), rel=1e-6)


@pytest.mark.parametrize("name", EXPONENTS)
def test_the_npu_is_finite_where_the_real_npu_is_with_an_imaginary_part(name):
    real, _ = EXPONENTS[name]
    finite = np.isfinite(to_np(npu(real, None, cls=RealNPU)(X)))
    got = to_np(npu(real, np.full_like(real, 0.3))(X))
    assert np.all(np.isfinite(got[finite]))


def previous_npu(layer, x):
    """The NPU's math before infinite inputs were handled: its phase read
    `log r` itself."""
    w = layer.effective_weights(layer.unit_weights())
    real, imaginary, gate = w["kernel"], w["imaginary_kernel"], w.get("gate")
    magnitude, negative = ops.abs(x), ops.cast(x < 0, x.dtype)
    if gate is not None:
        gate = ops.expand_dims(gate, -2)
        magnitude, negative = gate * magnitude + (1.0 - gate), gate * negative
    log_r = ops.log(ops.maximum(magnitude, layer.epsilon))
    angle = np.pi * negative
    log_magnitude = nalu_ops.matmul(log_r, real) - nalu_ops.matmul(angle, imaginary)
    phase = nalu_ops.matmul(log_r, imaginary) + nalu_ops.matmul(angle, real)
    return ops.exp(ops.minimum(log_magnitude, layer.max_exponent)) * ops.cos(phase)


@pytest.mark.parametrize("gated", [False, True])
def test_finite_inputs_give_the_npu_the_same_bits_as_before(gated):
    x = RNG.uniform(-5, 5, (64, 4)).astype("float32")
    x[::7, 1] = 0.0
    real = RNG.uniform(-1, 1, (4, 3)).astype("float32")
    imaginary = RNG.uniform(-0.5, 0.5, (4, 3)).astype("float32")
    layer = npu(real, imaginary, RNG.uniform(0, 1, 4) if gated else None)
    np.testing.assert_array_equal(to_np(layer(x)), to_np(previous_npu(layer, x)))


def nmru(weights, sign_retrieval=False):
    w = np.asarray(weights, "float32")[:, None]
    layer = NMRU(1, sign_retrieval=sign_retrieval, kernel_initializer=constant(w))
    layer.build((None, 2))
    return layer


@pytest.mark.parametrize("sign_retrieval", [False, True])
def test_the_nmru_divides_by_infinity_to_zero(sign_retrieval):
    float32_max = float(np.finfo("float32").max)
    # Rows of X: [3, inf], [3, -inf], [inf, 2], [-inf, 2], [inf, inf], [-2, -inf].
    cases = {
        "x0 / x1": ([1, 0, 0, 1], [0, 0, float32_max / 2, -float32_max / 2, 0, 0]),
        "x1 / x0": (
            [0, 1, 1, 0],
            [float32_max / 3, -float32_max / 3, 0, 0, 0, float32_max / 2],
        ),
        # x1 left out, infinite or not; an infinite x0 counts as float32's max.
        "x0": ([1, 0, 0, 0], [3, 3, float32_max, -float32_max, float32_max, -2]),
        # Past float32's range: inf, as 2e38 * 3 is.
        "x0 * x1": ([1, 1, 0, 0], [INF, -INF, INF, -INF, INF, INF]),
    }
    for name, (weights, want) in cases.items():
        got = to_np(nmru(weights, sign_retrieval)(X))[:, 0]
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)


def test_the_nmru_keeps_nan_inputs_nan():
    x = np.array([[3.0, np.nan]], "float32")
    assert np.isnan(to_np(nmru([1, 0, 0, 1])(x))).all()


@pytest.mark.parametrize("sign_retrieval", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_finite_inputs_give_the_nmru_the_same_bits_as_before(sign_retrieval, dtype):
    if dtype == "float64" and keras.backend.backend() == "jax":
        pytest.skip("JAX computes in float64 only with jax_enable_x64")
    x = RNG.uniform(-5, 5, (64, 3)).astype(dtype)
    x[::5, 0] = 0.0
    x[1, 1] = np.finfo(dtype).max  # the largest finite input too
    w = RNG.uniform(-0.2, 1.2, (6, 2)).astype(dtype)
    got = nalu_ops.nmru(x, w, sign_retrieval=sign_retrieval)
    # Before: `z = concat(x, 1 / x)` as it is.
    z = ops.concatenate([x, nalu_ops.reciprocal(x)], axis=-1)
    if sign_retrieval:
        clipped = nalu_ops.clip_weight(w, 0.0, 1.0)
        sign = ops.cos(np.pi * nalu_ops.matmul(ops.cast(z < 0, z.dtype), clipped))
        factors = ops.abs(z)[..., :, None] * clipped[None] + (1.0 - clipped[None])
        want = ops.prod(factors, axis=-2, dtype=dtype) * sign
    else:
        want = nalu_ops.nmu(z, w)
    np.testing.assert_array_equal(to_np(got), to_np(want))


def test_a_zero_weight_on_an_infinite_input_is_nan_as_in_dense():
    # `0 * inf` is NaN in IEEE arithmetic: the units, like Dense, do not
    # special-case it (the NMRU's own copy of an input excepted, above).
    x = np.array([[3.0, INF]], "float32")
    take_x0 = constant([[1.0], [0.0]])
    # tanh(w_hat) * sigmoid(m_hat): 1 on x0, exactly 0 on x1.
    nac_x0 = {"w_hat_initializer": constant([[20.0], [0.0]]),
              "m_hat_initializer": constant(20.0)}  # fmt: skip
    for layer in (
        keras.layers.Dense(1, kernel_initializer=take_x0, use_bias=False),
        NAC(1, **nac_x0),
        NALU(1, **nac_x0),
        NAU(1, kernel_initializer=take_x0),
        NMU(1, kernel_initializer=take_x0),
        RealNPU(1, gated=False, kernel_initializer=take_x0),
        NPU(1, gated=False, kernel_initializer=take_x0),
    ):
        assert np.isnan(to_np(layer(x))).all(), type(layer).__name__
