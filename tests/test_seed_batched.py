import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu import NAC, NALU
from keras_nalu.tasks import StaticArithmetic
from keras_nalu.tasks.seed_batched import (
    MODELS,
    StaticBenchmark,
    forward,
    init_params,
)

BENCHMARK = Path(__file__).resolve().parents[1] / "examples" / "arithmetic_benchmark.py"


def small(model, operations, seeds, **kwargs):
    return StaticBenchmark(model, operations, seeds, eval_size=64, **kwargs)


def test_init_of_a_seed_does_not_depend_on_the_other_seeds():
    for model in MODELS:
        both, alone = init_params(model, [3, 5], 100), init_params(model, [5], 100)
        for name in both:
            np.testing.assert_array_equal(both[name][1], alone[name][0])


@pytest.mark.parametrize("model, layer_cls", [("nac", NAC), ("nalu", NALU)])
def test_forward_equals_the_keras_layers_with_the_same_weights(model, layer_cls):
    params = init_params(model, [7], 10)
    names = ["w_hat", "m_hat"] + (["gate"] if model == "nalu" else [])
    layers = [layer_cls(2), layer_cls(1)]
    keras_model = keras.Sequential([keras.Input((10,)), *layers])
    for i, layer in enumerate(layers):
        layer.set_weights([params[f"{n}_{i}"][0] for n in names])
    x = np.random.default_rng(0).uniform(1, 2, (5, 10)).astype("float32")
    want = keras.ops.convert_to_numpy(keras_model(x))
    got = keras.ops.convert_to_numpy(forward(model, params, x[None]))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("model", ["relu6", "crelu", "linear"])
def test_mlp_forward_shapes(model):
    params = init_params(model, [0, 1, 2], 100)
    x = np.ones((3, 4, 100), "float32")
    assert tuple(forward(model, params, x).shape) == (3, 4, 1)


def test_graph_targets_match_the_task_for_every_operation():
    ops_ = ["add", "sub", "mul", "div", "square", "sqrt"]
    bench = small("nac", ops_, [0, 1])
    x, y = bench._batch(np.int64(3))
    x, y = np.asarray(x), np.asarray(y)
    for i, task in enumerate(bench.tasks):
        want = task.targets(x[i])  # float64; float32 sums of ~40 err by ~1e-5
        np.testing.assert_allclose(y[i], want, rtol=1e-5, atol=1e-4)
        assert (x[i] >= 1).all() and (x[i] <= 2).all()


def test_a_run_does_not_depend_on_the_runs_beside_it():
    # Same slices, weights and batches; equal up to float rounding (batched
    # kernels of other shapes round differently).
    together = small("nac", ["mul", "add"], [0, 1])
    alone = small("nac", ["add"], [1])
    history_together = together.run(30, eval_every=10)["history"]
    history_alone = alone.run(30, eval_every=10)["history"]
    index = together.runs.index(("add", 1))
    for a, b in zip(history_together, history_alone, strict=True):
        np.testing.assert_allclose(
            a["extrapolation"][index], b["extrapolation"][0], rtol=1e-3
        )


def test_training_reduces_the_error_and_summaries_are_complete():
    bench = small("nac", "add", [0, 1], learning_rate=0.01)
    run = bench.run(200, eval_every=100)
    assert [h["iteration"] for h in run["history"]] == [0, 100, 200]
    first, last = run["history"][0], run["history"][-1]
    assert (last["interpolation"] < first["interpolation"] / 10).all()
    assert run["ms_per_run_iteration"] > 0
    for result in bench.summarize(run["history"]):
        assert result["iteration"] > 0 and result["interpolation_paper"] < 10
        assert result["threshold"] == pytest.approx(1.6e-5, rel=0.05)
        assert 0 <= result["sparsity_error"] <= 0.5


def test_summary_selects_by_interpolation_and_applies_the_threshold():
    bench = small("linear", "mul", [0, 1])
    threshold = bench.thresholds[0]
    history = [
        {"iteration": 0, "interpolation": np.array([5.0, 5.0]),
         "extrapolation": np.array([1.0, 1.0]), "sparsity": None},
        {"iteration": 1000, "interpolation": np.array([1.0, np.nan]),
         "extrapolation": np.array([threshold / 2, np.nan]), "sparsity": None},
        {"iteration": 2000, "interpolation": np.array([2.0, 4.0]),
         "extrapolation": np.array([threshold * 2, threshold / 2]), "sparsity": None},
    ]  # fmt: skip
    first, second = bench.summarize(history)
    assert (first["iteration"], first["success"], first["solved_at"]) == (
        1000,
        True,
        1000,
    )
    assert (second["iteration"], second["success"], second["solved_at"]) == (
        2000, True, 2000,
    )  # fmt: skip


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model": "gru"}, "`model`.*model='gru'"),
        ({"seeds": []}, "no runs"),
        ({"seeds": [-1]}, "`seeds`.*seeds=-1"),
        ({"operations": "pow"}, "`operation`.*operation='pow'"),
        ({"batch_size": 0}, "`batch_size`.*batch_size=0"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    arguments = {"model": "nac", "operations": "add", "seeds": [0], **kwargs}
    with pytest.raises(ValueError, match=message):
        StaticBenchmark(**arguments)


def test_task_thresholds_follow_the_operation():
    bench = small("nac", ["add", "mul"], [0])
    assert bench.thresholds[0] < 1e-4 < 0.1 < bench.thresholds[1]
    assert isinstance(bench.tasks[1], StaticArithmetic)


def test_benchmark_example_smoke_run(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--seeds", "2", "--iterations", "40",
         "--eval-every", "20", "--eval-size", "64", "--operations", "add", "mul",
         "--models", "nac", "relu6", "--json", str(tmp_path / "r.json"),
         "--png", str(tmp_path / "r.png")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| a*b | 0/2 [0.00, 0.66]" in result.stdout or "| a*b |" in result.stdout
    assert "ms per run-iteration" in result.stdout
    import json

    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["runs"]) == 2 * 2 * 2
    assert (tmp_path / "r.png").stat().st_size > 1000
    again = subprocess.run(
        [sys.executable, str(BENCHMARK), "--from-json", str(tmp_path / "r.json"),
         "--png", str(tmp_path / "again.png")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    tables = result.stdout[result.stdout.index("Median interpolation") :]
    assert tables.split("Wall time")[0] in again.stdout
