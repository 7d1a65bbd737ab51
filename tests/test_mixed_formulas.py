"""examples/mixed_formulas.py: its data, that its shapes can hold each formula
exactly, and a tiny run writing its record."""

import json

import keras
import numpy as np
import pytest

from nalu_research.experiments import mixed_formulas as mixed

pytestmark = pytest.mark.research


def test_the_targets_are_the_formulas_in_float64():
    x, y = mixed.sample("a/b + c", 5, mixed.TRAIN_RANGE, seed=0)
    a, b, c = x.astype("float64").T
    np.testing.assert_allclose(y[:, 0], (a / b + c).astype("float32"))
    assert x.dtype == y.dtype == np.float32 and x.min() >= 1 and x.max() <= 10


def exact(recipe, assign):
    """The model of `recipe` with its weights set by `assign(layers)`."""
    x = keras.Input((3,))
    model = keras.Model(x, mixed.RECIPES[recipe](x, mixed.schedule_of("fit", 100)))
    units = [layer for layer in model.layers if layer.weights]
    assign(units)
    return model


@pytest.mark.parametrize(
    "formula, recipe, kernels, read",
    [
        # [NAU, NMU] -> NAU: sums (c, unused), products (a*b, unused), then
        # product - c.
        ("a*b - c", "[NAU, NMU] -> NAU",
         [[[0, 0], [0, 0], [1, 0]], [[1, 0], [1, 0], [0, 0]],
          [[-1], [0], [1], [0]]], "y0 = a*b - c"),
        ("(a+b)*c", "NAU -> NMU",
         [[[1, 0], [1, 0], [0, 1]], [[1], [1]]], "y0 = c*(a + b)"),
    ],
)  # fmt: skip
def test_each_shape_holds_its_formula_exactly(formula, recipe, kernels, read):
    def assign(units):
        for unit, kernel in zip(units, kernels, strict=True):
            unit.kernel.assign(np.array(kernel, "float32"))

    model = exact(recipe, assign)
    x, y = mixed.sample(formula, 256, mixed.EXTRAPOLATION_RANGE, seed=3)
    assert mixed.relative_error(model, x, y) < 1e-6
    assert keras_nalu_formula(model, x) == read


def keras_nalu_formula(model, x):
    from keras_nalu import formulas

    return formulas(model, ["a", "b", "c"], x=x, positive=True)[0]


def test_a_tiny_run_writes_every_row(tmp_path):
    path = tmp_path / "mixed.json"
    status = mixed.MixedFormulas().main(
        ["--seeds", "1", "--epochs", "1", "--examples", "128", "--json", str(path),
         "--checkpoint-dir", str(tmp_path / "ckpt")]
    )  # fmt: skip
    assert status == 0
    record = json.loads(path.read_text())
    runs = [(r["formula"], r["model"], r["schedule"]) for r in record["runs"]]
    assert runs == list(mixed.ROWS)
    assert record["steps"] == 2 and record["budget"]["epochs"] == 1
    header, lines = mixed.table(record["runs"], 1)
    assert len(lines) == len(mixed.ROWS) and len(header) == len(lines[0])
