import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU, NACCell, NALUCell
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.test_ops import np_nac_weight

pytestmark = pytest.mark.backends

INVALID_UNITS = [0, -1, 2.5, "3", None, True]
ALL_LAYERS = [NAC, NALU, NACCell, NALUCell]


def test_output_matches_numpy_with_constant_weights():
    layer = NAC(2, w_hat_initializer=constant(0.5), m_hat_initializer=constant(-1.0))
    x = np.array([[1.0, 2.0, 3.0], [-4.0, 5.0, 0.0]], "float32")
    want = x @ np_nac_weight(np.full((3, 2), 0.5), np.full((3, 2), -1.0))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x)), want, 1e-6)


def test_weights_have_documented_names_and_shapes():
    layer = NAC(3)
    layer.build((None, 5))
    assert layer.w_hat.shape == (5, 3) and layer.m_hat.shape == (5, 3)
    assert [w.name for w in layer.trainable_weights] == ["w_hat", "m_hat"]


def test_effective_kernel_is_the_read_only_nac_weight():
    layer = NAC(1, w_hat_initializer=constant(20.0), m_hat_initializer=constant(20.0))
    with pytest.raises(ValueError, match="effective_kernel.*before the layer is built"):
        layer.effective_kernel  # noqa: B018
    layer.build((None, 3))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(layer.effective_kernel), np.ones((3, 1))
    )
    with pytest.raises(AttributeError):
        layer.effective_kernel = np.zeros((3, 1))


def test_integer_inputs_are_cast_to_float():
    layer = NAC(1, w_hat_initializer=constant(20.0), m_hat_initializer=constant(20.0))
    y = layer(np.array([[1, 2, 3]], "int32"))
    assert keras.backend.standardize_dtype(y.dtype) == "float32"
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(y), [[6.0]])


def test_applies_to_the_last_axis_of_higher_rank_inputs():
    assert NAC(2)(np.ones((4, 7, 3))).shape == (4, 7, 2)


def test_gradients_reach_every_weight():
    assert_gradients_reach_every_weight(NAC(2), np.ones((4, 3), "float32"))


@pytest.mark.parametrize("layer_cls", ALL_LAYERS)
@pytest.mark.parametrize("units", INVALID_UNITS)
def test_invalid_units_raises(layer_cls, units):
    with pytest.raises(ValueError, match=f"`units`.*positive integer.*units={units!r}"):
        layer_cls(units)


def test_numpy_integer_units_are_accepted():
    assert NAC(np.int64(3)).units == 3


@pytest.mark.parametrize("layer_cls", [NAC, NALU])
def test_rank_one_input_raises(layer_cls):
    with pytest.raises(ValueError, match=r"rank >= 2.*input_shape=\(3,\)"):
        layer_cls(2)(np.ones((3,), "float32"))


@pytest.mark.parametrize("layer_cls", ALL_LAYERS)
def test_unknown_last_dimension_raises(layer_cls):
    with pytest.raises(ValueError, match=r"last dimension.*input_shape=\(None, None\)"):
        layer_cls(2).build((None, None))


def test_wrong_feature_size_after_build_raises():
    layer = NAC(2)
    layer(np.ones((1, 3)))
    with pytest.raises(ValueError, match="incompatible"):
        layer(np.ones((1, 4)))


def test_learns_addition_that_extrapolates():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(2048, 3)).astype("float32")
    y = x[:, :1] + x[:, 1:2]
    model = keras.Sequential([keras.Input((3,)), NAC(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
    model.fit(x, y, batch_size=64, epochs=40, verbose=0)
    w = keras.ops.convert_to_numpy(model.layers[0].effective_kernel).ravel()
    np.testing.assert_allclose(w, [1, 1, 0], atol=0.03)
    big = np.array([[500.0, -300.0, 1000.0]], "float32")  # 500x the range
    np.testing.assert_allclose(model.predict(big, verbose=0), [[200.0]], rtol=3e-2)


def test_the_nac_is_additive_by_default():
    assert NAC(1).get_config()["multiplicative"] is False


# NAC*: the NAC in log space, exp(log(|x| + epsilon) @ W).
def test_multiplicative_output_is_the_nac_in_log_space():
    layer = NAC(
        2,
        multiplicative=True,
        epsilon=1e-3,
        w_hat_initializer=constant(0.5),
        m_hat_initializer=constant(-1.0),
    )
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, 0.0]], "float32")
    w = np_nac_weight(np.full((3, 2), 0.5), np.full((3, 2), -1.0))
    want = np.exp(np.log(np.abs(x) + 1e-3) @ w)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x)), want, 1e-5)


def test_a_multiplicative_nac_snaps_to_a_quotient():
    from keras_nalu import formulas, snap_weights

    layer = NAC(1, multiplicative=True)
    model = keras.Sequential([keras.Input((2,)), layer])
    layer.w_hat.assign(np.array([[4.0], [-4.0]], "float32"))  # W ~ [0.999, -0.999]
    layer.m_hat.assign(np.full((2, 1), 8.0, "float32"))
    x = np.random.default_rng(0).uniform(1, 2, (64, 2)).astype("float32")
    far = 3 * x
    data = {s: (v, v[:, :1] / v[:, 1:]) for s, v in (("i", x), ("e", far))}
    snapped, _ = snap_weights(model, data, rtol=1e-3)
    assert formulas(snapped, positive=True) == ["y0 = x0/x1"]


@pytest.mark.parametrize("layer_cls", [NALU, NACCell])
def test_only_the_nac_takes_multiplicative(layer_cls):
    with pytest.raises(
        ValueError, match=f"multiplicative=True for a {layer_cls.__name__}"
    ):
        layer_cls(1, multiplicative=True)
    # Nor does its configuration name the option; one that does (saved
    # before) still loads.
    config = layer_cls(1).get_config()
    assert "multiplicative" not in config
    assert layer_cls.from_config({**config, "multiplicative": False}).units == 1
    with pytest.raises(ValueError, match="epsilon"):
        NAC(1, multiplicative=True, epsilon=0.0)
