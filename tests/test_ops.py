import keras
import numpy as np
import pytest
from keras import ops

from keras_nalu import ops as nalu_ops

pytestmark = pytest.mark.backends


def np_nac_weight(w_hat, m_hat):
    return np.tanh(w_hat) / (1.0 + np.exp(-m_hat))


def np_nalu(x, w, g, mul_w=None, epsilon=1e-7):
    gate = 1.0 / (1.0 + np.exp(-(x @ g)))
    m = np.exp(np.log(np.abs(x) + epsilon) @ (w if mul_w is None else mul_w))
    return gate * (x @ w) + (1.0 - gate) * m


def to_np(t):
    return ops.convert_to_numpy(t)


@pytest.fixture
def weights():
    rng = np.random.default_rng(0)
    return {k: rng.normal(size=(3, 2)).astype("float32") for k in "wmgu"}


def test_nac_weight_matches_numpy_and_lies_in_unit_interval(weights):
    w = to_np(nalu_ops.nac_weight(weights["w"], weights["m"]))
    np.testing.assert_allclose(w, np_nac_weight(weights["w"], weights["m"]), 1e-6)
    assert np.all(np.abs(w) <= 1)


def test_nac_weight_saturates_to_exact_minus_one_zero_one():
    w_hat = np.array([20.0, -20.0, 20.0], "float32")
    m_hat = np.array([20.0, 20.0, -200.0], "float32")
    np.testing.assert_array_equal(to_np(nalu_ops.nac_weight(w_hat, m_hat)), [1, -1, 0])


def test_nac_is_matmul():
    x = np.array([[1.0, 2.0, 3.0]], "float32")
    w = np.array([[1.0], [-1.0], [0.0]], "float32")
    np.testing.assert_array_equal(to_np(nalu_ops.nac(x, w)), [[-1.0]])


@pytest.mark.parametrize("untied", [False, True])
def test_nalu_matches_numpy(weights, untied):
    x = np.random.default_rng(1).uniform(-3, 3, size=(5, 3)).astype("float32")
    w = np_nac_weight(weights["w"], weights["m"])
    mul_w = np_nac_weight(weights["u"], weights["m"]) if untied else None
    got = nalu_ops.nalu(x, w, weights["g"], mul_w=mul_w)
    np.testing.assert_allclose(to_np(got), np_nalu(x, w, weights["g"], mul_w), 1e-5)


def test_nalu_with_closed_gate_multiplies_and_divides():
    x = np.array([[3.0, 4.0, 2.0]], "float32")
    w = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, -1.0]], "float32")
    closed = np.full((3, 2), -30.0, "float32")
    np.testing.assert_allclose(to_np(nalu_ops.nalu(x, w, closed)), [[12.0, 1.5]], 1e-5)


def test_log_of_zero_is_guarded_by_epsilon():
    x = np.array([[0.0, 2.0]], "float32")
    np.testing.assert_allclose(
        to_np(nalu_ops.log_magnitude(x, 1e-7)), np.log([[1e-7, 2.0]]), 1e-6
    )
    # Dividing by zero gives a large finite value, not inf or NaN.
    w = np.array([[-1.0], [1.0]], "float32")
    y = to_np(nalu_ops.nalu(x, w, np.full((2, 1), -30.0, "float32")))
    assert np.isfinite(y).all() and y[0, 0] > 1e6


def test_closed_gate_over_overflowing_product_returns_additive_path():
    # m = 1e30 * 1e30 overflows float32, but the gate gives it weight 0.
    x = np.array([[1e30, 1e30]], "float32")
    w = np.ones((2, 1), "float32")
    open_gate = np.full((2, 1), 1e-28, "float32")  # logits 2e2: g == 1.0
    y = to_np(nalu_ops.nalu(x, w, open_gate))
    np.testing.assert_allclose(y, [[2e30]], rtol=1e-6)


def test_output_is_inf_only_beyond_float32():
    w = np.ones((2, 1), "float32")
    closed = np.full((2, 1), -1e-17, "float32")  # g ~ 0 for x ~ 1e19
    near_max = np.array([[1.5e19, 2e19]], "float32")  # true value 3e38 < 3.4e38
    y = to_np(nalu_ops.nalu(near_max, w, closed))
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, [[3e38]], rtol=1e-4)
    beyond = np.array([[2e19, 2e19]], "float32")  # true value 4e38 > 3.4e38
    assert np.isposinf(to_np(nalu_ops.nalu(beyond, w, closed))).all()


def test_mixed_gate_keeps_large_product_finite():
    # (1 - g) * m with m = 1e40 (beyond float32) but (1 - g) = 1e-10: 1e30.
    x = np.array([[1e20, 1e20]], "float32")
    w = np.ones((2, 1), "float32")
    logit = np.log(1e10)  # g = 1 - ~1e-10
    gate = np.full((2, 1), logit / 2e20, "float32")
    y = to_np(nalu_ops.nalu(x, w, gate, epsilon=1e-7))
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, [[2e20 + 1e40 / (1 + 1e10)]], rtol=1e-3)


def test_functions_broadcast_over_a_leading_seed_axis(weights):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 2, size=(4, 5, 3)).astype("float32")
    w_hat = rng.normal(size=(4, 3, 2)).astype("float32")
    m_hat = rng.normal(size=(4, 3, 2)).astype("float32")
    g = rng.normal(size=(4, 3, 2)).astype("float32")
    w = nalu_ops.nac_weight(w_hat, m_hat)
    stacked = to_np(nalu_ops.nalu(x, w, g))
    for s in range(4):
        one = nalu_ops.nalu(x[s], nalu_ops.nac_weight(w_hat[s], m_hat[s]), g[s])
        np.testing.assert_allclose(stacked[s], to_np(one), rtol=1e-5)


def test_a_factor_with_weight_one_keeps_every_digit_of_a_small_input():
    # A snapped NMRU dividing by 500 multiplies by 1/500 = 0.002: formed as
    # (0.002 + 1) - 1 in float32 it would keep 4 digits.
    x = np.array([[600.0, 1 / 500.0, 1e-6]], "float32")
    w = np.ones((3, 1), "float32")
    got = ops.convert_to_numpy(nalu_ops.nmu(x, w))[0, 0]
    assert got == np.float32(600.0) * np.float32(1 / 500.0) * np.float32(1e-6)
    divide = np.array([[1.0], [0.0], [0.0], [1.0]], "float32")  # a * (1 / b)
    quotient = nalu_ops.nmru(np.array([[600.0, 500.0]], "float32"), divide)
    assert ops.convert_to_numpy(quotient)[0, 0] == np.float32(600.0) * np.float32(
        1 / np.float32(500.0)
    )


@pytest.mark.backends
def test_units_ask_jax_for_full_float32_matrix_products():
    """On NVIDIA GPUs since Ampere, JAX's default float32 product is
    TensorFloat-32 (10-bit mantissa): every product of the units asks for
    the highest precision instead (`docs/gpu.md` has the measured effect)."""
    if keras.backend.backend() != "jax":
        pytest.skip("a JAX setting")
    import jax

    x, w = np.ones((2, 3), "float32"), np.ones((3, 1), "float32")
    for unit in (nalu_ops.nac, nalu_ops.nau, nalu_ops.nalu, nalu_ops.real_npu):
        args = (x, w, w) if unit is nalu_ops.nalu else (x, w)
        if unit is nalu_ops.real_npu:
            args = (x, w, np.ones((3,), "float32"))
        jaxpr = str(jax.make_jaxpr(unit)(*args))
        assert "dot_general" in jaxpr, unit
        assert jaxpr.count("Precision.HIGHEST") == 2 * jaxpr.count("dot_general"), (
            unit.__name__,
            jaxpr,
        )
