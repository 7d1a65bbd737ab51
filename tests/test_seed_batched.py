import dataclasses
import json
import re
import shlex
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

from keras_nalu import NAU, ArithmeticUnit
from keras_nalu import ops as nalu_ops
from keras_nalu.initializers import NAUUniform, NMUUniform
from nalu_research import seed_batched
from nalu_research.experiments.anchor_split import initial_splits, set_initial_splits
from nalu_research.experiments.mistry_benchmark.protocol import InaluProtocol
from nalu_research.recipe import Recipe
from nalu_research.seed_batched import (
    LAYERS,
    MODELS,
    UNIT_MODELS,
    EngineModel,
    StaticBenchmark,
    forward,
)
from nalu_research.tasks import StaticArithmetic, mistry_threshold, sparsity_error
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, TWO_INPUTS_TASK
from tests.processes import (
    example_env,
    kill_when_written,
    run_command_in_process,
    run_in_process,
    tensorboard_scalars,
)

pytestmark = pytest.mark.backends

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "examples" / "units_benchmark.py"


to_numpy = keras.ops.convert_to_numpy


RECIPE = {field.name for field in dataclasses.fields(Recipe)}


def bench_of(model, operations, seeds, **kwargs):
    """`StaticBenchmark` with the `Recipe` of the recipe's keywords of
    `kwargs` (checked there) and the others."""
    recipe = Recipe(**{k: kwargs.pop(k) for k in list(kwargs) if k in RECIPE})
    return StaticBenchmark(model, operations, seeds, recipe, **kwargs)


def small(model, operations, seeds, **kwargs):
    return bench_of(model, operations, seeds, eval_size=64, **kwargs)


def init_params(model, seeds, input_size, **kwargs):
    """The stacked initial weights of `model` for `seeds`."""
    return EngineModel(model, input_size, **kwargs).initial_weights(seeds)[0]


def test_init_of_a_seed_does_not_depend_on_the_other_seeds():
    for model in MODELS:
        both, alone = init_params(model, [3, 5], 100), init_params(model, [5], 100)
        for name in both:
            np.testing.assert_array_equal(both[name][1], alone[name][0])


@pytest.mark.parametrize("model", [*UNIT_MODELS, "nau-npu", "single-npu"])
def test_forward_and_penalty_equal_the_keras_layers_with_the_same_weights(model):
    engine = EngineModel(model, 10)
    params = engine.initial_weights([7])[0]
    keras_model = engine.keras_model(params, 0)
    x = np.random.default_rng(0).uniform(1, 2, (5, 10)).astype("float32")
    want = keras.ops.convert_to_numpy(keras_model(x))
    got = keras.ops.convert_to_numpy(engine.forward(params, x[None]))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if model in ("nac", "nalu"):
        return
    # The layers' own penalties, as they add them to the loss.
    keras_model.compile(loss="mse")
    for layer in keras_model.layers:
        layer.regularization_strength = 1.0
        layer.regularization_start = layer.regularization_end = 0
    keras_model(x, training=True)
    want = sum(float(keras.ops.convert_to_numpy(loss)) for loss in keras_model.losses)
    got = float(keras.ops.convert_to_numpy(engine.penalty(params))[0])
    assert got == pytest.approx(want, rel=1e-5) and got > 0


def test_initial_weights_follow_the_keras_layers_default_ranges():
    params = init_params("nmru", range(20), 100)
    assert params["kernel_0"].shape == (20, 100, 2)
    assert params["kernel_1"].shape == (20, 4, 1)
    assert 0.25 <= params["kernel_1"].min() and params["kernel_1"].max() <= 0.75
    assert np.abs(params["kernel_0"]).max() <= np.sqrt(6 / 102)
    inalu = init_params("inalu", [0, 1], 100)
    assert inalu["gate_0"].shape == (2, 2) and not inalu["gate_0"].any()


def test_initial_weights_are_the_layers_initializers_drawn_from_the_seed():
    # Weight after weight, in the order the layers create them, from one
    # keras.random.SeedGenerator(seed).
    def draws(seed, *initializers_and_shapes):
        generator = keras.random.SeedGenerator(seed)
        return [
            keras.ops.convert_to_numpy(initializer(seed=generator)(shape))
            for initializer, shape in initializers_and_shapes
        ]

    params = init_params("nmu", [7, 8], 100)
    for i, seed in enumerate([7, 8]):
        kernel_0, kernel_1 = draws(seed, (NAUUniform, (100, 2)), (NMUUniform, (2, 1)))
        np.testing.assert_array_equal(params["kernel_0"][i], kernel_0)
        np.testing.assert_array_equal(params["kernel_1"][i], kernel_1)
    params = init_params("relu6", [7], 100)
    glorot = keras.initializers.GlorotUniform
    kernel_0, kernel_1 = draws(7, (glorot, (100, 2)), (glorot, (2, 1)))
    np.testing.assert_array_equal(params["kernel_0"][0], kernel_0)
    np.testing.assert_array_equal(params["kernel_1"][0], kernel_1)
    assert not params["bias_0"].any() and not params["bias_1"].any()
    centered = init_params("nmru", [7], 100, nmu_center=0.75)["kernel_1"]
    assert 0.5 <= centered.min() and centered.max() <= 1.0


def test_the_engine_follows_the_layers_defaults(monkeypatch):
    """A layer class with other bounds, initializer and schedule: the engine
    takes all three from it."""

    class WideNAU(NAU):
        low, high = -2.0, 2.0

        def __init__(self, units, regularization_start=7,
                     kernel_initializer="ones", **kwargs):  # fmt: skip
            super().__init__(
                units,
                regularization_start=regularization_start,
                kernel_initializer=kernel_initializer,
                **kwargs,
            )

    monkeypatch.setitem(LAYERS, "nau", WideNAU)
    assert EngineModel("nmu", 100).schedules[0] == (10.0, 7, 35_000)
    bench = small("nmu", "mul", [0], learning_rate=10.0)
    np.testing.assert_array_equal(to_numpy(bench.params["kernel_0"]), 1.0)
    bench.run(5, eval_every=5)
    kernel = to_numpy(bench.params["kernel_0"])
    assert np.abs(kernel).max() == 2.0  # clipped to WideNAU's bounds
    wide = np.array([[[-3.0], [0.75], [1.5]]], "float32")
    want = nalu_ops.sparsity_penalty(np.clip(wide, -2.0, 2.0))  # its bounds
    got = EngineModel("nau", 3).layer_penalty({"kernel_0": wide}, 0)
    assert to_numpy(got)[0] == pytest.approx(to_numpy(want)[0])
    assert to_numpy(got)[0] == pytest.approx(0.25 / 3)


def test_schedules_are_the_layers_defaults():
    nau, inalu = LAYERS["nau"](1), LAYERS["inalu"](1)
    for model, layer in [("nmu", nau), ("inalu", inalu)]:
        want = (layer.regularization_strength, layer.regularization_start,
                layer.regularization_end)  # fmt: skip
        assert EngineModel(model, 100).schedules == {0: want, 1: want}
    assert EngineModel("nac", 100).schedules == EngineModel("relu6", 100).schedules
    assert EngineModel("nac", 100).schedules == {}


SIGNS = {"nmru": {"sign_retrieval": True}}
CENTERED = {"nau": {"centered_gradient": True}}
GATED = {"realnpu": {"gated": True, "epsilon": 1e-6}}
DROP = keras.optimizers.schedules.PiecewiseConstantDecay([1], [0.05, 0.005])
SIGNED_TASK = {"interpolation_range": (-2.0, -1.0), "extrapolation_range": (-6.0, -2.0)}


@pytest.mark.parametrize(
    "model, clipnorm, options, task, rate, epsilon",
    [("nmu", None, None, {}, 0.05, None), ("inalu", None, None, {}, 0.05, None),
     ("single-nmru", 0.1, SIGNS, SIGNED_TASK, 0.05, None),
     ("nmu", None, CENTERED, {}, 0.05, None),
     ("realnpu", None, GATED, {}, DROP, None),
     ("single-realnpu", None, None, {}, 0.05, None),
     ("nmu", None, None, {}, 0.05, 0.01)],
)  # fmt: skip
def test_a_run_trains_as_its_keras_model_with_keras_adam(
    model, clipnorm, options, task, rate, epsilon
):
    """Seed 1's weights after three steps in a batch of runs equal those of
    its Keras model trained alone by keras.optimizers.Adam on the same
    batches, penalty schedule, the clipping of its gradient's global norm,
    layer options, a learning-rate schedule and Adam's epsilon included."""
    bench = small(model, "mul", [0, 1], learning_rate=rate,
                  regularization=(1.0, 0, 2), clipnorm=clipnorm,
                  layer_options=options, adam_epsilon=epsilon, **task)  # fmt: skip
    layers = bench.engine_model.build(seed=1)
    for kind, changes in (options or {}).items():
        for name, value in changes.items():
            assert getattr(layers[UNIT_MODELS[model].index(kind)], name) == value
    keras_model = keras.Sequential([keras.Input((bench.input_size,)), *layers])
    for layer in layers:
        layer.regularization_strength = 1.0
        layer.regularization_start, layer.regularization_end = 0, 2
    adam = keras.optimizers.Adam(
        rate, global_clipnorm=clipnorm, epsilon=epsilon or 1e-7
    )
    keras_model.compile(optimizer=adam, loss="mse")
    for step in (1, 2, 3):
        x, y = bench._batch(step)
        keras_model.train_on_batch(x[1], y[1])  # MSE plus the layers' losses
    bench._train_chunk(3)
    for i, layer in enumerate(layers):
        for weight in layer.trainable_weights:
            np.testing.assert_allclose(
                to_numpy(bench.params[f"{weight.name}_{i}"])[1],
                to_numpy(weight),
                rtol=1e-4,  # XLA fuses the engine's step: other rounding
                atol=5e-5,  # Adam divides by small moments: a few ulps of the gradient
                err_msg=weight.name,
            )
    assert bench.step == 3


def test_layer_options_set_the_initial_weights_and_a_schedule_resumes(tmp_path):
    """The two-layer a/b recipe's start, from Keras initializers given as
    layer options (JSON, as the command line passes them)."""
    ratio = {
        "nau": {"kernel_initializer": {"class_name": "RandomUniform",
                                       "config": {"minval": 0.25, "maxval": 0.75}}},
        "realnpu": {"gated": False, "kernel_initializer": {
            "class_name": "Constant", "config": {"value": [[1.0], [-1.0]]}}},
    }  # fmt: skip
    bench = small("realnpu", "div", [0, 1], layer_options=ratio, learning_rate=DROP)
    first = to_numpy(bench.params["kernel_0"])
    assert 0.25 <= first.min() and first.max() <= 0.75
    assert not np.array_equal(first[0], first[1])  # each seed its own draw
    np.testing.assert_array_equal(to_numpy(bench.params["kernel_1"]), [[[1], [-1]]] * 2)
    assert "gate_1" not in bench.params
    bench.run(4, eval_every=2, checkpoint=tmp_path)
    again = small("realnpu", "div", [0, 1], layer_options=ratio, learning_rate=DROP)
    assert again.run(4, eval_every=2, checkpoint=tmp_path)["resumed_at"] == 4
    other = keras.optimizers.schedules.PiecewiseConstantDecay([2], [0.05, 0.005])
    fresh = small("realnpu", "div", [0, 1], layer_options=ratio, learning_rate=other)
    assert fresh.run(4, eval_every=2, checkpoint=tmp_path)["resumed_at"] is None


def test_a_run_trains_as_it_would_alone():
    together = small("nmu", "mul", [0, 1], regularization=(1.0, 0, 5))
    alone = small("nmu", "mul", [1], regularization=(1.0, 0, 5))
    for bench in (together, alone):
        bench._train_chunk(10)
    for name, weight in alone.params.items():
        np.testing.assert_allclose(
            to_numpy(together.params[name])[1],
            to_numpy(weight)[0],
            rtol=1e-5,
            atol=1e-7,
        )


@pytest.mark.parametrize("model", ["nau", "inalu"])
def test_loss_adds_the_penalty_on_its_schedule(model):
    bench = small(model, "add", [0, 1], regularization=(3.0, 10, 20))
    params = {name: weight.value for name, weight in bench.params.items()}
    expected_penalty = to_numpy(bench.engine_model.penalty(params))
    assert (expected_penalty > 0).all()
    unpenalized = small(model, "add", [0, 1], regularization=None)
    for step, weight in [(5, 0.0), (15, 1.5), (40, 3.0)]:
        x, y = bench._batch(step)
        out = bench.engine_model.forward(params, x)
        mse = np.mean(np.square(to_numpy(out - y)), axis=(1, 2))
        np.testing.assert_allclose(
            to_numpy(bench._losses(params, step)),
            mse + weight * expected_penalty,
            rtol=1e-5,
        )
        np.testing.assert_allclose(
            to_numpy(unpenalized._losses(params, step)), mse, rtol=1e-5
        )


def test_training_keeps_clipped_kernels_in_their_range():
    bench = small("nmu", "mul", [0], learning_rate=1.0)
    bench.run(20, eval_every=20)
    assert np.abs(to_numpy(bench.params["kernel_0"])).max() <= 1
    kernel = to_numpy(bench.params["kernel_1"])
    assert kernel.min() >= 0 and kernel.max() <= 1
    assert np.isin(kernel, [0.0, 1.0]).any()  # pushed to a bound, held there


def test_signed_inputs_extrapolate_on_a_union_of_intervals():
    bench = small("nmu", "mul", [0], interpolation_range=(-2.0, 2.0),
                  extrapolation_range=((2.0, 6.0), (-6.0, -2.0)))  # fmt: skip
    x = to_numpy(bench.test_sets["extrapolation"][0])
    assert (x < 0).mean() == pytest.approx(0.5, abs=0.05)
    x = np.abs(x)
    assert (x >= 2).all() and (x <= 6).all()
    batch, _ = bench._batch(1)
    batch = to_numpy(batch)
    assert (batch < 0).any() and (np.abs(batch) <= 2).all()


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")
def test_nan_targets_of_one_operation_do_not_leak_into_the_others():
    # sqrt of a negative sum is NaN; the a*b runs beside it must be unaffected.
    bench = small("nmu", ["mul", "sqrt"], [0], interpolation_range=(-2.0, 2.0))
    _, y = bench._batch(1)
    y = to_numpy(y)
    assert np.isfinite(y[0]).all() and np.isnan(y[1]).any()


@pytest.mark.parametrize("model", ["relu6", "crelu", "linear"])
def test_mlp_forward_shapes(model):
    params = init_params(model, [0, 1, 2], 100)
    x = np.ones((3, 4, 100), "float32")
    assert tuple(forward(model, params, x).shape) == (3, 4, 1)


def test_graph_targets_match_the_task_for_every_operation():
    ops_ = ["add", "sub", "mul", "div", "square", "sqrt"]
    bench = small("nac", ops_, [0, 1])
    x, y = bench._batch(3)
    x, y = to_numpy(x), to_numpy(y)
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


def test_exact_formulas_of_runs_that_learned_exact_weights_only():
    bench = small("nmu", "mul", [0, 1])
    task = bench.tasks[0]
    kernel = np.zeros((2, 100, 2), "float32")
    kernel[0, task.a_slice, 0] = 1.0  # run 0: a and b exactly, off by 1e-3
    kernel[0, task.b_slice, 1] = 1.0
    kernel[0] += np.float32(1e-3) * (kernel[0] == 0)
    kernel[1] = 0.5  # run 1: nothing learned
    bench.params["kernel_0"].assign(kernel)
    bench.params["kernel_1"].assign(np.ones((2, 2, 1), "float32"))
    x = task.sample(8, "extrapolation", seed=0)[0]
    first = {name: weight[:1] for name, weight in bench.params.items()}
    np.testing.assert_allclose(
        to_numpy(bench.keras_model(0)(x)),
        to_numpy(forward("nmu", first, x[None]))[0],
        rtol=1e-6,
    )
    exact, none = bench.exact_formulas(size=64)
    a = " + ".join(f"x{i}" for i in range(task.a_slice.start, task.a_slice.stop))
    b = " + ".join(f"x{i}" for i in range(task.b_slice.start, task.b_slice.stop))
    assert exact == f"y0 = ({a})*({b})"
    assert none is None
    with pytest.raises(ValueError, match="MLP"):
        small("relu6", "add", [0]).keras_model(0)


def test_an_interrupted_benchmark_resumes_to_the_uninterrupted_result(tmp_path, caplog):
    whole = small("nmu", "mul", [0, 1]).run(60, eval_every=20)
    checkpoint = tmp_path / "nmu"

    class Killed(Exception):
        pass

    def kill_at_40(entry):
        if entry["iteration"] == 40:
            raise Killed  # after the checkpoint of iteration 20, before 40's

    bench = small("nmu", "mul", [0, 1])
    with pytest.raises(Killed):
        bench.run(60, eval_every=20, on_eval=kill_at_40, checkpoint=checkpoint)
    seen, chunks = [], []
    bench = small("nmu", "mul", [0, 1])
    train_chunk = bench._train_chunk

    def counting(steps):  # records the chunks of training steps
        chunks.append(steps)
        return train_chunk(steps)

    bench._train_chunk = counting
    resumed = bench.run(
        60, eval_every=20, on_eval=lambda e: seen.append(e["iteration"]),
        checkpoint=checkpoint,
    )  # fmt: skip
    assert seen == [40, 60]  # the evaluations it made, not those restored
    assert chunks == [0, 20, 20]  # compiled, then resumed after iteration 20
    assert len(resumed["history"]) == len(whole["history"]) == 4
    for a, b in zip(whole["history"], resumed["history"], strict=True):
        for key in ("interpolation", "extrapolation"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-6)
        assert a["iteration"] == b["iteration"]
    # Another configuration does not resume from it, and says so.
    other = small("nmu", "mul", [0, 1], learning_rate=0.01)
    seen.clear()
    with caplog.at_level("WARNING", logger="keras_nalu.checkpoints"):
        other.run(
            20, eval_every=20, checkpoint=checkpoint, on_eval=lambda e: seen.append(e)
        )
    assert [e["iteration"] for e in seen] == [0, 20]
    assert "from another configuration: starting afresh" in caplog.text
    assert [p.name for p in checkpoint.iterdir()] == ["checkpoint.npz"]


def test_a_checkpoint_of_other_weights_raises(tmp_path):
    small("nau", "add", [0]).run(10, eval_every=10, checkpoint=tmp_path)
    bench = small("nac", "add", [0])
    bench._config["model"] = "nau"  # the same configuration, other weights
    with pytest.raises(ValueError, match="written by another model"):
        bench.run(10, eval_every=10, checkpoint=tmp_path)


def test_a_fixed_threshold_replaces_the_simulated_one():
    assert small("nmu", "mul", [0, 1], threshold=1e-5).thresholds.tolist() == [1e-5] * 2
    assert small("nmu", "mul", [0]).thresholds[0] > 0.1  # simulated


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
        ({"clipnorm": 0.0}, "`clipnorm`.*clipnorm=0.0"),
        ({"adam_epsilon": 0.0}, "`adam_epsilon`.*adam_epsilon=0.0"),
        ({"learning_rate": "fast"}, "`learning_rate`, expected a positive float or"),
        ({"learning_rate": 0.0}, "`learning_rate`.*learning_rate=0.0"),
        ({"layer_options": {"gru": {}}}, "`layer_options`"),
        ({"model": "nmru", "layer_options": {"nmru": {"epsilon": -1.0}}}, "`epsilon`"),
        ({"threshold": -1.0}, "`threshold`.*threshold=-1.0"),
        ({"model": "nau", "regularization": (1.0, 5, 2)}, "`regularization`"),
        ({"model": "nau", "regularization": 3}, "`regularization`"),
        (
            {"interpolation_range": ((1.0, 2.0), (3.0, 4.0))},
            "`interpolation_range`, expected a pair",
        ),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    arguments = {"model": "nac", "operations": "add", "seeds": [0], **kwargs}
    with pytest.raises(ValueError, match=message):
        bench_of(**arguments)


def test_task_thresholds_follow_the_operation():
    bench = small("nac", ["add", "mul"], [0])
    assert bench.thresholds[0] < 1e-4 < 0.1 < bench.thresholds[1]
    assert isinstance(bench.tasks[1], StaticArithmetic)


@pytest.mark.research  # plots with matplotlib
def test_benchmark_example_smoke_run(tmp_path):
    result = run_in_process(
        "units_benchmark", "--seeds", "2", "--iterations", "40",
         "--eval-every", "20", "--eval-size", "64", "--operations", "add", "mul",
         "--models", "nac", "relu6", "--json", str(tmp_path / "r.json"),
         "--tensorboard", str(tmp_path / "tb"),
         "--checkpoint-dir", str(tmp_path / "checkpoints"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "checkpoints").exists()  # removed when done
    # A progress line per evaluation, with the time left.
    lines = [line for line in result.stdout.splitlines() if " - iteration " in line]
    assert [line.split(" - ")[1] for line in lines] == [
        f"iteration {i}/40" for i in (0, 20, 40)
    ] * 2
    assert "solved 0/4 runs - median extrapolation MSE" in lines[1]
    assert "about" in lines[1] and "left" in lines[1]
    assert lines[2].endswith(", done")
    # TensorBoard: per model, the operations' errors and solved runs.
    tags = {
        f"{op}/{name}"
        for op in ("add", "mul")
        for name in ("interpolation_mse_median", "extrapolation_mse_median",
                     "extrapolation_mse_best", "solved")
    }  # fmt: skip
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"nac", "relu6"}
    for run in scalars.values():
        assert set(run) == tags
        assert all(steps == [0, 20, 40] for steps in run.values())
    assert "resumed" not in result.stdout
    assert "| a*b | 0/2 [0.00, 0.66]" in result.stdout or "| a*b |" in result.stdout
    assert "ms per run-iteration" in result.stdout
    assert "| model, op | 40 |" in result.stdout  # fraction solved by iteration N
    assert "- NAC, a+b: 0/2 snapped" in result.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["runs"]) == 2 * 2 * 2
    assert (tmp_path / "r.png").stat().st_size > 1000  # beside the JSON
    again = run_in_process(
        "units_benchmark", "--from-json", str(tmp_path / "r.json"),
         "--png", str(tmp_path / "again.png"),
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    tables = result.stdout[result.stdout.index("Median interpolation") :]
    assert tables.split("Wall time")[0] in again.stdout
    # One file per model, merged back: the same tables.
    for model in ("nac", "relu6"):
        part = {**data, "runs": [r for r in data["runs"] if r["model"] == model]}
        part["arguments"] = {**data["arguments"], "models": [model]}
        (tmp_path / f"{model}.json").write_text(json.dumps(part))
    merged = run_in_process(
        "units_benchmark", "--from-json", str(tmp_path / "nac.json"),
         str(tmp_path / "relu6.json"), "--png", str(tmp_path / "merged.png"),
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr[-3000:]
    assert tables.split("Wall time")[0] in merged.stdout
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.processes
@pytest.mark.research  # plots with matplotlib
def test_a_killed_benchmark_resumes_to_the_uninterrupted_result(tmp_path):
    def command(name):
        return [sys.executable, str(BENCHMARK), "--seeds", "2", "--iterations",
                "4000", "--eval-every", "1000", "--eval-size", "64",
                "--operations", "sub", "--models", "nac",
                "--json", str(tmp_path / f"{name}.json"),
                "--png", str(tmp_path / f"{name}.png"),
                "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints")]  # fmt: skip

    env = example_env()
    whole = run_command_in_process(command("whole"))
    assert whole.returncode == 0, whole.stderr[-3000:]
    # SIGKILL once the checkpoint of iteration 1000 is written.
    state = tmp_path / "killed_checkpoints" / "nac"
    kill_when_written(command("killed"), state, env, when=lambda s: s["done"] >= 1000)
    assert not (tmp_path / "killed.json").exists()
    resumed = run_command_in_process(command("killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from its checkpoint at iteration" in resumed.stdout
    at = int(resumed.stdout.split("at iteration ")[1].split()[0])
    assert 1000 <= at < 4000
    whole, resumed = (
        json.loads((tmp_path / f"{name}.json").read_text())["runs"]
        for name in ("whole", "killed")
    )
    assert len(whole) == len(resumed) == 2
    for a, b in zip(whole, resumed, strict=True):
        assert a["iteration"] == b["iteration"] and a["success"] == b["success"]
        for key in ("interpolation_mse", "extrapolation_mse", "sparsity_error"):
            assert a[key] == pytest.approx(b[key], rel=1e-6), key


def _numpy_mix(x):
    """The hash of `counter_uniform` in uint32 NumPy arithmetic."""
    x = x.astype(np.uint32)
    with np.errstate(over="ignore"):
        x ^= x >> 16
        x *= np.uint32(0x7FEB352D)
        x ^= x >> 15
        x *= np.uint32(0x846CA68B)
        x ^= x >> 16
    return x


def test_counter_uniform_is_its_hash_in_uint32_arithmetic():
    streams, step, shape = np.array([0, 7, 2**20 + 3], "int32"), 12345, (4, 5)
    got = to_numpy(seed_batched.counter_uniform(streams, step, shape, 1.0, 3.0))
    keys = _numpy_mix(_numpy_mix(streams.astype(np.uint32)) ^ np.uint32(step))
    bits = _numpy_mix(np.arange(20, dtype=np.uint32)[None, :] ^ keys[:, None])
    want = 1.0 + 2.0 * ((bits >> 8).astype(np.float32) / 2**24)
    np.testing.assert_array_equal(got, want.reshape(3, 4, 5).astype("float32"))


def test_counter_uniform_never_draws_zero():
    """On U[-2, 2] the grid of 2**24 values holds 0, where `a / 0` is
    infinite: that draw takes the middle of its grid step; no other changes."""
    stream = np.array([3], "int32")
    key = _numpy_mix(stream.astype(np.uint32))[0]
    elements = np.arange(1024, dtype=np.uint32)
    for first in range(1, 2**18, 2**12):  # the first step whose draw holds 0
        steps = np.arange(first, first + 2**12, dtype=np.uint32)
        bits = _numpy_mix(elements[None, :] ^ _numpy_mix(key ^ steps)[:, None]) >> 8
        hits = np.argwhere(bits == 2**23)
        if hits.size:
            break
    else:
        pytest.fail("no draw of 0 in the steps searched")
    row, element = hits[0]
    step = int(steps[row])
    got = to_numpy(seed_batched.counter_uniform(stream, step, (1024,), -2.0, 2.0))[0]
    assert got[element] == np.float32(4 * 2.0**-25) and np.all(got != 0)
    want = (-2.0 + 4.0 * (bits[row].astype(np.float32) / 2**24)).astype("float32")
    others = np.arange(1024) != element
    np.testing.assert_array_equal(got[others], want[others])


def test_counter_uniform_is_uniform_and_uncorrelated():
    streams = np.arange(8, dtype="int32")
    draws = np.stack(
        [
            to_numpy(seed_batched.counter_uniform(streams, t, (64, 100), 0.0, 1.0))
            for t in (1, 2)
        ]
    )  # (steps, streams, 64, 100)
    flat = draws.reshape(-1)
    assert flat.min() >= 0 and flat.max() < 1
    assert flat.mean() == pytest.approx(0.5, abs=0.005)
    assert flat.var() == pytest.approx(1 / 12, rel=0.01)
    counts = np.histogram(flat, bins=32, range=(0, 1))[0]
    expected = flat.size / 32
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 70  # 31 degrees of freedom: p < 1e-4 above 70
    by_stream = draws.reshape(2 * 8, -1)  # each (step, stream) pair's draw
    correlations = np.corrcoef(by_stream)[np.triu_indices(16, 1)]
    # 6,400 values each: sd 0.0125; the largest of 120 near 3 sd.
    assert np.abs(correlations).max() < 0.06
    neighbours = np.corrcoef(flat[:-1], flat[1:])[0, 1]
    assert abs(neighbours) < 0.01


@pytest.mark.research  # the benchmark's parser checks for matplotlib
@pytest.mark.parametrize(
    "option, message",
    [
        (["gru", "units", "1"], "unknown layer kind 'gru'"),
        (["nau", "centered_gradient", "yes"], "VALUE must be JSON"),
        (["nau", "centered_gradient", "1"], "`centered_gradient`"),
        (["nau", "colour", "1"], "colour"),
    ],
)
def test_benchmark_layer_options_are_checked_at_parse_time(option, message, capsys):
    from nalu_research.experiments import units_benchmark

    with pytest.raises(SystemExit):
        units_benchmark.UnitsBenchmark().parse_args(["--layer-option", *option])
    assert message in capsys.readouterr().err


@pytest.mark.research  # the benchmark's parser checks for matplotlib
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--learning-rate", "0"], "--learning-rate: expected a finite number"),
        (["--clipnorm", "-1"], "argument --clipnorm: expected a finite number"),
        (["--nmu-center", "0.9"], "argument --nmu-center: expected a number in"),
        (["--seeds", "0"], "argument --seeds: expected a positive integer"),
        (["--first-seed", "-1"], "argument --first-seed: expected an integer >= 0"),
        (["--models", "nau-gru"], "argument --models: Received an invalid value"),
    ],
)
def test_benchmark_arguments_are_checked_by_their_argparse_types(argv, message, capsys):
    from nalu_research.experiments import units_benchmark

    with pytest.raises(SystemExit):
        units_benchmark.UnitsBenchmark().parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.research
def test_a_layer_option_configures_the_unit_the_engine_holds():
    from nalu_research.experiments import units_benchmark

    argv = ["--layer-option", "nmru", "sign_retrieval", "true"]
    options = units_benchmark.UnitsBenchmark().parse_args(argv).layer_options
    assert options == {"nmru": {"sign_retrieval": True}}
    bench = small("nmru", "mul", [0], layer_options=options)
    nau, nmru = bench.engine_model.layers
    assert nmru.sign_retrieval and nmru.built and not nau.centered_gradient
    assert bench.keras_model(0).layers[1].sign_retrieval


@pytest.mark.research
def test_benchmark_learning_rate_drop_is_a_keras_schedule(capsys):
    from nalu_research.arguments import learning_rate
    from nalu_research.experiments import units_benchmark

    args = units_benchmark.UnitsBenchmark().parse_args(
        ["--learning-rate", "0.01", "--learning-rate-drop", "100", "0.1"]
    )
    assert args.learning_rate_drop == [100, 0.1]
    assert type(args.learning_rate_drop[0]) is int  # recorded as a step count
    rate = learning_rate(args.learning_rate, args.learning_rate_drop)
    assert [float(rate(s)) for s in (100, 101)] == pytest.approx([0.01, 0.001])
    assert learning_rate(0.01) == 0.01
    for bad in (["-1", "0.1"], ["1.5", "0.1"], ["100", "0"], ["x", "0.1"]):
        with pytest.raises(SystemExit):
            units_benchmark.UnitsBenchmark().parse_args(["--learning-rate-drop", *bad])
        assert "--learning-rate-drop expects" in capsys.readouterr().err


@pytest.mark.research
def test_benchmark_passes_layer_options():
    from nalu_research.experiments import units_benchmark

    args = units_benchmark.UnitsBenchmark().parse_args(
        ["--layer-option", "nau", "centered_gradient", "true",
         "--layer-option", "nmru", "sign_retrieval", "true"]
    )  # fmt: skip
    assert args.layer_options == {
        "nau": {"centered_gradient": True},
        "nmru": {"sign_retrieval": True},
    }


def test_the_initial_split_is_the_difference_of_the_two_units_over_the_slices():
    bench = small("nmu", "mul", [0, 1])
    kernel = keras.ops.convert_to_numpy(bench.params["kernel_0"]).copy()
    splits = initial_splits(bench)
    for run, task in enumerate(bench.tasks):
        a, b = np.zeros(bench.input_size, bool), np.zeros(bench.input_size, bool)
        a[task.a_slice], b[task.b_slice] = True, True
        d = kernel[run, :, 0] - kernel[run, :, 1]
        assert splits[run] == pytest.approx(d[a & ~b].sum() - d[b & ~a].sum())
    moved = set_initial_splits(bench, [0.5, None])
    assert moved == [pytest.approx(0.5, abs=1e-6), pytest.approx(splits[1])]
    after = keras.ops.convert_to_numpy(bench.params["kernel_0"])
    changed = np.any(after != kernel, axis=-1)  # (runs, inputs)
    task = bench.tasks[0]
    only_a = np.zeros(bench.input_size, bool)
    only_a[task.a_slice] = True
    only_a[task.b_slice] = False
    assert np.array_equal(changed[0], only_a) and not changed[1].any()
    with pytest.raises(ValueError, match="a two-unit NAU"):
        initial_splits(small("nalu", "mul", [0]))


# Units of a user's own, outside the package.
@keras.saving.register_keras_serializable(package="engine_tests")
class Offset(ArithmeticUnit):
    """`x @ clip(kernel, -1, 1) + offset`: its kernel's initializer is the
    argument `start` (no `_initializer` in its name), and `offset` is a
    non-trainable weight drawn by an initializer made in `build`."""

    exact_values = {"kernel": (-1.0, 0.0, 1.0)}
    linear = True

    def __init__(self, units, start="random_uniform", **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.start = keras.initializers.get(start)

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel", shape=(input_shape[-1], self.units), initializer=self.start
        )
        self.offset = self.add_weight(
            name="offset",
            shape=(self.units,),
            initializer=keras.initializers.RandomNormal(),
            trainable=False,
        )

    def effective_weights(self, weights=None):
        weights = self.unit_weights() if weights is None else weights
        return {"kernel": ops.clip(weights["kernel"], -1.0, 1.0)}

    def math(self, x, weights, training=False):
        kernel = self.effective_weights(weights)["kernel"]
        return nalu_ops.matmul(x, kernel) + ops.expand_dims(weights["offset"], -2)

    def get_config(self):
        start = keras.initializers.serialize(self.start)
        return {**super().get_config(), "units": self.units, "start": start}


@keras.saving.register_keras_serializable(package="engine_tests")
class Scaled(ArithmeticUnit):
    """`x @ (scale * clip(kernel, -1, 1))`: the option `scale` changes its
    effective weights."""

    exact_values = {"kernel": (-2.0, -1.0, 0.0, 1.0, 2.0)}

    def __init__(self, units, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.scale = units, scale

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel", shape=(input_shape[-1], self.units), initializer="zeros"
        )

    def effective_weights(self, weights=None):
        weights = self.unit_weights() if weights is None else weights
        return {"kernel": self.scale * ops.clip(weights["kernel"], -1.0, 1.0)}

    def math(self, x, weights, training=False):
        return nalu_ops.matmul(x, self.effective_weights(weights)["kernel"])

    def get_config(self):
        return {**super().get_config(), "units": self.units, "scale": self.scale}


def test_a_seed_draws_the_same_weights_whatever_the_initializers_are_called():
    """`Offset`'s kernel initializer is the argument `start` and its offset's
    is made in `build`: both draw from the run's seed, on every call."""
    model = "single-engine_tests>Offset"
    first, again = small(model, "add", [0, 1]), small(model, "add", [0, 1])
    other = small(model, "add", [2])
    for name, weight in first.params.items():
        np.testing.assert_array_equal(to_numpy(weight), to_numpy(again.params[name]))
    assert set(first.constants) == {"offset_0"}
    offsets = to_numpy(first.constants["offset_0"])
    np.testing.assert_array_equal(offsets, to_numpy(again.constants["offset_0"]))
    assert not np.array_equal(offsets[0], offsets[1])  # each seed its own
    assert not np.array_equal(to_numpy(other.constants["offset_0"])[0], offsets[0])
    kernel = to_numpy(first.params["kernel_0"])
    assert not np.array_equal(kernel[0], kernel[1])


def test_a_non_trainable_weight_reaches_the_units_math_and_stays():
    bench = small("single-engine_tests>Offset", "add", [0, 1], learning_rate=0.1)
    offset = to_numpy(bench.constants["offset_0"])
    assert "offset_0" not in bench.params and offset.any()
    kernel = to_numpy(bench.params["kernel_0"])
    bench.run(5, eval_every=5)
    assert not np.array_equal(to_numpy(bench.params["kernel_0"]), kernel)
    np.testing.assert_array_equal(to_numpy(bench.constants["offset_0"]), offset)
    x = np.random.default_rng(0).uniform(1, 2, (4, bench.input_size))
    x = x.astype("float32")
    for run in range(2):  # each run's Keras model carries its offset
        model = bench.keras_model(run)
        np.testing.assert_allclose(to_numpy(model.layers[0].offset), offset[run])
        one = {k: v[run : run + 1] for k, v in bench._weights().items()}
        want = to_numpy(bench.engine_model.forward(one, x[None]))[0]
        np.testing.assert_allclose(to_numpy(model(x)), want, rtol=1e-6)


def test_the_sparsity_is_that_of_the_configured_unit_against_its_exact_values():
    """`Scaled(scale=2)` applies twice its clipped kernel: the engine's
    sparsity error is the configured layer's, not the default one's."""
    kind = "engine_tests>Scaled"
    bench = small(f"single-{kind}", "add", [0, 1], learning_rate=0.1,
                  layer_options={kind: {"scale": 2.0}})  # fmt: skip
    (unit,) = bench.engine_model.layers
    assert unit.scale == 2.0
    history = bench.run(20, eval_every=20)["history"]
    weights = {"kernel": bench._weights()["kernel_0"]}
    effective = to_numpy(unit.effective_weights(weights)["kernel"])
    want = [sparsity_error(w, Scaled.exact_values["kernel"]) for w in effective]
    assert history[-1]["sparsity"] == want
    default = to_numpy(Scaled(1).effective_weights(weights)["kernel"])
    assert want != [sparsity_error(w, Scaled.exact_values["kernel"]) for w in default]
    assert bench.keras_model(0).layers[0].scale == 2.0


def test_the_sparsity_error_is_against_each_units_exact_values():
    """The NMU's are {0, 1}, the NAU's {-1, 0, 1}: a first-layer NMU kernel
    at 0.25 and 1 is 0.25 off."""
    bench = small("single-nmu", "mul", [0])
    kernel = np.full((1, bench.input_size, 1), 0.25, "float32")
    kernel[0, :3] = 1.0
    bench.params["kernel_0"].assign(kernel)
    assert bench.engine_model.sparsity(bench._weights()) == [0.25]
    assert small("relu6", "mul", [0]).engine_model.sparsity({}) is None


def test_a_realnpu_without_its_gate_trains_and_reports_its_sparsity():
    """`gated: False`, read by every part of the engine (the first-layer
    sparsity read the default, gated layer: KeyError 'gate')."""
    bench = small("single-realnpu", "div", [0, 1],
                  layer_options={"realnpu": {"gated": False}})  # fmt: skip
    assert "gate_0" not in bench.params
    result = bench.run(10, eval_every=5)
    for entry in result["history"]:
        assert len(entry["sparsity"]) == 2
        assert all(0 <= s <= 0.5 for s in entry["sparsity"])
    assert bench.summarize(result["history"])[0]["sparsity_error"] is not None
    assert not bench.keras_model(0).layers[0].gated


def test_a_target_is_an_expression_of_a_and_b():
    bench = small("nau", ["2*a - b", "add"], [0, 1])
    assert [op for op, _ in bench.runs] == ["2*a - b"] * 2 + ["add"] * 2
    x, y = bench._batch(3)
    x, y = to_numpy(x), to_numpy(y)
    for i, task in enumerate(bench.tasks):
        np.testing.assert_allclose(y[i], task.targets(x[i]), rtol=1e-5, atol=1e-4)
        a = x[i][:, task.a_slice].sum(-1, dtype="float64")
        b = x[i][:, task.b_slice].sum(-1, dtype="float64")
        want = 2 * a - b if task.operation == "2*a - b" else a + b
        np.testing.assert_allclose(task.targets(x[i])[:, 0], want)
    # Its own batch stream, apart from the paper's operations'.
    streams = to_numpy(bench._streams).tolist()
    assert len(set(streams)) == 4 and streams[2:] == [0, 6]
    # The threshold simulated as for the paper's operations, with the
    # target's expression: 2a - b's perturbations partly cancel, a + b's add.
    assert 0 < bench.thresholds[0] < bench.thresholds[2] < 1e-3
    # A name of the paper's operations, written as an expression, is it.
    assert small("nau", "b + a", [1]).runs == [("add", 1)]


@pytest.mark.parametrize(
    "target, message",
    [
        ("2*c - b", "expected an expression of the inputs a and b only; it uses c"),
        ("2*a -", "it does not parse"),
        ("a < b", "it is a StrictLessThan"),
        ("gamma(a)", "it applies gamma"),
        ("pow", "it uses pow"),
    ],
)
def test_an_invalid_target_raises_naming_the_argument(target, message):
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        small("nau", target, [0])
    assert f"Received: operation={target!r}" in str(error.value)
    assert "`operation`" in str(error.value)


@pytest.mark.research  # the benchmark's parser checks for matplotlib
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "2*c - b"],
         "argument --target: expected an expression of the inputs a and b only; "
         "it uses c, got '2*c - b'"),
        (["--target", "a +"], "argument --target: expected a name of"),
        (["--import", "no_such_module_here"],
         "argument --import: could not import 'no_such_module_here'"),
        (["--models", "nau-my_missing>Unit"],
         "argument --models: Received an invalid value for `model`"),
        (["--layer-option", "my_missing>Unit", "scale", "2"],
         "unknown layer kind 'my_missing>Unit'"),
    ],
)  # fmt: skip
def test_benchmark_targets_and_imports_are_checked(argv, message, capsys):
    from nalu_research.experiments import units_benchmark

    with pytest.raises(SystemExit):
        units_benchmark.UnitsBenchmark().parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.research
def test_benchmark_takes_a_users_module_and_targets(tmp_path, monkeypatch):
    from nalu_research.experiments import units_benchmark

    (tmp_path / "engine_test_units.py").write_text(
        "import keras\n"
        "from keras_nalu import NAU\n\n"
        "@keras.saving.register_keras_serializable(package='engine_test_units')\n"
        "class Wide(NAU):\n"
        "    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    args = units_benchmark.UnitsBenchmark().parse_args(
        ["--models", "nau-engine_test_units>Wide", "--operations", "add",
         "--target", "2*a-b", "--target", "a + b", "--import", "engine_test_units",
         "--layer-option", "engine_test_units>Wide", "centered_gradient", "true"]
    )  # fmt: skip
    assert args.operations == ["add", "2*a - b"]
    assert units_benchmark.display_name(args.models[0]) == "NAU-Wide"
    assert units_benchmark.symbol("2*a - b") == "2*a - b"
    assert units_benchmark.symbol("square") == "a^2"


WRITING_A_UNIT = ROOT / "docs" / "writing-a-unit.md"
# The page's command: its bash block that runs the benchmark.
PAGE_COMMAND = re.compile(r"```bash\n(python examples/units_benchmark\.py[^`]*)```")


@pytest.mark.research  # plots with matplotlib
def test_the_writing_a_unit_page_benchmarks_its_unit_and_a_target(tmp_path):
    """docs/writing-a-unit.md: the page's `Power` (its first block, saved as
    `my_units.py`) through the benchmark's command line, exactly the page's
    command at a tiny budget (its last arguments override the page's)."""
    page = WRITING_A_UNIT.read_text(encoding="utf-8")
    module = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert "class Power" in module
    (tmp_path / "my_units.py").write_text(module, encoding="utf-8")
    (command,) = PAGE_COMMAND.findall(page)
    python, script, *argv = shlex.split(command.replace("\\\n", " "))
    assert (python, script) == ("python", "examples/units_benchmark.py")
    assert argv[:2] == ["--import", "my_units"] and "--target" in argv
    budget = ["--seeds", "2", "--iterations", "40", "--eval-every", "20",
              "--eval-size", "64", "--json", str(tmp_path / "record.json"),
              "--checkpoint-dir", str(tmp_path / "checkpoints")]  # fmt: skip
    saved_path = list(sys.path)
    try:
        done = run_in_process("units_benchmark", *argv, *budget, cwd=tmp_path)
    finally:
        sys.path[:] = saved_path
    assert done.returncode == 0, done.stderr[-3000:]
    success = done.stdout.split("Success rate by the strict criterion")[1]
    table = success.split("\n\n")[1].splitlines()
    assert table[0] == "| op | NAU | NAU-Power |"
    rows = {line.split(" | ")[0].strip("| "): line for line in table[2:]}
    assert set(rows) == {"2*a - b", "a**2*b"}
    for line in rows.values():  # a success count of 2 runs, each with its interval
        assert len(re.findall(r"\d/2 \[\d\.\d\d, \d\.\d\d\]", line)) == 2
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["arguments"]["imports"] == ["my_units"]
    assert {(r["model"], r["operation"]) for r in record["runs"]} == {
        (m, op) for m in ("nau", "nau-my_units>Power") for op in ("2*a - b", "a**2*b")
    }
    power = [r for r in record["runs"] if r["model"] == "nau-my_units>Power"]
    assert all(r["sparsity_error"] is not None for r in power)
    # The same seed gives the same initial weights on a second run (Power's
    # initializer is made in its `build`: no argument names it).
    first, again = (
        EngineModel("nau-my_units>Power", 100).initial_weights([0, 1])[0]
        for _ in range(2)
    )
    for name, values in first.items():
        np.testing.assert_array_equal(values, again[name])
    assert not np.array_equal(first["kernel_1"][0], first["kernel_1"][1])


@pytest.mark.research  # plots with matplotlib
def test_the_benchmark_trains_a_realnpu_without_its_gate_and_reports_sparsity(
    tmp_path,
):
    done = run_in_process(
        "units_benchmark", "--models", "single-realnpu", "--layer-option",
        "realnpu", "gated", "false", "--operations", "div", "--seeds", "2",
        "--iterations", "20", "--eval-every", "10", "--eval-size", "64",
        "--json", str(tmp_path / "r.json"),
        "--checkpoint-dir", str(tmp_path / "checkpoints"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"\| a/b \| [-\d]+, sparsity [\d.e-]+ \|", done.stdout)
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert all(0 <= r["sparsity_error"] <= 0.5 for r in runs)


# Mistry et al.'s benchmark in one program: ranges, their threshold, value
# clipping and the NPU's stepped L1.
TWO_RANGES = {0: MISTRY_RANGES[0], 6: MISTRY_RANGES[6]}


def ranged(operations=("add", "mul"), seeds=(0, 1), **kwargs):
    return small("single-nau", list(operations), list(seeds), ranges=TWO_RANGES,
                 **TWO_INPUTS_TASK, **kwargs)  # fmt: skip


def test_each_range_is_its_own_runs_drawing_from_its_own_range():
    bench = ranged()
    assert bench.runs == [
        (op, key, seed) for op in ("add", "mul") for key in (0, 6) for seed in (0, 1)
    ]
    x = to_numpy(bench._batch(7)[0])
    extrapolation = to_numpy(bench.test_sets["extrapolation"][0])
    for i, (_, key, _) in enumerate(bench.runs):
        (low, high), (far_low, far_high) = TWO_RANGES[key]
        assert low <= x[i].min() and x[i].max() < high
        assert x[i].max() - x[i].min() > 0.8 * (high - low)  # spread over it
        assert far_low <= extrapolation[i].min()
        assert extrapolation[i].max() <= far_high
    # Two ranges of one (operation, seed) draw apart, not one stream rescaled.
    unit = [(x[i] - TWO_RANGES[k][0][0]) / np.ptp(TWO_RANGES[k][0])
            for i, (_, k, _) in enumerate(bench.runs)]  # fmt: skip
    assert np.abs(unit[0] - unit[2]).max() > 0.1
    # The default runs keep their streams: (op, seed) alone.
    assert to_numpy(small("nau", "add", [3])._streams).tolist() == [3 * 6]


def test_a_run_of_a_range_trains_as_it_would_alone():
    together = ranged(["mul"], [1], regularization=None)
    alone = small("single-nau", "mul", [1], ranges={6: MISTRY_RANGES[6]},
                  regularization=None, **TWO_INPUTS_TASK)  # fmt: skip
    for bench in (together, alone):
        bench._train_chunk(10)
    np.testing.assert_allclose(
        to_numpy(together.params["kernel_0"])[1],
        to_numpy(alone.params["kernel_0"])[0],
        rtol=1e-5,
    )


def test_thresholds_are_per_run_and_rows_carry_the_range():
    bench = ranged(threshold="mistry")
    expected = [mistry_threshold(task) for task in bench.tasks]
    np.testing.assert_allclose(bench.thresholds, expected)
    assert len(set(bench.thresholds.tolist())) == 4  # (op, range)
    own = ranged(threshold=lambda task: mistry_threshold(task, epsilon=1e-4))
    np.testing.assert_allclose(own.thresholds, 100 * np.array(expected), rtol=1e-3)
    assert own._config["threshold"] == own.thresholds.tolist()
    # M&J's simulated threshold (the default), per operation and range.
    default = ranged()
    assert default.thresholds[0] != default.thresholds[2]
    result = bench.run(20, eval_every=10)
    rows = bench.summarize(result["history"])
    assert [(r["operation"], r["range"], r["seed"]) for r in rows] == bench.runs
    assert [r["threshold"] for r in rows] == pytest.approx(expected)
    looser = bench.summarize(result["history"], thresholds=bench.thresholds * 1e15)
    assert [r["threshold"] for r in looser] == pytest.approx(bench.thresholds * 1e15)
    assert all(r["success"] for r in looser) and {r["solved_at"] for r in looser} == {0}
    with pytest.raises(ValueError, match="`thresholds`, expected None or one number"):
        bench.summarize(result["history"], thresholds=[1.0])
    assert set(bench.scalars(result["history"][-1])) >= {
        "add/range0/solved", "mul/range6/extrapolation_mse_best"}  # fmt: skip


def test_clipvalue_bounds_each_gradient_element_after_the_norm():
    plain = ranged(regularization=None)
    clipped = ranged(regularization=None, clipvalue=0.1, clipnorm=5.0)
    params = [v.value for v in plain.params.values()]
    raw = [to_numpy(g) for g in seed_batched.value_and_grad(plain._total_loss)(
        params, 1)[1]]  # fmt: skip
    assert max(np.abs(g).max() for g in raw) > 1  # so the bounds bite
    norms = np.sqrt(sum(np.sum(g.reshape(len(g), -1) ** 2, axis=1) for g in raw))
    scale = np.minimum(1.0, 5.0 / (norms + 1e-6))
    got = clipped._clipped([ops.convert_to_tensor(g) for g in raw])
    for g, one in zip(raw, got, strict=True):
        expected = np.clip(g * scale.reshape(-1, *[1] * (g.ndim - 1)), -0.1, 0.1)
        np.testing.assert_allclose(to_numpy(one), expected, rtol=1e-6)
    # And training with it: Adam's first step moves each weight by lr at most.
    before = to_numpy(clipped.params["kernel_0"])
    clipped._train_chunk(1)
    assert np.abs(to_numpy(clipped.params["kernel_0"]) - before).max() <= 1.001e-3


def test_l1_beta_steps_by_its_growth_up_to_its_end():
    steps = [1, 10_000, 10_001, 20_000, 20_001, 30_001, 50_001]
    got = [float(seed_batched.l1_beta(s, 1e-7, 1e-5)) for s in steps]
    assert got == pytest.approx([1e-7, 1e-7, 1e-6, 1e-6, 1e-5, 1e-5, 1e-5])
    got = [float(seed_batched.l1_beta(s, 1e-9, 1e-7, 5, 2.0)) for s in (5, 6, 11, 50)]
    # 2**6 * 1e-9 is under 1e-7, 2**7 * 1e-9 over it: capped there.
    assert got == pytest.approx([1e-9, 2e-9, 4e-9, 1e-7])
    # Per run: each operation's own (start, end).
    per_run = seed_batched.l1_beta(20_001, ops.convert_to_tensor([1e-7, 1e-9]),
                                   ops.convert_to_tensor([1e-5, 1e-7]))  # fmt: skip
    np.testing.assert_allclose(to_numpy(per_run), [1e-5, 1e-7], rtol=1e-6)
    # Stages past float32's range stay at the end, and a start of 0 at 0.
    assert float(seed_batched.l1_beta(10**6, 1e-7, 1e-5, every=1)) == pytest.approx(
        1e-5
    )
    assert float(seed_batched.l1_beta(10**6, 0.0, 1e-5, every=1)) == 0.0


def test_the_l1_penalty_adds_beta_times_the_runs_absolute_weights():
    betas = {"add": (1e-3, 1e-1), "mul": (1e-2, 1e-2)}
    bench = ranged(regularization=None, l1=betas, l1_every=100, l1_growth=10.0)
    plain = ranged(regularization=None)
    params = {name: weight.value for name, weight in bench.params.items()}
    total = sum(np.abs(to_numpy(w)).reshape(len(bench.runs), -1).sum(axis=1)
                for w in params.values())  # fmt: skip
    for step, add_beta in [(1, 1e-3), (101, 1e-2), (201, 1e-1), (10_001, 1e-1)]:
        beta = np.array([add_beta if op == "add" else 1e-2 for op, _, _ in bench.runs])
        np.testing.assert_allclose(
            to_numpy(bench._losses(params, step)),
            to_numpy(plain._losses(params, step)) + beta * total,
            rtol=1e-5,
        )
    assert bench._config["l1"]["beta"] == {"add": (1e-3, 1e-1), "mul": (1e-2, 1e-2)}
    assert "l1" not in plain._config and "ranges" in plain._config


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ranges": []}, "`ranges`, expected None, a sequence"),
        ({"ranges": [((2.0, 1.0), (2.0, 6.0))]}, "`ranges`.*interpolation range one"),
        ({"ranges": [((1.0, 2.0), (2.0, 6.0))], "interpolation_range": (1.0, 2.0)},
         "ranges and interpolation_range, expected one of them"),
        ({"ranges": {1.5: ((1.0, 2.0), (2.0, 6.0))}}, "`ranges`.*int or str keys"),
        ({"clipvalue": 0.0}, "`clipvalue`.*clipvalue=0.0"),
        ({"l1": (1e-5, 1e-7)}, "`l1`, expected None, \\(start, end\\) with 0 <= start"),
        ({"l1": {"mul": (1e-7, 1e-5)}}, "`l1`.*operations \\('add',\\)"),
        ({"l1": (0.0, 1.0), "l1_every": 0}, "`l1_every`.*l1_every=0"),
        ({"l1": (0.0, 1.0), "l1_growth": -1.0}, "`l1_growth`.*l1_growth=-1.0"),
        ({"threshold": "madsen"}, "`threshold`, expected None, 'mistry'"),
        ({"threshold": lambda task: 0.0}, "`threshold`.*threshold=0.0"),
    ],
)  # fmt: skip
def test_invalid_benchmark_arguments_of_mistrys_benchmark_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bench_of("nac", "add", [0], **kwargs)


# Mistry et al.'s iNALU protocol: the penalty gated per run, reinitialisation.
def inalu(seeds=(0, 1), **kwargs):
    return small("single-inalu", ["add", "mul"], list(seeds), ranges=TWO_RANGES,
                 **TWO_INPUTS_TASK, **kwargs)  # fmt: skip


def test_the_penalty_gate_switches_each_runs_penalty():
    gated = inalu([0], regularization=(4.0, 0, 0), penalty_gate=True)
    penalized = inalu([0], regularization=(4.0, 0, 0))
    unpenalized = inalu([0], regularization=None)
    assert "penalty_gate" not in penalized._config and gated._config["penalty_gate"]
    gate = np.array([1, 0] * (len(gated.runs) // 2), "float32")
    gated.penalty_gate.assign(gate)
    params = {name: weight.value for name, weight in gated.params.items()}
    got = to_numpy(gated._losses(params, 5, gated.penalty_gate.value))
    on, off = (to_numpy(b._losses(params, 5)) for b in (penalized, unpenalized))
    assert np.all(on > off)
    np.testing.assert_allclose(got, np.where(gate > 0, on, off), rtol=1e-6)
    # Training reads the gate, set after the program was compiled: a gated-off
    # run trains as one without penalty, a gated-on one as one with it.
    gated._train_chunk(0)
    gated.penalty_gate.assign(gate[::-1].copy())
    for bench in (gated, unpenalized, penalized):
        bench._train_chunk(40)
    pairs = [(gated, 0), (unpenalized, 0), (gated, 1), (penalized, 1)]
    off, free, on, full = (to_numpy(b.params["w_hat_0"])[i] for b, i in pairs)
    np.testing.assert_allclose(off, free, rtol=1e-6)
    np.testing.assert_allclose(on, full, rtol=1e-6)
    assert np.abs(on - to_numpy(unpenalized.params["w_hat_0"])[1]).max() > 1e-6
    # The protocol sets it from the last interpolation MSE: below 1, on.
    hook = InaluProtocol(20, eval_every=10)
    mse = np.array([0.5, 2.0, np.nan, 0.9])
    hook(gated, [{"iteration": 0, "interpolation": mse}])
    assert to_numpy(gated.penalty_gate).tolist() == [1, 0, 0, 1]
    with pytest.raises(ValueError, match="without a penalty gate.*penalty_gate=True"):
        hook(unpenalized, [{"iteration": 0, "interpolation": mse}])


def test_reinitialize_redraws_those_runs_weights_alone():
    bench = inalu()
    bench._train_chunk(2)
    before = {name: to_numpy(w) for name, w in bench.params.items()}
    adam = [to_numpy(v) for v in bench.optimizer.variables]
    bench.reinitialize([1, 4], draw=1000)
    for name, weight in bench.params.items():
        now = to_numpy(weight)
        changed = np.any(now != before[name], axis=tuple(range(1, now.ndim)))
        assert changed.tolist() == [i in (1, 4) for i in range(len(bench.runs))], name
    for old, new in zip(adam, bench.optimizer.variables, strict=True):
        np.testing.assert_array_equal(old, to_numpy(new))  # Adam's state untouched
    again = inalu()
    again._train_chunk(2)
    again.reinitialize([4, 1], draw=1000)  # the same draw: the same weights
    np.testing.assert_array_equal(to_numpy(again.params["w_hat_0"]),
                                  to_numpy(bench.params["w_hat_0"]))  # fmt: skip
    with pytest.raises(ValueError, match="`runs`, expected indices.*runs=\\[8\\]"):
        bench.reinitialize([8], draw=0)


def their_reinit_epochs(series, every, iterations, interval, max_stored):
    """Their loop (single_layer_benchmark.py, --reinit), literally, on the
    interpolation MSE logged every `every` iterations: the reset epochs."""
    losses, resets = [], []
    for epoch in range(iterations + 1):
        if epoch % every == 0:
            error = series[epoch // every]
        losses.append(error)
        if epoch % interval == 0 and epoch > 0 and len(losses) > max_stored:
            second = losses[len(losses) // 2 :]
            if (
                np.mean(losses[: len(losses) // 2]) <= np.mean(second) + np.std(second)
                and np.mean(second) > 1
            ):
                resets.append(epoch)
                losses = []
    return resets


def test_the_reinitialisation_replays_their_checks():
    every, iterations, interval, stored = 100, 3000, 10, 250
    rng = np.random.default_rng(0)
    series = np.concatenate([
        rng.choice([0.5, 2.0, 3.0, 8.0], size=(8, 31)),
        np.repeat(rng.uniform(0.5, 4, size=(8, 11)), 3, axis=1)[:, :31],
        [np.full(31, 0.5), np.geomspace(50, 2, 31)],  # below 1; always falling
    ])  # fmt: skip
    hook = InaluProtocol(iterations, every, interval, stored)
    ours = [
        hook.update(d, series[:, d // every]) for d in range(0, iterations + 1, every)
    ]
    ours = np.array(ours).T  # (runs, evaluations)
    for run, fired in zip(series, ours, strict=True):
        theirs = their_reinit_epochs(run, every, iterations, interval, stored)
        blocks = {e // every for e in theirs if e < iterations}
        assert set(np.nonzero(fired)[0]) == blocks
    assert 0 < ours.any(axis=1).sum() < len(series)  # some runs reset, not all


def test_the_protocol_reinitializes_in_training_and_replays_after_a_resume(tmp_path):
    bench = inalu(regularization=(4.0, 10, 10), penalty_gate=True)
    hook = InaluProtocol(40, eval_every=10, interval=5, max_stored=5,
                                      loss_threshold=-1.0)  # fmt: skip
    history = bench.run(40, eval_every=10, after_eval=hook,
                        checkpoint=tmp_path)["history"]  # fmt: skip
    assert [e["reinitialized"] for e in history][-1] == []
    assert any(e["reinitialized"] for e in history)  # MSE > -1 always: resets
    saved = [list(hook._lists[i][1]) for i in range(len(bench.runs))]
    fresh = InaluProtocol(40, eval_every=10, interval=5, max_stored=5,
                                       loss_threshold=-1.0)  # fmt: skip
    fresh(bench, history)  # a resumed history: replayed, then this entry
    assert [list(fresh._lists[i][1]) for i in range(len(bench.runs))] == saved
