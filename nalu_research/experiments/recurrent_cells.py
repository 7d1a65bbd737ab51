"""Which recurrent cell for a running sum, a count or a running product.

Each cell, `keras.layers.RNN(CELL(1))`, reads a sequence `x_1 ... x_T` of one
feature and returns its last state, trained to be:

- `sum`: `x_1 + ... + x_T`, `x_t` from U[0, 1];
- `count`: how many `x_t` are 1, `x_t` 0 or 1 with even odds;
- `product`: `x_1 * ... * x_T`, `x_t` from U[1, 1.2].

4,096 training sequences of length 10, `model.fit` with Adam at 0.01 and
batches of 64, the squared error, the cells' default arguments, as a user
first writes them; tested on fresh sequences of length 10 and of length 100
(ten times longer than any seen in training), by the relative error
`mean |y_hat - y| / mean |y|`. "solved" counts the seeds whose length-100
error is at most 1e-4.

    python examples/recurrent_cells.py              # every row, 5 seeds
    python examples/recurrent_cells.py --seeds 10 \\
        --json docs/units/recurrent-cells/recurrent_cells.json  # the page's
"""

import numpy as np

from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table, spread_and_solved

CELLS = ("NACCell", "NALUCell", "NAUCell")  # classes of `keras_nalu`
TASKS = ("sum", "count", "product")
# A running product as a running sum of logarithms: `exp(NAUCell(log x))`.
# The product task's fourth row: every cell's state starts at 0, where a
# log-space product (the NALUCell's) is stuck, so none of them holds one.
LOG_SPACE = "exp(NAUCell(log x))"


def build_model(name):
    """`keras.layers.RNN(CELL(1))` for a name of `CELLS`, or `LOG_SPACE`."""
    import keras

    import keras_nalu

    if name == LOG_SPACE:
        return keras.Sequential(
            [
                keras.Input((None, 1)),
                keras.layers.Lambda(keras.ops.log),
                keras.layers.RNN(keras_nalu.NAUCell(1)),
                keras.layers.Lambda(keras.ops.exp),
            ]
        )
    return keras.Sequential(
        [keras.Input((None, 1)), keras.layers.RNN(getattr(keras_nalu, name)(1))]
    )


TRAIN_LENGTH = 10
TEST_LENGTH = 100
TEST_SIZE = 1000
SOLVED = 1e-4
STEPS_PER_EXECUTION = 16


def sample(task, n, length, seed):
    """`(x, y)`: `n` sequences `(n, length, 1)` float32 of `task` and their
    targets `(n, 1)`, computed in float64 from the float32 inputs."""
    rng = np.random.default_rng(seed)
    if task == "sum":
        x = rng.uniform(0.0, 1.0, (n, length, 1))
    elif task == "count":
        x = rng.integers(0, 2, (n, length, 1))
    else:
        x = rng.uniform(1.0, 1.2, (n, length, 1))
    x = x.astype("float32")
    wide = x.astype("float64")
    y = wide.prod(axis=1) if task == "product" else wide.sum(axis=1)
    return x, y.astype("float32")


def relative_error(model, x, y):
    import keras

    y_hat = keras.ops.convert_to_numpy(model(x, training=False)).astype("float64")
    return float(np.mean(np.abs(y_hat - y)) / np.mean(np.abs(y)))


class RecurrentCells(Experiment):
    """Which recurrent cell for a running sum, a count or a running product."""

    arguments = {
        "examples": 4096,
        "seeds": 5,
        "epochs": 30,
        "batch_size": 64,
        "learning_rate": 0.01,
    }
    record_path = "results/recurrent_cells.json"
    checkpoints = True
    continued_by = "--epochs"
    run_unit = "row"

    def prepare(self, args, session):
        self.data = {
            task: {
                "train": sample(task, args.examples, TRAIN_LENGTH, seed=0),
                "length 10": sample(task, TEST_SIZE, TRAIN_LENGTH, seed=1),
                "length 100": sample(task, TEST_SIZE, TEST_LENGTH, seed=2),
            }
            for task in TASKS
        }

    def runs(self, args):
        return [(task, name) for task in TASKS for name in CELLS] + [
            ("product", LOG_SPACE)
        ]

    def train(self, args, run, session):
        task, name = run
        data = self.data[task]
        x, y = data["train"]
        row = {"task": task, "cell": name, "length 10": [], "length 100": []}
        for seed in range(args.seeds):
            result = session.fit_seed(
                task,
                name,
                seed=seed,
                model_fn=lambda: build_model(name),
                x=x,
                y=y,
                config={"task": task, "cell": name},
                steps_per_execution=STEPS_PER_EXECUTION,
            )
            for split in ("length 10", "length 100"):
                row[split].append(relative_error(result.model, *data[split]))
        return row

    def progress(self, row):
        return {"median length-100 error": np.median(row["length 100"])}

    def report(self, args, rows):
        print(
            f"\nRelative error (median [min, max] over {args.seeds} seeds; solved: "
            f"length-100 error <= {SOLVED:g}), {args.epochs} epochs:\n"
        )
        print("\n".join(markdown_table(*table(rows, args.seeds))))


def table(rows, seeds):
    """The header and rows of the results table (also the docs page's,
    read by its records module)."""
    header = ["task", "cell", "length 10", "length 100", "solved"]
    lines = []
    for row in rows:
        short = spread_and_solved(row["length 10"], SOLVED)[0]
        lines.append(
            [
                row["task"],
                f"`{row['cell']}`",
                short,
                *spread_and_solved(row["length 100"], SOLVED),
            ]
        )
    return header, lines


def main(argv=None):
    return RecurrentCells().main(argv)
