from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU, NAU, NACCell, NALUCell, NAUCell
from keras_nalu.regularizers import Sparsity
from keras_nalu.snapping import snap_weights
from tests.helpers import assert_gradients_reach_every_weight, constant
from tests.test_nalu import RANDOM_NORMAL_INIT
from tests.test_ops import np_nac_weight, np_nalu

pytestmark = pytest.mark.backends

CELLS = [NACCell, NALUCell, NAUCell]


def numpy_weights(cell):
    return [keras.ops.convert_to_numpy(w) for w in cell.weights]


def test_nau_cell_state_weights_start_at_the_recurrent_initializer():
    cell = NAUCell(3, kernel_initializer="ones")
    cell.build((None, 2))
    assert [w.name for w in cell.weights] == ["kernel", "recurrent_kernel"]
    kernel, recurrent = numpy_weights(cell)
    np.testing.assert_array_equal(kernel, np.ones((2, 3)))
    np.testing.assert_array_equal(recurrent, np.eye(3))
    cell = NAUCell(3, kernel_initializer="ones", diagonal_state=True)
    cell.build((None, 2))
    np.testing.assert_array_equal(numpy_weights(cell)[1], np.ones(3))
    cell = NAUCell(3, kernel_initializer="ones", recurrent_initializer=None)
    cell.build((None, 2))
    np.testing.assert_array_equal(numpy_weights(cell)[1], np.ones((3, 3)))
    assert cell.get_config()["recurrent_initializer"] is None
    assert NAUCell.from_config(cell.get_config()).recurrent_initializer is None


def test_nau_cell_input_weights_are_drawn_over_the_rows_of_input_and_state():
    # One draw over [x_t, h_{t-1}], as the NAU over their concatenation: a
    # fan-based initializer's range counts the state, and the cell draws the
    # same numbers as when its state rows lived in its kernel.
    keras.utils.set_random_seed(3)
    cell = NAUCell(3, recurrent_initializer=None)
    cell.build((None, 2))
    keras.utils.set_random_seed(3)
    nau = NAU(3)
    nau.build((None, 5))
    drawn = keras.ops.convert_to_numpy(nau.kernel)
    kernel, recurrent = numpy_weights(cell)
    np.testing.assert_array_equal(kernel, drawn[:2])
    np.testing.assert_array_equal(recurrent, drawn[2:])


# Saved by keras_nalu 0.x before the state weight was apart (`git show
# 1324ad9`): `RNN(NAUCell(2))` and `RNN(NAUCell(2, diagonal_state=True))` over
# 3 inputs, each one kernel of 5 rows with distinct values.
OLD_LAYOUT = Path(__file__).parent / "data" / "nau_cell_kernel_layout.keras"


def test_a_nau_cell_saved_with_its_state_rows_in_its_kernel_loads():
    model = keras.saving.load_model(OLD_LAYOUT)
    full, diagonal = (model.get_layer(n).cell for n in ("rnn_full", "rnn_diag"))
    kernel, recurrent = numpy_weights(full)
    np.testing.assert_array_equal(kernel, [[0.5, -0.25], [1.0, 0.0], [-1.0, 0.75]])
    np.testing.assert_array_equal(recurrent, [[0.125, 1.0], [-0.5, 0.375]])
    kernel, recurrent = numpy_weights(diagonal)
    np.testing.assert_array_equal(kernel, [[0.25, 0.5], [-0.75, 1.0], [0.0, -0.125]])
    np.testing.assert_array_equal(recurrent, [1.0, 0.875])  # the masked diagonal
    # What the model computed when it was saved (printed then).
    x = np.arange(12, dtype="float32").reshape(1, 4, 3) / 4
    sequence, last = (keras.ops.convert_to_numpy(y) for y in model(x))
    np.testing.assert_array_equal(
        sequence[0],
        [
            [-0.25, 0.375],
            [-0.09375, 0.640625],
            [0.16796875, 1.271484375],
            [0.26025390625, 2.144775390625],
        ],
    )
    np.testing.assert_array_equal(last, [[-3.0, 6.3087158203125]])


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
    cell.kernel.assign(np.array([[0.25, 0.5]], "float32"))
    state = [0.125, 0.25] if diagonal_state else [0.125, 0.25, 0.5, 0.25]
    cell.recurrent_kernel.assign(
        np.array(state if diagonal_state else [[0.875, 0.25], [0.5, 0.75]], "float32")
    )
    losses = [
        float(keras.ops.convert_to_numpy(loss)) for loss in rnn.losses
    ]  # the kernel's, the state's
    np.testing.assert_allclose(
        losses, [np.mean([0.25, 0.5]), 10 * np.mean(state)], rtol=1e-6
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
    assert [w.name for w in cell.weights] == ["kernel", "recurrent_kernel"]


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
    # The weights read [x_t, h_{t-1}]: input_dim + units rows (the NAUCell
    # keeps the state's apart).
    rows = [w.shape[0] for w in cell.trainable_weights if w.name != "gate_kernel"]
    assert sum(rows) == (4 + 3) * (1 if cell_cls is NAUCell else 2)
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
    w = np.clip(np.concatenate(numpy_weights(cell)), -1, 1)
    h = np.zeros((4, 2))
    for t in range(5):
        h = np.concatenate([x[:, t], h], -1) @ w
        np.testing.assert_allclose(y[:, t], h, rtol=1e-5, atol=1e-6)


def test_nau_cell_with_a_diagonal_state_reads_only_its_own_state():
    cell = NAUCell(2, kernel_initializer="random_normal", diagonal_state=True)
    cell.build((None, 3))
    assert cell.recurrent_kernel.shape == (2,)
    cell.kernel.assign(np.full((3, 2), 0.5, "float32"))
    cell.recurrent_kernel.assign(np.full((2,), 0.5, "float32"))
    w = keras.ops.convert_to_numpy(cell.effective_kernel)
    np.testing.assert_array_equal(w, [[0.5, 0.5]] * 3)
    w_h = keras.ops.convert_to_numpy(cell.effective_recurrent_kernel)
    np.testing.assert_array_equal(w_h, [0.5, 0.5])
    x = np.random.default_rng(0).uniform(-2, 2, size=(4, 5, 3)).astype("float32")
    y = keras.ops.convert_to_numpy(keras.layers.RNN(cell, return_sequences=True)(x))
    h = np.zeros((4, 2))
    for t in range(5):
        h = x[:, t] @ w[:3] + h * 0.5
        np.testing.assert_allclose(y[:, t], h, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="diagonal_state"):
        NAUCell(2, diagonal_state="yes")


@pytest.mark.parametrize(
    "make_cell, expected",
    [
        # The rows of W that read h_{t-1} (after the 3 input rows): W[3 + j, j].
        (lambda: NACCell(2, w_hat_initializer="zeros"), [0.0, 0.0]),
        (lambda: NAUCell(2), [1.0, 1.0]),  # the identity by default
        (lambda: NAUCell(2, diagonal_state=True), [1.0, 1.0]),
    ],
)
def test_state_weights_are_each_units_weight_on_its_own_state(make_cell, expected):
    cell = make_cell()
    with pytest.raises(ValueError, match="`state_weights` of .* not available"):
        _ = cell.state_weights
    cell.build((None, 3))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(cell.state_weights), expected
    )
    if isinstance(cell, NACCell):
        w_hat = np.zeros((5, 2), "float32")
        w_hat[3:] = [[5.0, -5.0], [-5.0, 0.5]]  # state rows
        cell.w_hat.assign(w_hat)
        cell.m_hat.assign(np.full((5, 2), 20.0, "float32"))  # sigmoid = 1
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(cell.state_weights),
            np.tanh([5.0, 0.5]),
            rtol=1e-6,
        )
    elif not cell.diagonal_state:
        cell.recurrent_kernel.assign([[0.25, 0.5], [-2.0, 3.0]])  # clipped
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(cell.state_weights), [0.25, 1.0]
        )
    assert not hasattr(NALUCell(2), "state_weights")  # no single state weight


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
    w_h = keras.ops.convert_to_numpy(model.layers[0].cell.effective_recurrent_kernel)
    np.testing.assert_allclose(np.diag(w_h), 1.0, atol=1e-6)  # the state weights

    long = counts(20, 1000)
    snapped, report = snap_weights(model, {"length 1000": long})
    assert report["length 1000"]["after"] == 0.0
    cell = snapped.layers[0].cell
    for kernel in (cell.effective_kernel, cell.effective_recurrent_kernel):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(kernel), np.eye(3))


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


def test_a_nau_cell_snaps_only_its_state_weights_when_named():
    # A running sum read through inputs weighted 0.3 and 0.7 (no exact value):
    # snapping the state weight alone makes the sum exact, the input weights
    # stay as trained; snapping all would round them too.
    cell = NAUCell(1, diagonal_state=True)
    with pytest.raises(ValueError, match="`snap` of .* not available"):
        cell.snap(["recurrent_kernel"])
    cell.build((None, 2))
    cell.kernel.assign(np.array([[0.3], [0.7]], "float32"))
    cell.recurrent_kernel.assign(np.array([0.99997], "float32"))
    x = np.ones((1, 1000, 2), "float32")
    rnn = keras.layers.RNN(cell)
    assert abs(float(keras.ops.convert_to_numpy(rnn(x))[0, 0]) - 1000.0) > 1e-2
    cell.snap(["recurrent_kernel"])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(cell.state_weights), [1])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(cell.kernel), [[0.3], [0.7]], rtol=1e-7
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rnn(x)), [[1000.0]], rtol=1e-6
    )
    cell.snap()
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(cell.kernel), [[0], [1]])
    for names in ("recurrent_kernel", ["state"], [1]):
        with pytest.raises(
            ValueError, match=r"`names`.*\['kernel', 'recurrent_kernel'\]"
        ):
            cell.snap(names)


def test_a_nalu_scales_its_gate_only_when_snapping_every_weight():
    layer = NALU(1)
    layer.build((None, 2))
    gate = keras.ops.convert_to_numpy(layer.gate_kernel).copy()
    layer.snap(["kernel"])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer.gate_kernel), gate)
    layer.snap()
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.gate_kernel), 1e4 * gate, rtol=1e-6
    )
