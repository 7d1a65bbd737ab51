import json

import keras
import numpy as np
import pytest

from keras_nalu import NAU
from keras_nalu.regularizers import Sparsity

pytestmark = pytest.mark.backends


def test_sparsity_is_the_clipped_penalty_of_madsen_and_johansen():
    w = np.array([[1.0, 0.0, -1.0], [0.5, -0.25, 0.9], [1.7, -3.0, 0.1]], "float32")
    # Clipped to [-1, 1]: 1.7 and -3 count as 1 and -1.
    expected = 0.3 * np.mean([0, 0, 0, 0.5, 0.25, 0.1, 0, 0, 0.1])
    np.testing.assert_allclose(float(Sparsity(0.3)(w)), expected, rtol=1e-6)
    assert float(Sparsity(0.0)(w)) == 0.0


def test_sparsity_pulls_to_the_nearest_of_minus_one_zero_and_one():
    w = keras.Variable(np.array([[0.2, 0.8], [-0.3, 1.0]], "float32"))
    optimizer = keras.optimizers.SGD(0.1)
    for _ in range(30):
        optimizer.apply([_gradient(Sparsity(1.0), w)], [w])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(w), [[0.0, 1.0], [0.0, 1.0]], atol=0.03
    )


def _gradient(regularizer, w):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = regularizer(w)
        return tape.gradient(loss, w)
    if backend == "jax":
        import jax

        return jax.grad(lambda v: regularizer(v))(w.value)
    value = w.value.detach().requires_grad_(True)
    regularizer(value).backward()
    return value.grad


def test_sparsity_config_round_trips_and_serializes():
    regularizer = Sparsity(0.25)
    assert regularizer.get_config() == {"strength": 0.25}
    revived = keras.regularizers.deserialize(
        json.loads(json.dumps(keras.regularizers.serialize(regularizer)))
    )
    assert isinstance(revived, Sparsity) and revived.strength == 0.25
    layer = NAU(2, kernel_regularizer=Sparsity(0.5))
    assert NAU.from_config(layer.get_config()).kernel_regularizer.strength == 0.5


@pytest.mark.parametrize("strength", [-1.0, float("nan"), "0.1", True])
def test_sparsity_rejects_a_bad_strength(strength):
    with pytest.raises(ValueError, match=r"strength.*finite number >= 0"):
        Sparsity(strength)


def test_sparsity_adds_to_a_model_loss_once_per_batch():
    # As a cell's regularizer it is evaluated outside the RNN's loop: once,
    # however long the sequence.
    from keras_nalu import NAUCell

    cell = NAUCell(
        1, kernel_regularizer=Sparsity(1.0), recurrent_regularizer=Sparsity(2.0)
    )
    rnn = keras.layers.RNN(cell)
    rnn(np.ones((2, 50, 1), "float32"))
    cell.kernel.assign(np.array([[0.25]], "float32"))
    cell.recurrent_kernel.assign(np.array([[0.625]], "float32"))
    losses = [float(keras.ops.convert_to_numpy(loss)) for loss in rnn.losses]
    np.testing.assert_allclose(losses, [0.25, 2 * 0.375], rtol=1e-6)
