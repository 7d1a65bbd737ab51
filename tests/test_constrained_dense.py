import keras
import numpy as np
import pytest

from keras_nalu import NAC
from keras_nalu.layers import ConstrainedDense
from nalu_research.models.mnist import ABLATION_VARIANTS
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.layer_test_case import run_layer_test

pytestmark = pytest.mark.backends

X = np.array([[1.0, 2.0, 3.0], [-4.0, 5.0, 0.0]], "float32")
KERNEL, M_HAT, BIAS = 0.5, -1.0, 0.25


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# The seven rows of Table 4, computed by hand with NumPy: f(W) and b.
HAND_COMPUTED = {
    "Wx+b": (np.full((3, 2), KERNEL), BIAS),
    "sigmoid(W)x+b": (np.full((3, 2), sigmoid(KERNEL)), BIAS),
    "tanh(W)x+b": (np.full((3, 2), np.tanh(KERNEL)), BIAS),
    "Wx+0": (np.full((3, 2), KERNEL), 0.0),
    "sigmoid(W)x+0": (np.full((3, 2), sigmoid(KERNEL)), 0.0),
    "tanh(W)x+0": (np.full((3, 2), np.tanh(KERNEL)), 0.0),
    "NAC": (np.full((3, 2), np.tanh(KERNEL) * sigmoid(M_HAT)), 0.0),
}


def make(variant, **kwargs):
    return ConstrainedDense(
        2,
        **ABLATION_VARIANTS[variant],
        kernel_initializer=constant(KERNEL),
        m_hat_initializer=constant(M_HAT),
        bias_initializer=constant(BIAS),
        **kwargs,
    )


@pytest.mark.parametrize(
    "init_kwargs",
    [
        {
            "units": 3,
            "weight_transform": "nac",
            "use_bias": True,
            "kernel_initializer": "glorot_normal",
            "m_hat_initializer": "random_uniform",
            "bias_initializer": "ones",
            "kernel_regularizer": "l2",
            "m_hat_regularizer": "l1",
            "bias_regularizer": "l2",
            "kernel_constraint": "max_norm",
            "m_hat_constraint": "non_neg",
            "bias_constraint": "non_neg",
            "name": "my_layer",
        },
        {"units": 2, "weight_transform": "sigmoid", "use_bias": False},
    ],
    ids=["nac_with_everything", "sigmoid_plain"],
)
def test_public_api(init_kwargs, tmp_path):
    run_layer_test(
        ConstrainedDense,
        init_kwargs,
        input_shape=(4, 5),
        expected_output_shape=(4, init_kwargs["units"]),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("variant", list(ABLATION_VARIANTS))
def test_each_table_4_variant_matches_hand_computed_output(variant):
    layer = make(variant)
    kernel, bias = HAND_COMPUTED[variant]
    want = X @ kernel + bias
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(X)), want, rtol=1e-6)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.effective_kernel), kernel, rtol=1e-6
    )


def test_hand_computed_values_are_what_the_transforms_give():
    # Guards the table above: sigmoid(0.5), tanh(0.5), tanh(0.5) * sigmoid(-1).
    np.testing.assert_allclose(
        [sigmoid(0.5), np.tanh(0.5), np.tanh(0.5) * sigmoid(-1.0)],
        [0.6224593, 0.4621172, 0.1242824],
        rtol=1e-6,
    )


@pytest.mark.parametrize("variant", list(ABLATION_VARIANTS))
def test_weights_are_those_the_variant_needs(variant):
    layer = make(variant)
    layer.build((None, 3))
    names = [w.name for w in layer.trainable_weights]
    expected = ["kernel"]
    if variant == "NAC":
        expected.append("m_hat")
    if variant.endswith("+b"):
        expected.append("bias")
    assert names == expected
    assert all(w.shape == (3, 2) for w in layer.trainable_weights[:1])


def test_nac_variant_computes_what_the_nac_layer_computes():
    ours = make("NAC")
    nac = NAC(2, w_hat_initializer=constant(KERNEL), m_hat_initializer=constant(M_HAT))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(ours(X)), keras.ops.convert_to_numpy(nac(X))
    )


@pytest.mark.parametrize("variant", list(ABLATION_VARIANTS))
def test_gradients_reach_every_weight(variant):
    assert_gradients_reach_every_weight(make(variant), X)


def test_integer_inputs_are_cast_to_float():
    layer = make("Wx+b")
    got = keras.ops.convert_to_numpy(layer(X.astype("int32")))
    np.testing.assert_allclose(got, X @ np.full((3, 2), KERNEL) + BIAS)


def test_effective_kernel_needs_a_built_layer():
    with pytest.raises(ValueError, match="effective_kernel.*before the layer is built"):
        ConstrainedDense(1).effective_kernel  # noqa: B018


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", None, True])
def test_invalid_units_raises(units):
    with pytest.raises(ValueError, match=f"`units`.*Received: units={units!r}"):
        ConstrainedDense(units)


@pytest.mark.parametrize("weight_transform", ["relu", "NAC", None, 1])
def test_invalid_weight_transform_raises(weight_transform):
    with pytest.raises(
        ValueError,
        match=r"`weight_transform`, expected one of \('linear', 'sigmoid', 'tanh', "
        rf"'nac'\). Received: weight_transform={weight_transform!r}",
    ):
        ConstrainedDense(1, weight_transform=weight_transform)


@pytest.mark.parametrize("use_bias", ["yes", 1, None])
def test_invalid_use_bias_raises(use_bias):
    with pytest.raises(ValueError, match=f"`use_bias`.*use_bias={use_bias!r}"):
        ConstrainedDense(1, use_bias=use_bias)


def test_unknown_feature_dimension_raises():
    with pytest.raises(ValueError, match="last dimension"):
        ConstrainedDense(1).build((None, None))
