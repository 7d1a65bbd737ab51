import os
from collections import Counter

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

# Keras is imported where it is used: pytest-xdist's controller loads this
# file too, and would pay Keras's import (about 3 s) before starting workers.
# The helpers the tests share are in tests/helpers.py.


@pytest.fixture(autouse=True)
def _seeded_float32():
    """Every test starts seeded, under the float32 policy, and leaves it so."""
    import keras

    keras.utils.set_random_seed(1234)
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy(policy)


# Modules whose doctests read data through the research extra.
RESEARCH_DOCTESTS = ("nalu_research/tasks/mnist.py",)


def pytest_collection_modifyitems(items):
    import keras

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
