"""The demo: what neural arithmetic units are for, in about a minute.

Two tasks, `a + b` and `a * b`, on two inputs `a, b` drawn from U[1, 10]. Each
model is one Keras model trained with `model.fit` (through
`keras_nalu.training.fit`, so a killed demo resumes), then tested on fresh
inputs from U[1, 10] (interpolation) and from U[100, 1000] (extrapolation:
numbers 100 times larger than any seen in training). Side by side:

- a ReLU MLP (two hidden layers of 64): what a plain network does;
- the paper's `NALU(1)` (Trask et al., 2018);
- the unit this package recommends for the task: `NAU(1)` for `a + b` and
  `NMU(1)` for `a * b` (Madsen & Johansen, 2020).

Every model trains from `--seeds` seeds; the table gives the median and the
range over the seeds of the mean relative error `|y_hat - y| / |y|`, and how
many seeds extrapolate to within 1e-4. Then the seed-0 model of each row is
exported as a TensorFlow SavedModel under `saved_models/demo/` and served in a
fresh process that imports only TensorFlow, on inputs no model has seen.

    python examples/demo.py                  # the `make demo` run
    python examples/demo.py --seeds 10 --epochs 40
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np

from keras_nalu import NALU, NAU, NMU, export_saved_model
from keras_nalu.training import Progress, fit
from nalu_research.cli import (
    Checkpoints,
    add_backend_argument,
    add_training_arguments,
    can_export,
    create_strategy,
    exits_on_longer_checkpoint,
    is_chief,
    positive_float,
    positive_int,
    report,
    shuffled_epochs,
    steps_per_execution,
)
from nalu_research.monitoring import (
    Evaluation,
    markdown_table,
    output_file,
    output_folder_name,
    save_json,
    tensorboard,
)

TRAIN_RANGE = (1.0, 10.0)
EXTRAPOLATION_RANGE = (100.0, 1000.0)
TASKS = {"a+b": np.add, "a*b": np.multiply}
SOLVED = 1e-4  # mean relative extrapolation error below which a seed counts
STEPS_PER_EXECUTION = 16  # training steps per compiled call (1 on torch)
# Inputs served by the exported models: none of them is in any training set.
SERVED_INPUTS = np.array([[123.0, 456.0], [999.0, 1000.0], [0.5, 0.25]], "float32")


def relu_mlp():
    return [
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(1),
    ]


# For each task, the models in the order of the table: (name, layers).
MODELS = {
    "a+b": {
        "ReLU MLP": relu_mlp,
        "NALU (paper)": lambda: [NALU(1)],
        "NAU": lambda: [NAU(1)],
    },
    "a*b": {
        "ReLU MLP": relu_mlp,
        "NALU (paper)": lambda: [NALU(1)],
        "NMU": lambda: [NMU(1)],
    },
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seeds", type=positive_int, default=5, help="seeds per model")
    parser.add_argument(
        "--epochs", type=positive_int, default=20, help="passes over the training set"
    )
    parser.add_argument("--examples", type=positive_int, default=4096)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--learning-rate", type=positive_float, default=0.01)
    parser.add_argument(
        "--export-dir",
        type=output_folder_name,
        default=os.path.join("saved_models", "demo"),
        help="where the SavedModels go, one folder per task and model",
    )
    parser.add_argument(
        "--no-export",
        action="store_true",
        help="train and report only: no SavedModel (which needs TensorFlow)",
    )
    parser.add_argument(
        "--json", type=output_file, default=None, help="also write the results here"
    )
    add_training_arguments(parser, "demo", continued_by="--epochs")
    add_backend_argument(parser, "demo")
    return parser.parse_args(argv)


def sample(operation, n, value_range, seed):
    x = np.random.default_rng(seed).uniform(*value_range, size=(n, 2))
    return x.astype("float32"), TASKS[operation](x[:, :1], x[:, 1:]).astype("float32")


def relative_error(model, x, y):
    y_hat = keras.ops.convert_to_numpy(model(x, training=False)).astype("float64")
    return float(np.mean(np.abs(y_hat - y) / np.abs(y)))


def build_model(operation, name):
    """The model of the row `name` of `operation`: 2 inputs, 1 output."""
    return keras.Sequential(
        [keras.Input((2,)), *MODELS[operation][name]()], name="model"
    )


def train(operation, name, seed, data, args, strategy, checkpoint_dir, tests):
    """Trains one seed of a row, silently (the demo prints a line per row);
    with `--tensorboard`, its loss and relative errors on `tests` after
    every epoch."""
    x, y = data
    callbacks = tensorboard(args, folder_name(operation, name), seed)
    if callbacks:
        callbacks.insert(0, Evaluation(lambda model: evaluate(model, tests)))
    keras.utils.set_random_seed(seed)
    with exits_on_longer_checkpoint("--epochs", checkpoint_dir, 1):
        return fit(
            lambda: build_model(operation, name),
            shuffled_epochs(x, y, args.batch_size, seed),
            loss="mse",
            optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
            epochs=args.epochs,
            strategy=strategy,
            checkpoint_dir=checkpoint_dir,
            config={
                "operation": operation,
                "model": name,
                "seed": seed,
                **{
                    k: getattr(args, k)
                    for k in ("examples", "batch_size", "learning_rate", "backend")
                },
            },
            steps_per_execution=steps_per_execution(STEPS_PER_EXECUTION),
            callbacks=callbacks,
            verbose=0,
        )


def evaluate(model, tests):
    """`{"<split>_relative_error": ...}` of `model` on each test set."""
    return {
        f"{split}_relative_error": relative_error(model, x, y)
        for split, (x, y) in tests.items()
    }


def interval(value_range):
    return "U[{:g}, {:g}]".format(*value_range)


def fmt(value):
    return f"{value:.1e}" if np.isfinite(value) else str(value)


def main(argv=None):
    args = parse_args(argv)
    strategy = create_strategy(args)
    seeds = list(range(args.seeds))
    print(
        f"Each model learns y = a+b or y = a*b from {args.examples} examples with a, b "
        f"in {interval(TRAIN_RANGE)}\n({args.epochs} epochs, batch {args.batch_size}, "
        f"Adam {args.learning_rate:g}, seeds {seeds[0]}-{seeds[-1]}), then is tested "
        f"on {interval(TRAIN_RANGE)} and on {interval(EXTRAPOLATION_RANGE)}.\n"
    )
    start = time.perf_counter()
    checkpoints = Checkpoints(args, strategy)
    rows, exported = [], {}
    seed_range = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds 0-{seeds[-1]}"
    progress = Progress(sum(map(len, MODELS.values())) * len(seeds), done=0, unit="run")
    for operation in TASKS:
        train_set = sample(operation, args.examples, TRAIN_RANGE, seed=0)
        tests = {
            "interpolation": sample(operation, 2000, TRAIN_RANGE, seed=1),
            "extrapolation": sample(operation, 2000, EXTRAPOLATION_RANGE, seed=2),
        }
        for name in MODELS[operation]:
            errors = {split: [] for split in tests}
            for seed in seeds:
                folder = checkpoints(operation.replace("*", "x"), name.split()[0], seed)
                result = train(
                    operation, name, seed, train_set, args, strategy, folder, tests
                )
                report(result, f"{operation} {name} seed {seed}")
                for split, error in evaluate(result.model, tests).items():
                    errors[split.removesuffix("_relative_error")].append(error)
                if seed == seeds[0]:
                    exported[(operation, name)] = result.model
            rows.append((operation, name, errors))
            progress.update(
                len(rows) * len(seeds),
                {"median extrapolation error": np.median(errors["extrapolation"])},
                what=f"{operation} {name}, {seed_range}",
            )
    train_seconds = time.perf_counter() - start

    print(
        "\nMean relative error |y_hat - y| / |y|: the median over the seeds, "
        "[min, max] below it;\n'solved' counts seeds that extrapolate to within "
        f"{SOLVED:g}.\n"
    )
    table = []
    for operation, name, errors in rows:
        cells = []
        for split in ("interpolation", "extrapolation"):
            values = np.array(errors[split])
            cells.append(
                f"{fmt(np.median(values))} [{fmt(values.min())}, {fmt(values.max())}]"
            )
        solved = int(np.sum(np.array(errors["extrapolation"]) < SOLVED))
        table.append([operation, name, *cells, f"{solved}/{len(seeds)}"])
    header = ["task", "model", "interpolation U[1, 10]", "extrapolation U[100, 1000]"]
    print("\n".join(markdown_table([*header, "solved"], table, align="<<>><")))
    print(
        f"\nTrained {len(rows) * len(seeds)} models in {train_seconds:.0f} s "
        f"on the {keras.backend.backend()} backend."
    )

    served = None
    if is_chief(strategy) and not args.no_export and can_export("the models"):
        served = export_and_serve(exported, args.export_dir)
    if args.json and is_chief(strategy):
        write_json(args, rows, served, train_seconds)
    checkpoints.remove()


def folder_name(operation, name):
    return f"{'add' if operation == 'a+b' else 'mul'}_{name.split()[0].lower()}"


def export_and_serve(models, export_dir):
    """Exports each model, then serves all of them from a fresh process that
    imports TensorFlow only, and prints the served values beside the exact."""
    root = Path(export_dir)
    paths = {}
    for (operation, name), model in models.items():
        paths[(operation, name)] = export_saved_model(
            model, root / folder_name(operation, name), SERVED_INPUTS
        )
    print(
        f"\nExported the seed-0 model of each row to {root}/ (each verified against "
        "its Keras model),\nthen served from a fresh Python process that imports "
        "only TensorFlow:\n"
    )
    served = serve_in_fresh_process([str(p) for p in paths.values()], SERVED_INPUTS)
    table = []
    for operation in TASKS:
        exact = TASKS[operation](SERVED_INPUTS[:, 0], SERVED_INPUTS[:, 1])
        table.append([operation, "exact", *(f"{v:.6g}" for v in exact)])
        for (op, name), path in paths.items():
            if op == operation:
                table.append([op, name, *(f"{v:.6g}" for v in served[str(path)])])
    header = ["task", "model", *(f"f({a:g}, {b:g})" for a, b in SERVED_INPUTS)]
    align = "<<" + ">" * len(SERVED_INPUTS)
    print("\n".join(markdown_table(header, table, align=align)))
    return {f"{op} {name}": served[str(p)] for (op, name), p in paths.items()}


# Runs in the fresh process: no keras_nalu, no Keras, only TensorFlow.
_SERVE = """
import json, sys
import tensorflow as tf
paths, x = json.loads(sys.stdin.read())
out = {}
for path in paths:
    model = tf.saved_model.load(path)
    out[path] = model.serve(tf.constant(x, tf.float32)).numpy()[:, 0].tolist()
assert "keras_nalu" not in sys.modules
print(json.dumps(out))
"""


def serve_in_fresh_process(paths, x):
    result = subprocess.run(
        [sys.executable, "-c", _SERVE],
        input=json.dumps([paths, x.tolist()]),
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"serving failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def write_json(args, rows, served, seconds):
    results = {
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "train_seconds": seconds,
        "errors": [
            {"task": operation, "model": name, **errors}
            for operation, name, errors in rows
        ],
        "served_inputs": SERVED_INPUTS.tolist(),
        "served": served,
    }
    save_json(results, args.json)  # never a half-written file


if __name__ == "__main__":
    main()
