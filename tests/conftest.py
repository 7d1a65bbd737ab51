import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402


@pytest.fixture(autouse=True)
def _seeded_float32():
    """Every test starts seeded, under the float32 policy, and leaves it so."""
    keras.utils.set_random_seed(1234)
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy(policy)


# Modules whose doctests read data through the research extra.
RESEARCH_DOCTESTS = ("nalu_research/tasks/mnist.py",)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.split("::")[0] in RESEARCH_DOCTESTS:
            item.add_marker(pytest.mark.research)


def gradients(layer, x):
    """`{weight path: gradient of sum(layer(x))}` for every trainable weight."""
    with tf.GradientTape() as tape:
        loss = keras.ops.sum(layer(x))
    grads = tape.gradient(loss, layer.trainable_weights)
    return {
        w.path: None if g is None else keras.ops.convert_to_numpy(g)
        for w, g in zip(layer.trainable_weights, grads, strict=True)
    }


def assert_gradients_reach_every_weight(layer, x):
    grads = gradients(layer, x)
    assert grads, "no trainable weights"
    for path, grad in grads.items():
        assert grad is not None, f"no gradient reaches {path}"
        assert np.all(np.isfinite(grad)), f"non-finite gradient for {path}"
        assert np.any(grad != 0), f"zero gradient for {path}"


def constant(value):
    return keras.initializers.Constant(value)
