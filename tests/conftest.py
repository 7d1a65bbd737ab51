import os
from collections import Counter

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


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
    backend = keras.backend.backend()
    for item in items:
        if item.nodeid.split("::")[0] in RESEARCH_DOCTESTS:
            item.add_marker(pytest.mark.research)
        if backend != "tensorflow" and item.get_closest_marker("tensorflow"):
            item.add_marker(
                pytest.mark.skip(reason=f"needs the tensorflow backend, not {backend}")
            )
    schedule_longest_first(items)


def schedule_longest_first(items):
    """Orders the files as `make test`'s pytest-xdist workers take them
    (`--dist loadfile --no-loadscope-reorder`: a free worker takes the next
    file): the files with a test that starts processes (marked `processes`,
    the longest) first, then the others, most tests first. Started last, a
    long file keeps one worker busy while the other has nothing left."""

    def file(item):
        return item.nodeid.split("::")[0]

    counts = Counter(map(file, items))
    first = {file(item) for item in items if item.get_closest_marker("processes")}
    items.sort(key=lambda item: (file(item) not in first, -counts[file(item)]))


def gradients(layer, x):
    """`{weight path: gradient of sum(layer(x))}` for every trainable weight,
    on the backend the tests run on (KERAS_BACKEND)."""
    if not layer.built:
        layer(x)
    weights = layer.trainable_weights
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        def loss(values):
            outputs, _ = layer.stateless_call(
                values, [w.value for w in layer.non_trainable_weights], x
            )
            return keras.ops.sum(outputs)

        grads = jax.grad(loss)([w.value for w in weights])
    elif backend == "torch":
        import torch

        loss = keras.ops.sum(layer(x))
        grads = torch.autograd.grad(loss, [w.value for w in weights], allow_unused=True)
    else:
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = keras.ops.sum(layer(x))
        grads = tape.gradient(loss, weights)
    return {
        w.path: None if g is None else keras.ops.convert_to_numpy(g)
        for w, g in zip(weights, grads, strict=True)
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
