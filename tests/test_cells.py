import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU, NACCell, NALUCell
from tests.conftest import assert_gradients_reach_every_weight, constant
from tests.layer_test_case import run_layer_test
from tests.test_nalu import FULL_KWARGS, RANDOM_NORMAL_INIT
from tests.test_ops import np_nac_weight, np_nalu

pytestmark = pytest.mark.backends

CELLS = [NACCell, NALUCell]


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


@pytest.mark.parametrize("cell_cls, layer_cls", [(NACCell, NAC), (NALUCell, NALU)])
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
    assert cell.w_hat.shape == (4 + 3, 3)
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
