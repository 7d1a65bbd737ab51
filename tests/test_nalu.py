import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.test_ops import np_nac_weight, np_nalu

pytestmark = pytest.mark.backends

# Normal weights (std 0.05) for every path, drawn from the autouse fixture's seed.
RANDOM_NORMAL_INIT = {
    f"{weight}_initializer": "random_normal"
    for weight in ("w_hat", "m_hat", "gate", "mul_w_hat", "mul_m_hat")
}


def make_nalu(tied_weights=True):
    return NALU(2, tied_weights=tied_weights, **RANDOM_NORMAL_INIT)


@pytest.mark.parametrize("tied_weights", [True, False])
def test_output_matches_numpy(tied_weights):
    layer = make_nalu(tied_weights)
    x = np.random.default_rng(0).uniform(-2, 2, size=(6, 3)).astype("float32")
    y = keras.ops.convert_to_numpy(layer(x))
    np_ = keras.ops.convert_to_numpy
    w = np_nac_weight(np_(layer.w_hat), np_(layer.m_hat))
    mul_w = None
    if not tied_weights:
        mul_w = np_nac_weight(np_(layer.mul_w_hat), np_(layer.mul_m_hat))
        assert not np.allclose(mul_w, w)
    np.testing.assert_allclose(y, np_nalu(x, w, np_(layer.gate_kernel), mul_w), 1e-5)
    np.testing.assert_allclose(
        np_(layer.effective_mul_kernel), w if mul_w is None else mul_w, rtol=1e-6
    )


def test_is_a_nac_extended_with_a_gated_multiplicative_path():
    tied, untied = NALU(3), NALU(3, tied_weights=False)
    tied.build((None, 4))
    untied.build((None, 4))
    assert isinstance(tied, NAC)
    assert [w.name for w in tied.trainable_weights] == ["w_hat", "m_hat", "gate_kernel"]
    assert [w.name for w in untied.trainable_weights] == [
        "w_hat",
        "m_hat",
        "gate_kernel",
        "mul_w_hat",
        "mul_m_hat",
    ]
    assert all(w.shape == (4, 3) for w in untied.trainable_weights)


@pytest.mark.parametrize("tied_weights", [True, False])
def test_gradients_reach_every_weight(tied_weights):
    x = np.random.default_rng(0).uniform(0.5, 2, size=(4, 3)).astype("float32")
    assert_gradients_reach_every_weight(make_nalu(tied_weights), x)


def test_zero_and_negative_inputs_give_finite_outputs_and_gradients():
    x = np.array([[0.0, -2.0, 3.0], [0.0, 0.0, 0.0]], "float32")
    layer = make_nalu()
    assert np.isfinite(keras.ops.convert_to_numpy(layer(x))).all()
    assert_gradients_reach_every_weight(layer, x)


def test_integer_inputs_are_cast_to_float():
    layer = make_nalu()
    x = np.array([[1, 2, 3]], "int64")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)),
        keras.ops.convert_to_numpy(layer(x.astype("float32"))),
    )


def product_nalu(**kwargs):
    """A NALU(1) whose weights compute x0 * x1 (W = [1, 1], gate closed)."""
    return NALU(
        1,
        w_hat_initializer=constant(20.0),
        m_hat_initializer=constant(20.0),
        gate_initializer=constant(-20.0),
        **kwargs,
    )


@pytest.mark.parametrize("policy", ["mixed_float16", "float16", "mixed_bfloat16"])
def test_half_precision_policy_computes_in_float32(policy):
    keras.config.set_dtype_policy(policy)
    layer = product_nalu()
    assert layer.compute_dtype == "float32" and layer.variable_dtype == "float32"
    x = np.array([[300.0, 400.0]], "float16")  # true output 1.2e5 > float16 max
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float32"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y), [[1.2e5]], rtol=1e-5)


def test_mixed_precision_model_serves_products_beyond_float16():
    keras.config.set_dtype_policy("mixed_float16")
    model = keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(2, kernel_initializer="identity"),
            product_nalu(),
        ]
    )
    assert model.layers[0].compute_dtype == "float16"
    y = keras.ops.convert_to_numpy(model(np.array([[250.0, 400.0]], "float32")))
    np.testing.assert_allclose(y, [[1e5]], rtol=1e-3)


def test_float32_policy_output_is_finite_near_float32_limit():
    layer = product_nalu()
    x = np.array([[1e19, 1e19]], "float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)), [[1e38]], rtol=1e-4
    )


@pytest.mark.parametrize(
    "epsilon", [0, -1e-7, 1e-46, float("nan"), float("inf"), "1e-7", None]
)
def test_invalid_epsilon_raises(epsilon):
    with pytest.raises(ValueError, match=r"`epsilon`.*greater than 0.*epsilon="):
        NALU(1, epsilon=epsilon)


def test_numpy_arguments_are_accepted():
    layer = NALU(np.int32(2), epsilon=np.float32(1e-6), tied_weights=np.False_)
    assert (layer.units, layer.tied_weights) == (2, False)
    assert layer.epsilon == pytest.approx(1e-6)
    assert isinstance(layer.get_config()["tied_weights"], bool)


@pytest.mark.parametrize("tied_weights", [1, "yes", None])
def test_invalid_tied_weights_raises(tied_weights):
    with pytest.raises(
        ValueError, match=r"`tied_weights`.*True or False.*tied_weights="
    ):
        NALU(1, tied_weights=tied_weights)


def test_learns_a_product_that_extrapolates():
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 2, size=(4096, 3)).astype("float32")
    model = keras.Sequential([keras.Input((3,)), NALU(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    model.fit(x, x[:, :1] * x[:, 1:2], batch_size=64, epochs=30, verbose=0)
    layer = model.layers[0]
    w = keras.ops.convert_to_numpy(layer.effective_kernel).ravel()
    np.testing.assert_allclose(w, [1, 1, 0], atol=0.03)
    big = np.array([[40.0, 25.0, 30.0]], "float32")  # 20x the training range
    np.testing.assert_allclose(model.predict(big, verbose=0), [[1000.0]], rtol=0.02)
