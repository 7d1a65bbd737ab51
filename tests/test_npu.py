"""The NPU: added through the unit protocol alone (its file and its
registration), and read by snapping, formulas and the seed-batched engine."""

import keras
import numpy as np
import pytest

from keras_nalu import NPU, RealNPU, formulas, snap_weights
from nalu_research.seed_batched import LAYERS, StaticBenchmark, forward

pytestmark = pytest.mark.backends

to_np = keras.ops.convert_to_numpy
constant = keras.initializers.Constant
RNG = np.random.default_rng(0)


def numpy_npu(x, real, imaginary, gate):
    """Heim et al.'s NPU in complex NumPy: the real part of
    `exp(log(x_gated) @ (W_re + i W_im))`, `log` of a negative number
    `log |x| + i pi`."""
    r = gate * np.abs(x) + 1 - gate
    k = gate * (x < 0)
    log_x = np.log(r) + 1j * np.pi * k
    return np.real(np.exp(log_x @ (real + 1j * imaginary)))


def npu(units, real, imaginary, gate=None):
    layer = NPU(
        units,
        gated=gate is not None,
        kernel_initializer=keras.initializers.Constant(real),
        imaginary_initializer=keras.initializers.Constant(imaginary),
        **(
            {}
            if gate is None
            else {"gate_initializer": keras.initializers.Constant(gate)}
        ),
    )
    layer.build((None, real.shape[0]))
    return layer


def test_npu_matches_complex_numpy_with_and_without_its_gate():
    x = RNG.uniform(-3, 3, (16, 4)).astype("float32")
    real = RNG.uniform(-1, 1, (4, 3)).astype("float32")
    imaginary = RNG.uniform(-0.5, 0.5, (4, 3)).astype("float32")
    gate = RNG.uniform(0, 1, 4).astype("float32")
    for g in (gate, None):
        want = numpy_npu(x.astype(np.float64), real, imaginary, 1.0 if g is None else g)
        got = to_np(npu(3, real, imaginary, g)(x))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_npu_with_no_imaginary_part_is_the_real_npu():
    x = RNG.uniform(-3, 3, (16, 4)).astype("float32")
    real = RNG.uniform(-1, 1, (4, 2)).astype("float32")
    gate = RNG.uniform(0, 1, 4).astype("float32")
    real_npu = RealNPU(
        2,
        kernel_initializer=keras.initializers.Constant(real),
        gate_initializer=keras.initializers.Constant(gate),
    )
    np.testing.assert_allclose(
        to_np(npu(2, real, np.zeros_like(real), gate)(x)), to_np(real_npu(x)), rtol=1e-6
    )


def test_npu_computes_signed_products_ratios_and_roots():
    x = np.array([[-2.0, 3.0, -4.0], [5.0, -0.5, 2.0]], "float32")
    real = np.array([[1.0, 1.0, 0.5], [1.0, 0.0, 0.0], [-1.0, -1.0, 0.0]], "float32")
    y = to_np(npu(3, real, np.zeros_like(real))(x))
    np.testing.assert_allclose(y[:, 0], x[:, 0] * x[:, 1] / x[:, 2], rtol=1e-6)
    np.testing.assert_allclose(y[:, 1], x[:, 0] / x[:, 2], rtol=1e-6)
    # A root of a negative input is complex: its real part, as Heim et al.'s.
    np.testing.assert_allclose(
        y[:, 2], np.real(np.sqrt(x[:, 0].astype(complex))), atol=1e-6
    )


def test_npu_penalty_is_zero_only_at_exact_weights():
    real = np.array([[1.0], [-1.0]], "float32")
    layer = npu(1, real, np.zeros_like(real), np.array([1.0, 0.0], "float32"))
    assert float(to_np(layer.penalty(layer.unit_weights()))) == 0.0
    layer.imaginary_kernel.assign([[0.2], [0.0]])
    assert float(to_np(layer.penalty(layer.unit_weights()))) == pytest.approx(0.1)


def test_npu_stays_finite_at_zero_and_on_overflow():
    x = np.array([[0.0, 1e30], [-0.0, -1e30]], "float32")
    real = np.array([[-1.0], [1.0]], "float32")
    y = to_np(npu(1, real, np.full_like(real, 0.3))(x))
    assert np.all(np.isfinite(y))


def test_a_trained_looking_npu_snaps_to_the_exact_ratio_and_reads_as_one():
    real = np.array([[0.97], [-1.02], [0.03]], "float32")
    imaginary = np.array([[0.01], [-0.02], [0.0]], "float32")
    model = keras.Sequential(
        [
            keras.Input((3,)),
            NPU(
                1,
                kernel_initializer=constant(real),
                imaginary_initializer=constant(imaginary),
                gate_initializer=constant([0.99, 0.98, 0.05]),
            ),
        ]
    )
    x = RNG.uniform(-100, 100, (200, 3)).astype("float32")
    x[np.abs(x) < 1] = 1.0
    y = (x[:, 0] / x[:, 1])[:, None]
    snapped, report = snap_weights(model, {"wide": (x, y)})
    assert report["wide"]["after"] < 1e-6
    layer = snapped.layers[0]
    np.testing.assert_array_equal(to_np(layer.imaginary_kernel), 0.0)
    np.testing.assert_array_equal(to_np(layer.effective_gate), [1.0, 1.0, 0.0])
    assert formulas(snapped, ["a", "b", "c"]) == ["y0 = a/b"]


def test_the_engine_trains_the_npu_through_its_protocol():
    assert LAYERS["npu"] is NPU
    bench = StaticBenchmark("nau-npu", "div", [0, 1], eval_size=64)
    assert set(bench.params) == {"kernel_0", "kernel_1", "imaginary_kernel_1", "gate_1"}
    bench.run(20, eval_every=10)
    x = RNG.uniform(1, 2, (5, bench.input_size)).astype("float32")
    for index in range(2):  # each run's Keras model computes the engine's forward
        model = bench.keras_model(index)
        assert isinstance(model.layers[1], NPU)
        one = {name: value[index : index + 1] for name, value in bench.params.items()}
        np.testing.assert_allclose(
            to_np(model(x)).ravel(),
            to_np(forward("nau-npu", one, x[None])).ravel(),
            rtol=1e-5,
        )
