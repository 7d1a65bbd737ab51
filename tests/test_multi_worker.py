"""`keras_nalu.distribute.Trainer` under `MultiWorkerMirroredStrategy`.

Two worker processes on 127.0.0.1, each with its own `TF_CONFIG`, train
through `keras_nalu.training.fit` (the examples' loop, which picks the trainer
under this strategy) a
NAU -> NMU model (its penalty ramps over the first steps) and must end with
identical weights, equal to those of a single-process run with the same global
batch and seed, step losses included. A multi-worker strategy must be created
before TensorFlow starts, so every run is a fresh process.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_nalu import NAU, NMU
from keras_nalu.distribute import Trainer, make_strategy

pytestmark = pytest.mark.processes

STEPS = 6
TIMEOUT = 90  # seconds for all processes together; they take about 10

WORKER = textwrap.dedent(
    """
    import json, os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    from keras_nalu.distribute import Trainer, make_strategy

    strategy_name, out = sys.argv[1], sys.argv[2]
    # First: collective ops must be configured before TensorFlow starts.
    strategy = make_strategy(strategy_name)

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_nalu import NAU, NMU

    from keras_nalu.training import fit

    class StepLosses(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.losses = []

        def on_train_batch_end(self, batch, logs=None):
            # The mean of the epoch so far, as model.fit logs it.
            self.losses.append(logs["loss"])

    schedule = {"regularization_start": 0, "regularization_end": 3}
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 2, (64, 4)).astype("float32")
    y = x[:, :1] * x[:, 1:2]
    step_losses = StepLosses()
    # The examples' loop: the custom one under a multi-worker strategy;
    # 2 epochs of STEPS / 2 batches, checkpointed by the chief only.
    result = fit(
        lambda: keras.Sequential(
            [keras.Input((4,)), NAU(2, **schedule), NMU(1, **schedule)]
        ),
        lambda epoch: tf.data.Dataset.from_tensor_slices((x, y)).skip(
            epoch * 16 * STEPS // 2
        ).repeat().batch(16).take(STEPS // 2),
        loss="mse",
        optimizer_fn=lambda: keras.optimizers.Adam(0.01),
        epochs=2,
        strategy=strategy,
        checkpoint_dir=out + ".checkpoint",
        callbacks=[step_losses],
    )
    losses = step_losses.losses
    model = result.model

    from keras_nalu.distribute import gather_json, worker_index

    # Values of uneven sizes, gathered by every worker in worker order.
    index, count = worker_index(strategy)
    gathered = gather_json(
        {"worker": index, "of": count, "pad": "x" * (3 + 40 * index)}, strategy
    )
    weights = [keras.ops.convert_to_numpy(w) for w in model.weights]
    np.savez(
        out,
        losses=np.array(losses),
        replicas=strategy.num_replicas_in_sync,
        gathered=json.dumps(gathered),
        paths=np.array([w.path for w in model.weights]),
        **{f"w{i}": w for i, w in enumerate(weights)},
    )
    """
).replace("STEPS", str(STEPS))


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def run_all(commands, tmp_path, script=None):
    """Starts one process per `(args, env)` of `script` (default: `WORKER`),
    waits for all; kills all on failure."""
    if script is None:
        script = tmp_path / "worker.py"
        script.write_text(WORKER)
    procs = []
    try:
        for i, (args, env) in enumerate(commands):
            log = open(tmp_path / f"log{i}.txt", "w")
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script), *args],
                    env={**os.environ, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            log.close()
        deadline = time.monotonic() + TIMEOUT
        # Poll all: a worker that fails leaves its peer waiting for it.
        while any(proc.poll() is None for proc in procs):
            failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
            if failed or time.monotonic() > deadline:
                i = failed[0] if failed else 0
                logs = (tmp_path / f"log{i}.txt").read_text()[-3000:]
                what = f"ended with {procs[i].poll()}" if failed else "timed out"
                pytest.fail(f"process {i} {what}:\n{logs}")
            time.sleep(0.1)
        for i, proc in enumerate(procs):
            if proc.returncode != 0:
                logs = (tmp_path / f"log{i}.txt").read_text()[-3000:]
                pytest.fail(f"process {i} ended with {proc.returncode}:\n{logs}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def tf_configs(count):
    workers = [f"127.0.0.1:{p}" for p in free_ports(count)]
    return [
        json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
        )
        for i in range(count)
    ]


def test_two_workers_match_a_single_process_run(tmp_path):
    commands = [
        (["multi-worker", str(tmp_path / f"worker{i}.npz")], {"TF_CONFIG": config})
        for i, config in enumerate(tf_configs(2))
    ]
    # The single-process run, alongside: the default strategy, no TF_CONFIG.
    commands.append((["default", str(tmp_path / "single.npz")], {"TF_CONFIG": ""}))
    run_all(commands, tmp_path)

    single = np.load(tmp_path / "single.npz")
    first, second = (np.load(tmp_path / f"worker{i}.npz") for i in range(2))
    assert int(single["replicas"]) == 1
    assert int(first["replicas"]) == int(second["replicas"]) == 2
    paths = list(single["paths"])
    assert len(paths) == 4  # each layer's kernel and step counter
    for i, path in enumerate(paths):
        name = f"w{i}"
        np.testing.assert_array_equal(first[name], second[name], err_msg=path)
        np.testing.assert_allclose(
            first[name], single[name], rtol=1e-5, atol=1e-6, err_msg=path
        )
        if path.endswith("regularization_step"):
            # Each global step counted once, not once per replica.
            assert int(first[name]) == int(single[name]) == STEPS, path
    np.testing.assert_array_equal(first["losses"], second["losses"])
    np.testing.assert_allclose(first["losses"], single["losses"], rtol=1e-5)
    assert single["losses"].shape == (STEPS,)
    both = [{"worker": i, "of": 2, "pad": "x" * (3 + 40 * i)} for i in range(2)]
    assert json.loads(str(first["gathered"])) == both
    assert json.loads(str(second["gathered"])) == both
    assert json.loads(str(single["gathered"])) == [{"worker": 0, "of": 1, "pad": "xxx"}]
    # Only the chief (worker 0) writes the checkpoint.
    written = [
        (tmp_path / f"{name}.npz.checkpoint" / "checkpoint.npz").exists()
        for name in ("worker0", "worker1", "single")
    ]
    assert written == [True, False, True]


@pytest.mark.research  # plots with matplotlib
def test_benchmark_splits_its_seeds_over_two_workers(tmp_path):
    """The seed-batched benchmark under `--strategy multi-worker`: each worker
    trains its seeds, the results are gathered, and the chief's JSON equals a
    single process's run of all the seeds."""
    benchmark = Path(__file__).resolve().parents[1] / "examples/units_benchmark.py"

    def command(name, strategy):
        return [
            "--seeds", "3", "--iterations", "40", "--eval-every", "20",
            "--eval-size", "64", "--operations", "add", "mul", "--models", "nau",
            "nac", "--strategy", strategy, "--json", str(tmp_path / f"{name}.json"),
            "--png", str(tmp_path / f"{name}.png"),
            "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints"),
        ]  # fmt: skip

    commands = [
        (command(f"worker{i}", "multi-worker"), {"TF_CONFIG": config})
        for i, config in enumerate(tf_configs(2))
    ]
    commands.append((command("single", "default"), {"TF_CONFIG": ""}))
    run_all(commands, tmp_path, script=benchmark)
    single = json.loads((tmp_path / "single.json").read_text())
    chief = json.loads((tmp_path / "worker0.json").read_text())
    assert not (tmp_path / "worker1.json").exists()  # only the chief writes
    assert len(chief["runs"]) == len(single["runs"]) == 2 * 2 * 3
    for ours, theirs in zip(chief["runs"], single["runs"], strict=True):
        assert (ours["model"], ours["operation"], ours["seed"]) == (
            theirs["model"], theirs["operation"], theirs["seed"]
        )  # fmt: skip
        # A run does not depend on the runs beside it (up to float rounding).
        for key in ("interpolation_mse", "extrapolation_mse"):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-3), key
        assert ours["success"] == theirs["success"]
    for name in ("worker0", "worker1", "single"):
        assert not (tmp_path / f"{name}_checkpoints").exists()


def model_fn():
    return keras.Sequential([keras.Input((2,)), NAU(1)])


def adam():
    return keras.optimizers.Adam(0.01)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"model_fn": None}, "model_fn"),
        ({"model_fn": lambda: "not a model"}, "model_fn"),
        ({"model_fn": lambda: keras.Sequential([NAU(1)])}, "model_fn"),
        ({"optimizer_fn": "adam"}, "optimizer_fn"),
        ({"optimizer_fn": lambda: "adam"}, "optimizer_fn"),
        ({"loss": "no_such_loss"}, "loss"),
        ({"loss": 3}, "loss"),
        ({"strategy": "tpu"}, "strategy"),
        ({"strategy": 2}, "strategy"),
        ({"global_batch_size": 0}, "global_batch_size"),
        ({"global_batch_size": 8.0}, "global_batch_size"),
    ],
)
def test_invalid_trainer_argument_raises(kwargs, name):
    args = {"model_fn": model_fn, "loss": "mse", "optimizer_fn": adam, **kwargs}
    with pytest.raises(ValueError, match=f"invalid value for `{name}`"):
        Trainer(**args)


@pytest.mark.parametrize("steps", [0, -1, 2.0, None, True])
def test_invalid_steps_raises(steps):
    trainer = Trainer(model_fn, "mse", adam)
    dataset = tf.data.Dataset.from_tensor_slices((np.ones((4, 2)), np.ones((4, 1))))
    with pytest.raises(ValueError, match="Received: steps="):
        trainer.train(dataset.batch(2), steps)


def test_invalid_dataset_raises():
    trainer = Trainer(model_fn, "mse", adam)
    with pytest.raises(ValueError, match="invalid value for `dataset`"):
        trainer.train(np.ones((4, 2)), 1)


def test_a_dataset_that_runs_out_raises():
    trainer = Trainer(model_fn, "mse", adam)
    x = np.ones((4, 2), "float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(2)
    with pytest.raises(ValueError, match="ran out after 2 batches"):
        trainer.train(dataset, 3)


def test_invalid_strategy_name_raises():
    with pytest.raises(ValueError, match="Received: name='tpu'"):
        make_strategy("tpu")


def test_losses_include_the_scheduled_penalty():
    """One step by hand: mean squared error plus the NAU's penalty."""
    kernel = np.array([[0.5], [1.0]], "float32")
    trainer = Trainer(
        lambda: keras.Sequential(
            [
                keras.Input((2,)),
                NAU(
                    1,
                    regularization_start=0,
                    regularization_end=1,
                    kernel_initializer=keras.initializers.Constant(kernel),
                ),
            ]
        ),
        "mse",
        lambda: keras.optimizers.SGD(0.0),
    )
    x = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
    y = np.array([[0.0], [1.0]], "float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    (loss,) = trainer.train(dataset, 1)
    mse = np.mean((x @ kernel - y) ** 2)
    penalty = np.mean(np.minimum(np.abs(kernel), 1 - np.abs(kernel)))
    layer = trainer.model.layers[0]
    weight = float(keras.ops.convert_to_numpy(layer.regularization_weight))
    assert weight > 0
    np.testing.assert_allclose(loss, mse + weight * penalty, rtol=1e-6)


def nau_nmu():
    schedule = {"regularization_start": 0, "regularization_end": 3}
    return keras.Sequential([keras.Input((4,)), NAU(2, **schedule), NMU(1, **schedule)])


@pytest.mark.parametrize(
    "loss, as_function",
    [
        (keras.losses.MeanSquaredError(), False),
        (lambda y, y_pred: (y - y_pred) ** 2, False),  # per element: averaged
        ("mse", True),  # dataset_fn(input_context), per-replica batches
    ],
)
def test_loss_and_dataset_forms_give_the_same_losses(loss, as_function):
    x = np.random.default_rng(0).uniform(1, 2, (32, 4)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1] * x[:, 1:2]))

    def run(loss, data):
        keras.utils.set_random_seed(0)
        return Trainer(nau_nmu, loss, adam).train(data, 4)

    def dataset_fn(context):
        return dataset.batch(context.get_per_replica_batch_size(8)).repeat()

    reference = run("mse", dataset.batch(8).repeat())
    losses = run(loss, dataset_fn if as_function else dataset.batch(8).repeat())
    np.testing.assert_allclose(losses, reference, rtol=1e-6)
