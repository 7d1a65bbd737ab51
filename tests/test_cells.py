import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU, NAU, NACCell, NALUCell, NAUCell
from keras_nalu.regularizers import Sparsity
from keras_nalu.snapping import snap_weights
from tests.conftest import assert_gradients_reach_every_weight, constant
from tests.layer_test_case import run_layer_test
from tests.test_nalu import FULL_KWARGS, RANDOM_NORMAL_INIT
from tests.test_ops import np_nac_weight, np_nalu

pytestmark = pytest.mark.backends

CELLS = [NACCell, NALUCell, NAUCell]


def test_nac_cell_public_api(tmp_path):
    run_layer_test(
        NACCell,
        {
            "units": 2,
            "w_hat_initializer": "glorot_normal",
            "m_hat_initializer": "random_uniform",
            "w_hat_regularizer": "l2",
            "m_hat_constraint": "non_neg",
        },
        input_shape=(4, 6, 3),
        expected_output_shape=(4, 2),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("tied_weights", [True, False])
def test_nalu_cell_public_api(tmp_path, tied_weights):
    run_layer_test(
        NALUCell,
        {**FULL_KWARGS, "tied_weights": tied_weights},
        input_shape=(4, 6, 3),
        expected_output_shape=(4, 2),
        mixed_precision_output_dtype="float16",  # the RNN wrapper's dtype
        tmp_path=tmp_path,
    )


def test_nau_cell_public_api(tmp_path):
    run_layer_test(
        NAUCell,
        {
            "units": 2,
            "kernel_initializer": "glorot_normal",
            "recurrent_initializer": "orthogonal",
            "kernel_regularizer": Sparsity(0.1),
            "recurrent_regularizer": Sparsity(1.0),
            "kernel_constraint": "non_neg",
            "centered_gradient": True,
            "diagonal_state": True,
        },
        input_shape=(4, 6, 3),
        expected_output_shape=(4, 2),
        tmp_path=tmp_path,
    )


def test_nau_cell_state_rows_start_at_the_recurrent_initializer():
    cell = NAUCell(3, kernel_initializer="ones")
    cell.build((None, 2))
    kernel = keras.ops.convert_to_numpy(cell.kernel)
    np.testing.assert_array_equal(kernel, np.vstack([np.ones((2, 3)), np.eye(3)]))
    cell = NAUCell(3, kernel_initializer="ones", recurrent_initializer=None)
    cell.build((None, 2))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(cell.kernel), 1.0)
    assert cell.get_config()["recurrent_initializer"] is None
    assert NAUCell.from_config(cell.get_config()).recurrent_initializer is None


@pytest.mark.parametrize("diagonal_state", [False, True])
def test_nau_cell_regularizes_its_input_and_state_rows_apart(diagonal_state):
    cell = NAUCell(
        2,
        kernel_regularizer=Sparsity(1.0),
        recurrent_regularizer=Sparsity(10.0),
        diagonal_state=diagonal_state,
    )
    rnn = keras.layers.RNN(cell)
    rnn(np.ones((1, 4, 1), "float32"))
    cell.kernel.assign(np.array([[0.25, 0.5], [0.875, 0.25], [0.5, 0.75]], "float32"))
    state = [0.125, 0.25] if diagonal_state else [0.125, 0.25, 0.5, 0.25]
    (loss,) = rnn.losses
    np.testing.assert_allclose(
        float(loss), np.mean([0.25, 0.5]) + 10 * np.mean(state), rtol=1e-6
    )


def test_nau_cell_takes_no_schedule():
    # Its call runs inside the RNN's loop, where no step counter can advance.
    with pytest.raises(TypeError, match="regularization_start"):
        NAUCell(2, regularization_start=10)
    cell = NAUCell(2)
    keras.layers.RNN(cell)(np.ones((1, 3, 2), "float32"))
    assert not hasattr(cell, "regularization_step")
    assert cell.penalty_schedule is None
    assert "regularization_start" not in cell.get_config()
    assert [w.name for w in cell.weights] == ["kernel"]


@pytest.mark.parametrize(
    "cell_cls, layer_cls", [(NACCell, NAC), (NALUCell, NALU), (NAUCell, NAU)]
)
def test_cell_contract(cell_cls, layer_cls):
    cell = cell_cls(3)
    assert isinstance(cell, layer_cls)
    assert cell.state_size == 3 and cell.output_size == 3
    (state,) = cell.get_initial_state(batch_size=5)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(state), np.zeros((5, 3)))
    output, (new_state,) = cell(np.ones((5, 4), "float32"), [state])
    assert output.shape == (5, 3)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(output), keras.ops.convert_to_numpy(new_state)
    )
    # The weights read [x_t, h_{t-1}]: input_dim + units rows.
    assert cell.trainable_weights[0].shape == (4 + 3, 3)
    # Symbolic calls return the same structure, as Keras's own cells do.
    output, (new_state,) = cell_cls(3)(keras.Input((4,)), [keras.Input((3,))])
    assert tuple(output.shape) == (None, 3) and tuple(new_state.shape) == (None, 3)


@pytest.mark.parametrize("cell_cls", CELLS)
def test_integer_inputs_are_cast_to_float(cell_cls):
    rnn = keras.layers.RNN(cell_cls(2))
    x = np.random.default_rng(0).integers(1, 4, size=(2, 5, 3))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rnn(x.astype("int32"))),
        keras.ops.convert_to_numpy(rnn(x.astype("float32"))),
    )


def test_nac_cell_keeps_an_exact_running_sum_over_1000_steps():
    cell = NACCell(
        1, w_hat_initializer=constant(20.0), m_hat_initializer=constant(20.0)
    )
    rnn = keras.layers.RNN(cell, return_sequences=True)
    x = np.random.default_rng(0).integers(-100, 101, size=(3, 1000, 1))
    y = keras.ops.convert_to_numpy(rnn(x.astype("float32")))
    np.testing.assert_array_equal(y[..., 0], np.cumsum(x[..., 0], axis=1))


def test_nau_cell_matches_a_numpy_loop():
    cell = NAUCell(2, kernel_initializer="random_normal")
    x = np.random.default_rng(0).uniform(-2, 2, size=(4, 5, 3)).astype("float32")
    y = keras.ops.convert_to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    w = np.clip(keras.ops.convert_to_numpy(cell.kernel), -1, 1)
    h = np.zeros((4, 2))
    for t in range(5):
        h = np.concatenate([x[:, t], h], -1) @ w
        np.testing.assert_allclose(y[:, t], h, rtol=1e-5, atol=1e-6)


def test_nau_cell_with_a_diagonal_state_reads_only_its_own_state():
    cell = NAUCell(2, kernel_initializer="random_normal", diagonal_state=True)
    cell.build((None, 3))
    cell.kernel.assign(np.full((5, 2), 0.5, "float32"))  # off-diagonal too
    w = keras.ops.convert_to_numpy(cell.effective_kernel)
    np.testing.assert_array_equal(w, [[0.5, 0.5]] * 3 + [[0.5, 0.0], [0.0, 0.5]])
    x = np.random.default_rng(0).uniform(-2, 2, size=(4, 5, 3)).astype("float32")
    y = keras.ops.convert_to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    h = np.zeros((4, 2))
    for t in range(5):
        h = x[:, t] @ w[:3] + h * 0.5
        np.testing.assert_allclose(y[:, t], h, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="diagonal_state"):
        NAUCell(2, diagonal_state="yes")


@pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="3,000 steps: 2 s on jax, 10-25 s on tensorflow and torch, where "
    "the public-API test fits the cell",
)
def test_nau_cell_learns_to_count_to_1000_exactly():
    # From a random start (not the identity), trained on sequences of 10
    # one-hot classes, the state weights are clipped at exactly 1 (a NAC's
    # tanh * sigmoid only approaches it), and the snapped cell counts
    # sequences of 1,000 without an error.
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)

    def counts(n, length):
        x = np.eye(3, dtype="float32")[rng.integers(0, 3, size=(n, length))]
        return x, x.sum(axis=1)

    cell = NAUCell(3, recurrent_initializer=None)
    model = keras.Sequential([keras.Input((None, 3)), keras.layers.RNN(cell)])
    model.compile(keras.optimizers.Adam(1e-2), "mse", steps_per_execution=20)
    model.fit(*counts(1000, 10), batch_size=50, epochs=150, verbose=0)
    w = keras.ops.convert_to_numpy(model.layers[0].cell.effective_kernel)
    np.testing.assert_allclose(np.diag(w[3:]), 1.0, atol=1e-6)  # the state weights

    long = counts(20, 1000)
    snapped, report = snap_weights(model, {"length 1000": long})
    assert report["length 1000"]["after"] == 0.0
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(snapped.layers[0].cell.effective_kernel),
        np.vstack([np.eye(3), np.eye(3)]),
    )


@pytest.mark.parametrize("tied_weights", [True, False])
def test_nalu_cell_matches_a_numpy_loop(tied_weights):
    cell = NALUCell(2, tied_weights=tied_weights, **RANDOM_NORMAL_INIT)
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(4, 5, 3)).astype("float32")
    y = keras.ops.convert_to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    np_ = keras.ops.convert_to_numpy
    w = np_nac_weight(np_(cell.w_hat), np_(cell.m_hat))
    mul_w = (
        None
        if tied_weights
        else np_nac_weight(np_(cell.mul_w_hat), np_(cell.mul_m_hat))
    )
    h = np.zeros((4, 2))
    for t in range(5):
        h = np_nalu(np.concatenate([x[:, t], h], -1), w, np_(cell.gate_kernel), mul_w)
        np.testing.assert_allclose(y[:, t], h, rtol=1e-4)


def test_nalu_cell_under_mixed_precision_computes_in_float32():
    # The cell keeps its state in float32; an RNN layer casts its output to
    # its own compute dtype, so a float32 RNN wrapper returns float32.
    keras.config.set_dtype_policy("mixed_float16")
    cell = NALUCell(
        1,
        w_hat_initializer=constant(20.0),
        m_hat_initializer=constant(20.0),
        gate_initializer=constant(20.0),  # open gate: a running sum
    )
    assert cell.compute_dtype == "float32"
    rnn = keras.layers.RNN(cell, dtype="float32")
    x = np.full((1, 3, 1), 30000.0, "float16")  # the sum 90000 > float16 max
    y = rnn(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float32"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y), [[90000.0]], rtol=1e-6)


@pytest.mark.parametrize("cell_cls", CELLS)
def test_gradients_reach_every_weight(cell_cls):
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(2, 4, 3)).astype("float32")
    rnn = keras.layers.RNN(cell_cls(2))
    assert_gradients_reach_every_weight(rnn, x)
