"""keras_nalu.formulas: a model's outputs written as algebra of its inputs."""

import contextlib

import keras
import numpy as np
import pytest
import sympy

from keras_nalu import (
    INALU,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    RealNPU,
    expressions,
    formulas,
    snap_weights,
)

pytestmark = pytest.mark.backends

RNG = np.random.default_rng(0)


def model_of(inputs, *layers):
    return keras.Sequential([keras.Input((inputs,)), *layers])


def saturated(w):
    """`(w_hat, m_hat)` with `tanh(w_hat) * sigmoid(m_hat)` exactly `w` (-1, 0, 1)."""
    w = np.asarray(w, "float32")
    return 40.0 * w, np.full_like(w, 40.0)


def evaluate(model, x, **kwargs):
    """The formulas of `model` evaluated on `x` by SymPy, `(batch, outputs)`."""
    found = expressions(model, **kwargs)
    symbols = sympy.symbols(f"x0:{x.shape[1]}", real=True)
    fn = sympy.lambdify(symbols, found, "numpy")
    return np.stack([np.broadcast_to(v, x.shape[:1]) for v in fn(*x.T)], axis=-1)


def test_nau_then_nmu_reads_as_a_product_of_sums():
    model = model_of(4, NAU(2), NMU(1))
    model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 0], [0, -1]])
    model.layers[1].kernel.assign([[1], [1]])
    assert formulas(model) == ["y0 = -x3*(x0 + x1)"]


def test_weights_off_their_integers_show_their_digits():
    model = model_of(2, NAU(1))
    model.layers[0].kernel.assign([[0.9999], [0.37]])
    assert formulas(model) == ["y0 = x0 + 0.37*x1"]
    assert formulas(model, atol=1e-5, digits=2) == ["y0 = 1.0*x0 + 0.37*x1"]


def test_names_of_inputs_and_outputs():
    model = model_of(2, NAC(2))
    w_hat, m_hat = saturated([[1, 0], [-1, 1]])
    model.layers[0].set_weights([w_hat, m_hat])
    found = formulas(model, ["price", "tax"], ["net", "tax_only"])
    assert found == ["net = price - tax", "tax_only = tax"]


def test_a_nalu_gate_decided_on_the_data_leaves_one_path():
    model = model_of(3, NALU(1))
    w_hat, m_hat = saturated([[1], [-1], [0]])
    layer = model.layers[0]
    layer.set_weights([w_hat, m_hat, np.full((3, 1), -5.0, "float32")])
    x = RNG.uniform(1, 10, (64, 3)).astype("float32")
    # the gate closes on positive inputs: the multiplicative path, x0 / x1
    assert formulas(model, x=x) == ["y0 = Abs(x0)/Abs(x1)"]
    assert formulas(model, x=x, positive=True) == ["y0 = x0/x1"]
    # without data the gate stays in the formula
    assert "sigmoid(-5*x0 - 5*x1 - 5*x2)" in formulas(model)[0]


def test_nmru_divides_and_inalu_keeps_the_sign():
    model = model_of(2, NMRU(1))
    model.layers[0].kernel.assign([[1], [0], [0], [1]])
    assert formulas(model) == ["y0 = x0/x1"]
    inalu = INALU(1)
    model = model_of(2, inalu)
    inalu.mul_w_hat.assign(saturated([[1], [1]])[0])
    inalu.mul_m_hat.assign(saturated([[1], [1]])[1])
    inalu.gate.assign([-40.0])  # closed: the multiplicative path
    assert formulas(model) == ["y0 = x0*x1"]


def test_a_real_npu_reads_as_powers_and_as_its_math_between_them():
    model = model_of(3, NAU(2), RealNPU(1))
    model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1]])
    model.layers[1].kernel.assign([[1], [-1]])
    model.layers[1].gate.assign([1.0, 1.0])
    assert formulas(model) == ["y0 = (x0 + x1)/x2"]
    model.layers[1].gate.assign([1.0, 0.0])  # the divisor is gated out
    assert formulas(model) == ["y0 = x0 + x1"]
    model.layers[1].kernel.assign([[0.7], [-1.0]])
    model.layers[1].gate.assign([0.9, 1.0])
    x = RNG.uniform(-3, 3, (32, 3)).astype("float32")
    np.testing.assert_allclose(
        evaluate(model, x), keras.ops.convert_to_numpy(model(x)), rtol=1e-5
    )


def test_dense_layers_with_their_activation():
    model = model_of(2, keras.layers.Dense(1, activation="relu"), keras.layers.Dense(1))
    model.layers[0].set_weights([np.array([[2.0], [0.0]]), np.array([0.5])])
    model.layers[1].set_weights([np.array([[-1.0]]), np.array([0.0])])
    assert formulas(model) == ["y0 = -relu(2*x0 + 0.5)"]


def test_a_trained_stack_evaluates_to_what_the_model_computes():
    # Weights anywhere in their range, not only exact ones: the formula is
    # the model's function, digits included.
    keras.utils.set_random_seed(3)
    model = model_of(5, NAU(3), NMU(2), NAC(1))
    x = RNG.uniform(1, 3, (32, 5)).astype("float32")
    got = evaluate(model, x, digits=12, atol=0.0)
    want = keras.ops.convert_to_numpy(model(x))
    # float32 sums cancel near 0: errors relative to the outputs' scale
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).mean())


def test_a_sign_retrieving_nmru_between_its_weights_reads_as_it_computes():
    model = model_of(3, NMRU(1, sign_retrieval=True))
    model.layers[0].kernel.assign([[0.3], [1.0], [0.0], [0.0], [0.6], [0.0]])
    x = RNG.uniform(-3, 3, (32, 3)).astype("float32")
    got = evaluate(model, x, digits=12, atol=0.0)
    np.testing.assert_allclose(got, keras.ops.convert_to_numpy(model(x)), rtol=1e-5)
    model.layers[0].kernel.assign([[1.0], [0.0], [0.0], [0.0], [1.0], [0.0]])
    assert formulas(model) == ["y0 = x0/x1"]


def test_a_functional_chain_is_read():
    inputs = keras.Input((2,))
    first, second = NAU(2), NAU(1)
    model = keras.Model(inputs, second(first(inputs)))
    first.kernel.assign([[1, 0], [1, 1]])
    second.kernel.assign([[1], [-1]])
    assert formulas(model) == ["y0 = x0"]


def test_branches_joined_by_merge_layers_are_read():
    """The mystery task's shape: a NAU and an NMU side by side, concatenated,
    then a NAU; and skips joined by Add, Subtract and Multiply."""
    inputs = keras.Input((3,))
    nau, nmu, out = NAU(1), NMU(1), NAU(2)
    joined = keras.layers.Concatenate()([nau(inputs), nmu(inputs)])
    model = keras.Model(inputs, out(joined))
    nau.kernel.assign([[1], [-1], [0]])
    nmu.kernel.assign([[0], [1], [1]])
    out.kernel.assign([[1, 0], [1, 1]])
    assert formulas(model) == ["y0 = x0 + x1*x2 - x1", "y1 = x1*x2"]
    x = RNG.uniform(-2, 2, (16, 3)).astype("float32")
    np.testing.assert_allclose(
        evaluate(model, x), keras.ops.convert_to_numpy(model(x)), rtol=1e-5
    )
    assert formulas(model, x=x) == formulas(model)  # values through the merge
    a, b = NAU(1, kernel_initializer="ones"), NAU(1, kernel_initializer="ones")
    merged = {
        keras.layers.Add: "y0 = 2*x0 + 2*x1 + 2*x2",
        keras.layers.Subtract: "y0 = 0",
        keras.layers.Multiply: "y0 = (x0 + x1 + x2)**2",
    }
    for merge, formula in merged.items():
        skip = keras.Model(inputs, merge()([a(inputs), b(inputs)]))
        assert formulas(skip) == [formula]


def test_a_model_with_other_operations_is_refused():
    inputs = keras.Input((2,))
    first, second = NAU(2), NAU(2)
    model = keras.Model(inputs, second(inputs) + 0 * first(inputs))
    with pytest.raises(ValueError, match="supported are"):
        formulas(model)
    stacked = keras.layers.Concatenate(axis=0)([NAU(2)(inputs), inputs])
    with pytest.raises(ValueError, match="axis 0, expected the last axis"):
        formulas(keras.Model(inputs, stacked))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"input_names": ["a"]}, "input_names"),
        ({"input_names": "ab"}, "input_names"),
        ({"output_names": ["y", "z"]}, "output_names"),
        ({"atol": -1.0}, "atol"),
        ({"digits": 0}, "digits"),
        ({"positive": "yes"}, "positive"),
        ({"x": np.ones((3, 5))}, r"x of shape \(3, 5\)"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    model = model_of(2, NAU(1))
    with pytest.raises(ValueError, match=match):
        formulas(model, **kwargs)


def test_an_unbuilt_model_is_refused():
    with pytest.raises(ValueError, match="built keras.Model"):
        formulas(keras.Sequential([NAU(1)]))


def test_a_fit_that_ended_before_the_penalty_is_named(recwarn):
    # The default schedule starts at step 20,000: a 10-step fit never reaches
    # it, and reading the formulas says so; an untrained model (weights set by
    # hand) and a fit past the start do not warn.
    x = np.random.default_rng(0).uniform(1, 2, (64, 2)).astype("float32")
    y = x.prod(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((2,)), NMU(1)])
    formulas(model)
    assert not [w for w in recwarn if "penalty" in str(w.message)]
    model.compile("adam", "mse")
    model.fit(x, y, batch_size=32, epochs=5, verbose=0)
    said = r"NMU layer 'nmu.*' trained 10 steps, all before its sparsity penalty"
    with pytest.warns(
        UserWarning, match=said + r" starts \(regularization_start=20,000"
    ):
        formulas(model)
    with pytest.warns(UserWarning, match=said):
        with contextlib.suppress(ValueError):  # snapped or not, it warned
            snap_weights(model, (x, y))
    started = keras.Sequential(
        [keras.Input((2,)), NMU(1, regularization_start=4, regularization_end=8)]
    )
    started.compile("adam", "mse")
    started.fit(x, y, batch_size=32, epochs=5, verbose=0)
    recwarn.clear()
    formulas(started)
    assert not [w for w in recwarn if "penalty" in str(w.message)]
