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

import os

import numpy as np

from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.serving import Export

TRAIN_RANGE = (1.0, 10.0)
EXTRAPOLATION_RANGE = (100.0, 1000.0)
TASKS = {"a+b": np.add, "a*b": np.multiply}
SOLVED = 1e-4  # mean relative extrapolation error below which a seed counts
STEPS_PER_EXECUTION = 16  # training steps per compiled call (1 on torch)
# Inputs served by the exported models: none of them is in any training set.
SERVED_INPUTS = np.array([[123.0, 456.0], [999.0, 1000.0], [0.5, 0.25]], "float32")


def relu_mlp():
    import keras

    return [
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(1),
    ]


def unit(name):
    """The `keras_nalu` layer `name` with one output."""
    import keras_nalu

    return getattr(keras_nalu, name)(1)


# For each task, the models in the order of the table: (name, layers).
MODELS = {
    "a+b": {
        "ReLU MLP": relu_mlp,
        "NALU (paper)": lambda: [unit("NALU")],
        "NAU": lambda: [unit("NAU")],
    },
    "a*b": {
        "ReLU MLP": relu_mlp,
        "NALU (paper)": lambda: [unit("NALU")],
        "NMU": lambda: [unit("NMU")],
    },
}


def sample(operation, n, value_range, seed):
    x = np.random.default_rng(seed).uniform(*value_range, size=(n, 2))
    return x.astype("float32"), TASKS[operation](x[:, :1], x[:, 1:]).astype("float32")


def relative_error(model, x, y):
    import keras

    y_hat = keras.ops.convert_to_numpy(model(x, training=False)).astype("float64")
    return float(np.mean(np.abs(y_hat - y) / np.abs(y)))


def build_model(operation, name):
    """The model of the row `name` of `operation`: 2 inputs, 1 output."""
    import keras

    return keras.Sequential(
        [keras.Input((2,)), *MODELS[operation][name]()], name="model"
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


def folder_name(operation, name):
    return f"{'add' if operation == 'a+b' else 'mul'}_{name.split()[0].lower()}"


class Demo(Experiment):
    """The demo: what neural arithmetic units are for, in about a minute."""

    arguments = {
        "examples": 4096,
        "seeds": 5,
        "epochs": 20,
        "batch_size": 64,
        "learning_rate": 0.01,
    }
    record_path = ""  # a record only with --json
    checkpoints = True
    continued_by = "--epochs"
    export_path = os.path.join("saved_models", "demo")

    def prepare(self, args, session):
        self.seeds = list(range(args.seeds))
        print(
            f"Each model learns y = a+b or y = a*b from {args.examples} examples "
            f"with a, b in {interval(TRAIN_RANGE)}\n({args.epochs} epochs, batch "
            f"{args.batch_size}, Adam {args.learning_rate:g}, seeds "
            f"{self.seeds[0]}-{self.seeds[-1]}), then is tested on "
            f"{interval(TRAIN_RANGE)} and on {interval(EXTRAPOLATION_RANGE)}.\n"
        )
        self.data = {
            operation: (
                sample(operation, args.examples, TRAIN_RANGE, seed=0),
                {
                    "interpolation": sample(operation, 2000, TRAIN_RANGE, seed=1),
                    "extrapolation": sample(
                        operation, 2000, EXTRAPOLATION_RANGE, seed=2
                    ),
                },
            )
            for operation in TASKS
        }
        self.exported = {}

    def runs(self, args):
        return [(operation, name) for operation in TASKS for name in MODELS[operation]]

    def train(self, args, run, session):
        """Trains the seeds of a row, silently (a line per row); with
        `--tensorboard`, each one's loss and relative errors on the test sets
        after every epoch."""
        from nalu_research.monitoring import Evaluation

        operation, name = run
        (x, y), tests = self.data[operation]
        errors = {split: [] for split in tests}
        for seed in self.seeds:
            callbacks = session.callbacks(folder_name(operation, name), seed)
            if callbacks:
                callbacks.insert(0, Evaluation(lambda model: evaluate(model, tests)))
            result = session.fit_seed(
                operation.replace("*", "x"),
                name.split()[0],
                seed=seed,
                what=f"{operation} {name} seed {seed}",
                model_fn=lambda: build_model(operation, name),
                x=x,
                y=y,
                config={"operation": operation, "model": name},
                callbacks=callbacks,
                steps_per_execution=STEPS_PER_EXECUTION,
            )
            for split, error in evaluate(result.model, tests).items():
                errors[split.removesuffix("_relative_error")].append(error)
            if seed == self.seeds[0]:
                self.exported[run] = result.model
        return {"task": operation, "model": name, **errors}

    def progress(self, row):
        return {"median extrapolation error": np.median(row["extrapolation"])}

    def run_name(self, run, row):
        seeds = self.seeds
        return " ".join(run) + (
            f", seed {seeds[0]}" if len(seeds) == 1 else f", seeds 0-{seeds[-1]}"
        )

    def report(self, args, rows):
        seconds = self.elapsed()
        print(
            "\nMean relative error |y_hat - y| / |y|: the median over the seeds, "
            "[min, max] below it;\n'solved' counts seeds that extrapolate to within "
            f"{SOLVED:g}.\n"
        )
        table = []
        for row in rows:
            cells = []
            for split in ("interpolation", "extrapolation"):
                values = np.array(row[split])
                cells.append(
                    f"{fmt(np.median(values))} [{fmt(values.min())}, "
                    f"{fmt(values.max())}]"
                )
            solved = int(np.sum(np.array(row["extrapolation"]) < SOLVED))
            table.append([row["task"], row["model"], *cells, f"{solved}/{args.seeds}"])
        header = [
            "task",
            "model",
            "interpolation U[1, 10]",
            "extrapolation U[100, 1000]",
        ]
        print("\n".join(markdown_table([*header, "solved"], table, align="<<>><")))
        print(
            f"\nTrained {len(rows) * args.seeds} models in {seconds:.0f} s "
            f"on the {args.backend} backend."
        )

    def exports(self, args, rows):
        return [
            Export(folder_name(*run), model, SERVED_INPUTS)
            for run, model in self.exported.items()
        ]

    def served(self, args, served):
        """Prints the served values beside the exact ones."""
        print(
            f"\nExported the seed-0 model of each row to {args.export_dir}/ (each "
            "verified against its Keras model),\nthen served from a fresh Python "
            "process that imports only TensorFlow:\n"
        )
        values = {
            run: np.ravel(served[folder_name(*run)]["served"]) for run in self.exported
        }
        table = []
        for operation in TASKS:
            exact = TASKS[operation](SERVED_INPUTS[:, 0], SERVED_INPUTS[:, 1])
            table.append([operation, "exact", *(f"{v:.6g}" for v in exact)])
            for (op, name), value in values.items():
                if op == operation:
                    table.append([op, name, *(f"{v:.6g}" for v in value)])
        header = ["task", "model", *(f"f({a:g}, {b:g})" for a, b in SERVED_INPUTS)]
        align = "<<" + ">" * len(SERVED_INPUTS)
        print("\n".join(markdown_table(header, table, align=align)))
        return {f"{op} {name}": value.tolist() for (op, name), value in values.items()}

    def record(self, args, rows):
        return {"errors": rows, "served_inputs": SERVED_INPUTS.tolist()}


def main(argv=None):
    return Demo().main(argv)
