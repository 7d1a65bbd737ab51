"""NAU, NMU, NMRU, INALU and RealNPU: their math against NumPy, clipping, zero and
negative inputs, the penalty schedule in `model.fit` and export (the Keras
contract of every unit: tests/test_public_api.py)."""

import keras
import numpy as np
import pytest

from keras_nalu import INALU, NAU, NMRU, NMU, NPU, RealNPU, export_saved_model
from keras_nalu import ops as nalu_ops
from keras_nalu.gradients import value_and_grad
from keras_nalu.initializers import NAUUniform, NMUUniform
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.test_export import serve_in_fresh_process
from tests.test_ops import np_nac_weight

pytestmark = pytest.mark.backends


def to_np(t):
    return keras.ops.convert_to_numpy(t)


def np_nmu(x, w):
    w = np.clip(w, 0, 1)
    return np.prod(x[:, :, None] * w[None] + 1 - w[None], axis=1)


def np_inalu(x, w, mul_w, gate, epsilon=1e-7, max_exponent=20.0):
    m = np.exp(np.minimum(np.log(np.abs(x) + epsilon) @ mul_w, max_exponent))
    a = np.abs(mul_w)[None]
    sign = np.prod(np.sign(x)[:, :, None] * a + 1 - a, axis=1)
    g = 1 / (1 + np.exp(-gate))
    return g * (x @ w) + (1 - g) * m * sign


def np_real_npu(x, w, gate=None, epsilon=1e-7, max_exponent=88.0):
    w = np.clip(w, -1, 1)
    g = np.ones(x.shape[-1]) if gate is None else np.clip(gate, 0, 1)
    r = np.maximum(g * np.abs(x) + 1 - g, epsilon)
    k = g * (x < 0)
    return np.exp(np.minimum(np.log(r) @ w, max_exponent)) * np.cos(np.pi * (k @ w))


RNG = np.random.default_rng(0)
X = RNG.uniform(-3, 3, size=(6, 4)).astype("float32")


# ---- The math, against NumPy ------------------------------------------------


def test_nau_clips_its_weight_to_minus_one_one():
    w = np.array([[2.0], [-0.5], [-7.0], [0.25]], "float32")
    expected = X @ np.array([[1.0], [-0.5], [-1.0], [0.25]])
    np.testing.assert_allclose(to_np(nalu_ops.nau(X, w)), expected, rtol=1e-6)


def test_a_weight_on_its_bound_gets_the_whole_gradient_on_every_backend():
    # torch.clamp's gradient, as in Madsen & Johansen's code: 1 on the bounds
    # too, 0 beyond them (jax.numpy.clip alone passes half at a bound).
    w = np.array([[-1.5], [-1.0], [0.0], [1.0], [1.5]], "float32")
    x = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]], "float32")
    grad_of = value_and_grad(lambda p: keras.ops.sum(nalu_ops.nau(x, p[0])))
    _, (grad,) = grad_of([keras.ops.convert_to_tensor(w)])
    np.testing.assert_array_equal(to_np(grad).ravel(), [0, 2, 3, 4, 0])
    grad_of = value_and_grad(lambda p: keras.ops.sum(nalu_ops.clip_weight(p[0], 0, 1)))
    _, (grad,) = grad_of([keras.ops.convert_to_tensor(w)])
    np.testing.assert_array_equal(to_np(grad).ravel(), [0, 0, 1, 1, 0])


def test_nmu_matches_numpy_and_clips_to_zero_one():
    w = RNG.uniform(-0.5, 1.5, size=(4, 3)).astype("float32")
    np.testing.assert_allclose(to_np(nalu_ops.nmu(X, w)), np_nmu(X, w), rtol=1e-5)


def test_nmu_multiplies_negative_inputs_and_zero_exactly():
    x = np.array([[-2.0, 3.0, -0.5], [0.0, 5.0, 7.0]], "float32")
    w = np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]], "float32")
    np.testing.assert_array_equal(to_np(nalu_ops.nmu(x, w)), [[3.0, -2.0], [0.0, 0.0]])


def test_sign_product_recovers_the_sign_that_log_magnitude_loses():
    x = np.array([[-2.0, 3.0], [-2.0, -3.0], [0.0, 3.0]], "float32")
    w = np.array([[1.0], [-1.0]], "float32")  # x0 / x1: |W| = 1 on both
    np.testing.assert_array_equal(to_np(nalu_ops.sign_product(x, w)), [[-1], [1], [0]])


def test_inalu_matches_numpy():
    w, mul_w = (np.tanh(RNG.normal(size=(4, 2))).astype("float32") for _ in "ab")
    gate = np.array([0.3, -1.2], "float32")
    np.testing.assert_allclose(
        to_np(nalu_ops.inalu(X, w, mul_w, gate)),
        np_inalu(X, w, mul_w, gate),
        rtol=1e-4,
    )


def test_inalu_exponent_is_clipped_so_the_output_stays_finite():
    x = np.full((1, 4), 1e30, "float32")
    w, mul_w = np.zeros((4, 1), "float32"), np.ones((4, 1), "float32")
    y = to_np(nalu_ops.inalu(x, w, mul_w, np.array([-50.0], "float32")))
    np.testing.assert_allclose(y, [[np.exp(20.0)]], rtol=1e-5)


def test_nmru_divides_and_bounds_the_reciprocal_of_zero():
    w = np.array([[1.0], [0.0], [0.0], [1.0]], "float32")  # x0 / x1
    x = np.array([[6.0, -4.0], [3.0, 0.0]], "float32")
    y = to_np(nalu_ops.nmru(x, w, epsilon=1e-3))
    np.testing.assert_allclose(y, [[-1.5], [3000.0]], rtol=1e-6)


def test_real_npu_matches_numpy_with_and_without_its_gate():
    w = RNG.uniform(-1.5, 1.5, size=(4, 3)).astype("float32")
    gate = np.array([0.2, 1.3, 0.0, 0.7], "float32")
    for g in (None, gate):
        np.testing.assert_allclose(
            to_np(nalu_ops.real_npu(X, w, g)), np_real_npu(X, w, g), rtol=1e-5
        )


def test_real_npu_multiplies_and_divides_signed_inputs_exactly():
    x = np.array([[-2.0, 3.0, -0.5], [4.0, -5.0, 2.0]], "float64")
    w = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 0.0]])  # x0 x1 / x2, x0 / x1
    y = to_np(nalu_ops.real_npu(x, w))
    # float64 on TensorFlow; jax and torch compute in float32 here
    np.testing.assert_allclose(y, [[12.0, -2 / 3], [-10.0, -0.8]], rtol=1e-6)
    # a closed gate leaves its input out whatever the exponent
    y = to_np(nalu_ops.real_npu(x, w, gate=np.array([1.0, 0.0, 1.0])))
    np.testing.assert_allclose(y[:, 0], [4.0, 2.0], rtol=1e-6)


def test_real_npu_stays_finite_at_zero_and_on_overflow():
    x = np.array([[0.0, 2.0], [1e30, 1e30]], "float32")
    y = to_np(nalu_ops.real_npu(x, np.array([[-1.0], [1.0]], "float32")))
    np.testing.assert_allclose(y[0], [2.0 / 1e-7], rtol=1e-5)  # 1 / epsilon
    y = to_np(nalu_ops.real_npu(x[1:], np.ones((2, 1), "float32")))
    np.testing.assert_allclose(y, [[np.exp(88.0)]], rtol=1e-5)  # not inf
    penalty = nalu_ops.real_npu_penalty(np.ones((2, 1)), np.array([1.0, 0.5]))
    assert to_np(penalty) == pytest.approx(0.25)


def test_penalties_are_zero_exactly_at_the_discrete_weights():
    w = np.array([[-1.0, 0.0], [1.0, 0.5]], "float32")
    assert to_np(nalu_ops.sparsity_penalty(w)) == pytest.approx(0.5 / 4)
    assert to_np(nalu_ops.sparsity_penalty(np.sign(w))) == 0.0
    w_hat = np.array([[-25.0, 20.0], [10.0, 0.0]], "float32")
    assert to_np(nalu_ops.inalu_penalty(w_hat)) == pytest.approx((0.5 + 1.0) / 4)


def test_penalty_gradient_is_zero_at_the_discrete_weights():
    # As Madsen & Johansen's code: no push beyond a bound or away from 0.
    w = np.array([[-1.0, 0.0, 1.0, 0.25, -0.75, 0.5]], "float32").T
    grad_of = value_and_grad(lambda p: nalu_ops.sparsity_penalty(p[0]))
    _, (grad,) = grad_of([keras.ops.convert_to_tensor(w)])
    expected = np.array([[0.0, 0.0, 0.0, 1.0, 1.0, 0.0]], "float32").T / 6
    # at 0.5 both sides tie: either one-sided slope, +-1/6, is a subgradient
    grad = keras.ops.convert_to_numpy(grad)
    np.testing.assert_allclose(grad[:5], expected[:5], atol=1e-7)
    assert abs(grad[5, 0]) <= 1 / 6 + 1e-7


@pytest.mark.parametrize(
    "step, expected", [(0, 0.0), (10, 0.0), (15, 0.5), (20, 1.0), (99, 1.0)]
)
def test_ramp(step, expected):
    assert float(to_np(nalu_ops.ramp(step, 10, 20))) == pytest.approx(expected)
    assert float(to_np(nalu_ops.ramp(step, 10, 10))) == float(step >= 10)


def test_units_broadcast_over_a_leading_seed_axis():
    x = RNG.uniform(-2, 2, size=(3, 5, 4)).astype("float32")
    w = RNG.uniform(0, 1, size=(3, 8, 2)).astype("float32")
    stacked = to_np(nalu_ops.nmru(x, w))
    for s in range(3):
        np.testing.assert_allclose(stacked[s], to_np(nalu_ops.nmru(x[s], w[s])))
    np.testing.assert_allclose(
        to_np(nalu_ops.sparsity_penalty(w)),
        [to_np(nalu_ops.sparsity_penalty(one)) for one in w],
    )


def test_initializers_draw_madsen_johansen_ranges():
    nau = to_np(NAUUniform(seed=1)((100, 2)))
    assert np.abs(nau).max() <= np.sqrt(6 / 102) and nau.std() > 0.1
    assert np.abs(to_np(NAUUniform(seed=1)((2, 1)))).max() <= 0.5  # capped
    nmu = to_np(NMUUniform(seed=1)((2, 1000)))
    assert 0.25 <= nmu.min() and nmu.max() <= 0.75 and abs(nmu.mean() - 0.5) < 0.02


# ---- The layers --------------------------------------------------------------

SCHEDULE = {
    "regularization_strength": 2.5,
    "regularization_start": 3,
    "regularization_end": 7,
}
KERNEL_ARGS = {
    "kernel_regularizer": "l2",
    "kernel_constraint": "non_neg",
}
LAYERS = {
    NAU: {
        **SCHEDULE,
        **KERNEL_ARGS,
        "kernel_initializer": "glorot_normal",
        "centered_gradient": True,
    },
    NMU: {**SCHEDULE, **KERNEL_ARGS, "kernel_initializer": "random_uniform"},
    NMRU: {**SCHEDULE, **KERNEL_ARGS, "epsilon": 1e-4, "sign_retrieval": True},
    RealNPU: {
        **SCHEDULE,
        **KERNEL_ARGS,
        "gated": True,
        "epsilon": 1e-5,
        "max_exponent": 30.0,
        "gate_initializer": "ones",
    },
    NPU: {
        **SCHEDULE,
        **KERNEL_ARGS,
        "gated": True,
        "epsilon": 1e-5,
        "max_exponent": 30.0,
        "imaginary_initializer": "random_uniform",
        "imaginary_regularizer": "l1",
        "imaginary_constraint": "max_norm",
        "gate_initializer": "ones",
    },
    INALU: {
        **SCHEDULE,
        "epsilon": 1e-6,
        "max_exponent": 15.0,
        "regularization_threshold": 10.0,
        "w_hat_initializer": "glorot_normal",
        "mul_m_hat_initializer": "ones",
        "gate_initializer": "random_normal",
        "gate_regularizer": "l1",
        "mul_w_hat_constraint": "max_norm",
    },
}
FLOAT32_UNITS = (NMU, NMRU, INALU, RealNPU, NPU)


@pytest.mark.parametrize("layer_cls", list(LAYERS), ids=lambda c: c.__name__)
def test_gradients_reach_every_weight(layer_cls):
    layer = layer_cls(3, **({"gate_initializer": "ones"} if layer_cls is INALU else {}))
    assert_gradients_reach_every_weight(layer, X)


@pytest.mark.parametrize("layer_cls", [NAU, NMU, NMRU], ids=lambda c: c.__name__)
def test_layer_applies_the_clipped_kernel_of_its_op(layer_cls):
    layer = layer_cls(2)
    y = to_np(layer(X))
    w = to_np(layer.kernel)
    expected = {NAU: nalu_ops.nau, NMU: nalu_ops.nmu, NMRU: nalu_ops.nmru}[layer_cls]
    np.testing.assert_allclose(y, to_np(expected(X, w)), rtol=1e-6)
    assert layer.kernel.shape == ((8 if layer_cls is NMRU else 4), 2)


def test_inalu_layer_matches_numpy():
    layer = INALU(2, gate_initializer="random_normal")
    y = to_np(layer(X))
    expected = np_inalu(
        X,
        np_nac_weight(to_np(layer.w_hat), to_np(layer.m_hat)),
        np_nac_weight(to_np(layer.mul_w_hat), to_np(layer.mul_m_hat)),
        to_np(layer.gate),
    )
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "layer_cls, bounds",
    [(NAU, (-1, 1)), (NMU, (0, 1)), (NMRU, (0, 1)), (RealNPU, (-1, 1))],
)
def test_training_keeps_the_stored_kernel_in_its_range(layer_cls, bounds):
    model = keras.Sequential(
        [keras.Input((4,)), layer_cls(3, kernel_initializer=constant(0.9))]
    )
    model.compile(optimizer=keras.optimizers.SGD(100.0), loss="mse")
    model.fit(X, np.full((6, 3), 1e3, "float32") * -bounds[0], verbose=0, epochs=2)
    w = to_np(model.layers[0].kernel)
    assert w.min() >= bounds[0] and w.max() <= bounds[1]
    assert np.isin(w, bounds).any()  # driven to a bound, and held there


@pytest.mark.parametrize("layer_cls", list(LAYERS), ids=lambda c: c.__name__)
def test_penalty_follows_its_schedule_in_fit(layer_cls):
    layer = layer_cls(
        2, regularization_strength=4.0, regularization_start=2, regularization_end=6
    )
    model = keras.Sequential([keras.Input((4,)), layer])
    # lr 0: the weights stay, so the loss is the MSE plus the scheduled penalty.
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    x, y = np.abs(X), np.ones((6, 2), "float32")
    mse = float(np.mean(np.square(to_np(model(x)) - y)))
    penalty = float(to_np(layer.penalty(layer.unit_weights())))
    history = model.fit(x, y, batch_size=6, epochs=8, verbose=0).history["loss"]
    assert int(to_np(layer.regularization_step)) == 8
    weights = [4.0 * min(max((step - 2) / 4, 0), 1) for step in range(1, 9)]
    np.testing.assert_allclose(history, [mse + w * penalty for w in weights], rtol=1e-4)
    assert float(to_np(layer.regularization_weight)) == 4.0
    assert layer(x, training=False) is not None
    assert int(to_np(layer.regularization_step)) == 8  # inference does not count


def test_schedule_resumes_from_a_saved_model(tmp_path):
    model = keras.Sequential([keras.Input((4,)), NAU(1, regularization_start=5)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, np.ones((6, 1)), batch_size=2, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert int(to_np(loaded.layers[0].regularization_step)) == 3


def test_zero_and_negative_inputs_give_finite_outputs_and_gradients():
    x = np.array([[0.0, -1.0, 2.0, -0.0], [-3.0, 0.0, 0.0, 1.0]], "float32")
    for layer in (NAU(2), NMU(2), NMRU(2), INALU(2), RealNPU(2)):
        assert np.isfinite(to_np(layer(x))).all()
        assert_gradients_reach_every_weight(layer, x)


@pytest.mark.parametrize("layer_cls", FLOAT32_UNITS, ids=lambda c: c.__name__)
def test_half_precision_policy_computes_in_float32(layer_cls):
    layer = layer_cls(1, dtype="mixed_float16")
    assert layer.compute_dtype == "float32"
    assert to_np(layer(np.full((1, 4), 300.0, "float32"))).dtype == np.float32


BAD_ARGUMENTS = [
    ("units", 0, "a positive integer"),
    ("regularization_strength", -1.0, "a finite number >= 0"),
    ("regularization_strength", float("nan"), "a finite number >= 0"),
    ("regularization_start", -1, "an integer >= 0"),
    ("regularization_start", 1.5, "an integer >= 0"),
    ("regularization_end", 2, "an integer >= regularization_start=20000"),
]


@pytest.mark.parametrize("layer_cls", list(LAYERS), ids=lambda c: c.__name__)
@pytest.mark.parametrize("name, value, expected", BAD_ARGUMENTS)
def test_invalid_arguments_raise(layer_cls, name, value, expected):
    kwargs = {"units": 2, name: value}
    with pytest.raises(ValueError, match=f"`{name}`, expected {expected}"):
        layer_cls(**kwargs)


@pytest.mark.parametrize(
    "layer_cls, name",
    [
        (NMRU, "epsilon"),
        (INALU, "epsilon"),
        (INALU, "max_exponent"),
        (INALU, "regularization_threshold"),
        (RealNPU, "epsilon"),
        (RealNPU, "max_exponent"),
    ],
)
@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), "1"])
def test_invalid_positive_floats_raise(layer_cls, name, value):
    with pytest.raises(ValueError, match=f"`{name}`, expected a finite number"):
        layer_cls(2, **{name: value})


def test_nmru_sign_retrieval_agrees_at_discrete_weights_and_never_crosses_zero():
    x = np.array([[-3.0, 2.0, -0.5], [4.0, -1.0, 0.0]], "float32")
    discrete = RNG.integers(0, 2, size=(6, 4)).astype("float32")
    np.testing.assert_allclose(
        to_np(nalu_ops.nmru(x, discrete, sign_retrieval=True)),
        to_np(nalu_ops.nmru(x, discrete)),
        rtol=1e-6,
    )
    # One weight on x0 = -3 moving from 0 to 1: the plain factor
    # (W x0 + 1 - W) is 0 at W = 1/4; the magnitude never is.
    w = np.zeros((6, 1), "float32")
    w[0] = 0.25
    assert to_np(nalu_ops.nmru(x[:1], w))[0, 0] == 0.0
    retrieved = to_np(nalu_ops.nmru(x[:1], w, sign_retrieval=True))[0, 0]
    np.testing.assert_allclose(retrieved, 1.5 * np.cos(np.pi / 4), rtol=1e-6)
    with pytest.raises(ValueError, match="`sign_retrieval`"):
        NMRU(1, sign_retrieval="yes")


def test_real_npu_layer_applies_its_clipped_kernel_and_gate():
    layer = RealNPU(2, gate_initializer="random_uniform")
    y = to_np(layer(X))
    assert layer.kernel.shape == (4, 2) and layer.gate.shape == (4,)
    np.testing.assert_allclose(
        y, np_real_npu(X, to_np(layer.kernel), to_np(layer.gate)), rtol=1e-5
    )
    ungated = RealNPU(2, gated=False)
    ungated(X)
    assert ungated.effective_gate is None and len(ungated.trainable_weights) == 1
    with pytest.raises(ValueError, match="`gated`, expected True or False"):
        RealNPU(1, gated=1)


def test_nau_centered_gradient_keeps_the_output_and_centers_the_kernel_gradient():
    x = RNG.uniform(1, 2, size=(16, 3)).astype("float32")
    w = RNG.uniform(-1, 1, size=(3, 2)).astype("float32")
    center = x.mean(axis=0, keepdims=True)
    np.testing.assert_allclose(
        to_np(nalu_ops.nau(x, w, center=center)), x @ w, rtol=1e-5, atol=1e-6
    )

    def loss(params, centered):
        y = nalu_ops.nau(params[0], params[1], center=center if centered else None)
        return keras.ops.sum(keras.ops.square(y))

    for centered in (False, True):
        grad_of = value_and_grad(lambda p, c=centered: loss(p, c))
        _, (gx, gw) = grad_of([keras.ops.convert_to_tensor(v) for v in (x, w)])
        delta = 2 * x @ w  # d loss / d y
        inputs = x - center if centered else x
        np.testing.assert_allclose(to_np(gw), inputs.T @ delta, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(to_np(gx), delta @ w.T, rtol=1e-4, atol=1e-4)
    layer = NAU(2, centered_gradient=True)
    np.testing.assert_allclose(
        to_np(layer(x, training=True)), to_np(layer(x)), rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match="`centered_gradient`"):
        NAU(1, centered_gradient=1)


def test_effective_kernel_before_build_raises():
    with pytest.raises(ValueError, match="not available before the layer is built"):
        NMU(2).effective_kernel  # noqa: B018


@pytest.mark.processes
@pytest.mark.tensorflow  # the export from jax: tests/test_backends_export.py
def test_models_of_every_unit_serve_without_keras_nalu(tmp_path):
    model = keras.Sequential(
        [keras.Input((4,), name="x"), NAU(3), NMU(2), NMRU(2), RealNPU(2), INALU(1)]
    )
    path = export_saved_model(model, tmp_path / "units")
    inputs = {f"batch_{n}": RNG.uniform(1, 2, (n, 4)).astype("float32") for n in (1, 9)}
    served = serve_in_fresh_process(path, inputs, tmp_path)
    for key, x in inputs.items():
        np.testing.assert_allclose(served[key], to_np(model(x)), rtol=1e-5)


def test_nmu_initializer_center_is_an_argument_that_round_trips():
    init = NMUUniform(center=0.75, seed=3)
    w = to_np(init((2, 500)))
    assert 0.5 <= w.min() and w.max() <= 1.0
    again = keras.initializers.deserialize(keras.initializers.serialize(init))
    assert again.center == 0.75 and again.get_config() == init.get_config()


@pytest.mark.parametrize("center", [0.2, 0.8, "0.5", True])
def test_invalid_nmu_initializer_center_raises(center):
    with pytest.raises(ValueError, match="`center`, expected a number in"):
        NMUUniform(center=center)
