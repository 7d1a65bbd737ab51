"""examples/recurrent_cells.py: its data, a cell that holds each task
exactly, and a tiny run writing its record."""

import json

import keras
import numpy as np
import pytest

from keras_nalu import NAUCell
from nalu_research.experiments import recurrent_cells as cells

pytestmark = pytest.mark.research


@pytest.mark.parametrize("task", cells.TASKS)
def test_the_targets_are_the_running_quantities(task):
    x, y = cells.sample(task, 4, 7, seed=0)
    assert x.shape == (4, 7, 1) and y.shape == (4, 1)
    wide = x.astype("float64")[..., 0]
    want = wide.prod(axis=1) if task == "product" else wide.sum(axis=1)
    np.testing.assert_allclose(y[:, 0], want.astype("float32"))
    if task == "count":
        assert set(np.unique(x)) <= {0.0, 1.0}


def test_a_running_sum_is_exact_at_any_length_in_a_nau_cell():
    cell = NAUCell(1)
    model = keras.Sequential([keras.Input((None, 1)), keras.layers.RNN(cell)])
    cell.kernel.assign([[1.0]])
    cell.recurrent_kernel.assign([[1.0]])
    x, y = cells.sample("count", 64, cells.TEST_LENGTH, seed=1)
    assert cells.relative_error(model, x, y) == 0.0


def test_a_tiny_run_writes_every_row(tmp_path):
    path = tmp_path / "cells.json"
    status = cells.RecurrentCells().main(
        ["--seeds", "1", "--epochs", "1", "--examples", "64", "--json", str(path),
         "--checkpoint-dir", str(tmp_path / "ckpt")]
    )  # fmt: skip
    assert status == 0
    record = json.loads(path.read_text())
    runs = [(r["task"], r["cell"]) for r in record["runs"]]
    rows = [(t, c) for t in cells.TASKS for c in cells.CELLS]
    assert runs == [*rows, ("product", cells.LOG_SPACE)]
    header, lines = cells.table(record["runs"], 1)
    assert len(lines) == 10 and len(header) == len(lines[0]) == 5
