"""First contact: every unit of the package, and Dense, as a new user meets them.

One layer, `UNIT(1)`, on two inputs learns `a + b`, `a - b`, `a * b`, `a / b`
or `a * b` of signed inputs (`nalu_research.tasks.first_contact`) the way a
user writes it: 4,096 training examples, `model.fit` with Adam at 0.01 and
batches of 64 for 100 epochs, the squared error, the layers' default
arguments. It is then tested on numbers about 100 times larger than any seen
in training, by the relative error `mean |y_hat - y| / mean |y|`, after 20
epochs and at the end; "<= 1e-6" and "<= 1e-4" count the seeds whose
extrapolation error is that small at the end. The table answers "which unit
should I use?".

The seeds of a row train side by side: one Keras model holds a copy of the
layer per seed, each built right after `keras.utils.set_random_seed(seed)`,
with a loss per copy. The copies share no weight, Adam's update is
elementwise and the losses add, so each copy trains exactly as it would
alone on the same batches (tested); the seeds differ in their initial
weights, and every seed sees the same training set in the same orders.

A line per model (an operation and a unit, all its seeds) shows the median
errors and the time left; `--tensorboard DIR` logs each seed's loss and
errors after every epoch (DIR/OPERATION/UNIT); the results go to `--json`
(default results/first_contact.json) and a plot beside it. A killed run
resumes from its checkpoints (`keras_nalu.training.fit`).

    python examples/first_contact.py                          # every row
    python examples/first_contact.py --units NAC NAU --operations a+b a-b
"""

import warnings

import numpy as np

from nalu_research import side_by_side
from nalu_research.arguments import Shared, add_selection
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.runs import resumed_total, steps_per_execution
from nalu_research.side_by_side import output_name, outputs_of, seeded
from nalu_research.tasks.first_contact import (
    EXTRAPOLATION_RANGE,
    OPERATIONS,
    TRAIN_RANGES,
    relative_error,
    sample,
)

# The rows' order: the paper's and the later publications'; a unit added to
# the package (`engine_model.LAYERS`) comes after them (`units`).
ORDER = ("Dense", "NAC", "NALU", "NAU", "NMU", "NMRU", "RealNPU", "iNALU")
THRESHOLDS = (1e-6, 1e-4)  # the "solved" columns, on the extrapolation error
# The largest error `keras_nalu.snap_weights` lets through on its own check
# sets (every unit's row is snapped too).
SNAP_RTOL = 1e-4
EARLY_EPOCH = 20  # the first error column
TEST_SIZE = 2000
STEPS_PER_EXECUTION = 16
SPLITS = ("interpolation", "extrapolation")
# The arguments that change a row's training: a checkpoint resumes only with them.
TRAINING_ARGUMENTS = (
    "examples",
    "batch_size",
    "learning_rate",
    "eval_every",
    "backend",
)


def units():
    """`{row: layer class}`: Dense, then each unit of the package (its
    registry, `engine_model.LAYERS`: a unit added to the package is a row),
    named as its class (iNALU as its paper writes it), in `ORDER`."""
    import keras

    from nalu_research.engine_model import LAYERS

    found = {"Dense": keras.layers.Dense}
    for cls in LAYERS.values():
        found["iNALU" if cls.__name__ == "INALU" else cls.__name__] = cls
    ranks = {name: rank for rank, name in enumerate(ORDER)}
    return dict(
        sorted(found.items(), key=lambda item: (ranks.get(item[0], 99), item[0]))
    )


def unit_layer(unit):
    """The layer of the row `unit` (of `units()`) with one output."""
    return units()[unit](1)


def build_model(unit, seeds):
    """A model of one input `(batch, 2)` and one output per seed, the
    copy of `unit_layer(unit)` built right after `set_random_seed(seed)`."""
    import keras

    x = keras.Input((2,), name="x")
    outputs = seeded(
        lambda seed: keras.layers.Identity(name=output_name(seed))(unit_layer(unit)(x)),
        seeds,
    )
    return keras.Model(x, outputs, name=unit)


def evaluated_epochs(args):
    """The epochs after which the models are evaluated and checkpointed:
    every `--eval-every`, and the last."""
    return [*range(args.eval_every, args.epochs, args.eval_every), args.epochs]


def epoch_data(x, y, outputs, args, seed):
    """`data_fn(i)` for `training.fit`, whose epoch `i` is the passes over the
    training set up to the `i`-th evaluation: each pass in its own order,
    drawn from `(seed, pass)` (the same after a resume), the targets once
    per output."""
    import tensorflow as tf

    ends = evaluated_epochs(args)

    def data_fn(i):
        passes = range(ends[i - 1] if i else 0, ends[i])
        order = np.concatenate(
            [np.random.default_rng((seed, e)).permutation(len(x)) for e in passes]
        )
        targets = tuple(y[order] for _ in range(outputs))
        return tf.data.Dataset.from_tensor_slices((x[order], targets)).batch(
            args.batch_size
        )

    return len(ends), data_fn


def predictions(model, x):
    """Each seed's prediction on `x`, a list of `(n, 1)` arrays."""
    import keras

    return [keras.ops.convert_to_numpy(o) for o in outputs_of(model, x)]


def seed_errors(seeds, tests):
    """`Evaluation` after every epoch: each seed's relative error on each
    test set, `<split>/seed_<seed>`, and their median, `<split>_median`."""
    import keras

    return side_by_side.seed_errors(
        seeds,
        tests,
        lambda output, x, y: relative_error(keras.ops.convert_to_numpy(output), y),
        metric=lambda split, seed: f"{split}/{output_name(seed)}",
        median=lambda split: f"{split}_median",
    )


def train_row(operation, unit, seeds, data, tests, args, session):
    """Trains the seeds of one row side by side on the `session`'s strategy,
    checkpointed in its folder OPERATION/UNIT; returns the `training.fit`
    result."""
    import keras

    x, y = data
    evaluations, data_fn = epoch_data(x, y, len(seeds), args, seed=0)
    keras.utils.set_random_seed(0)
    folder = (operation.replace(" ", "_"), unit)
    return session.fit(
        *folder,
        what=f"{operation} {unit}",
        per_epoch=args.eval_every,
        model_fn=lambda: build_model(unit, seeds),
        data_fn=data_fn,
        loss=["mse"] * len(seeds),
        optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
        epochs=evaluations,
        config={
            "operation": operation,
            "unit": unit,
            "seeds": list(seeds),
            **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
            # More epochs continue a kept run whose evaluations were whole.
            "epochs": resumed_total(args.epochs, args.eval_every),
        },
        callbacks=[seed_errors(seeds, tests), *session.callbacks(*folder)],
        steps_per_execution=steps_per_execution(STEPS_PER_EXECUTION),
        verbose=0,
    )


def check_sets(operation):
    """What `snap_weights` verifies a snapped model on: fresh samples of the
    training range and of the extrapolation range (not the test sets)."""
    return {
        "held-out": sample(operation, TEST_SIZE, "train", seed=3),
        "extrapolation": sample(operation, TEST_SIZE, "extrapolation", seed=4),
    }


def snapped_errors(model, seeds, checks, tests):
    """Each seed's copy snapped by `keras_nalu.snap_weights` and verified on
    `checks`: `{"verified": [bool], "penalty_warned": [bool], split:
    [error]}`, the error of the snapped copy where it was verified, else of
    the trained copy (what a user keeps when `snap_weights` refuses).

    A unit of the layers' default penalty schedule (from step 20,000) trains
    here only before it starts, and `snap_weights` warns so: the warning
    is what a user meets, kept per seed (`penalty_warned`), not printed."""
    import keras

    from keras_nalu import snap_weights

    result = {"verified": [], "penalty_warned": [], **{split: [] for split in tests}}
    for i, _ in enumerate(seeds):
        copy = keras.Model(model.inputs[0], model.outputs[i])
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", UserWarning)
            try:
                copy, _ = snap_weights(copy, checks, rtol=SNAP_RTOL)
                result["verified"].append(True)
            except ValueError:
                result["verified"].append(False)
        result["penalty_warned"].append(
            any("penalty starts" in str(w.message) for w in said)
        )
        for split, (x, y) in tests.items():
            result[split].append(relative_error(predictions(copy, x)[0], y))
    return result


def row_results(history, seeds, args):
    """Each seed's errors after `EARLY_EPOCH` epochs (when evaluated then and
    trained longer) and at the end, from the run's history."""
    ends = evaluated_epochs(args)
    marks = {"final": len(ends) - 1}
    if EARLY_EPOCH in ends[:-1]:
        marks = {"early": ends.index(EARLY_EPOCH), **marks}
    return {
        mark: {
            split: [history[f"{split}/seed_{s}"][i] for s in seeds] for split in SPLITS
        }
        for mark, i in marks.items()
    }


def fmt(value):
    return f"{value:.1e}" if np.isfinite(value) else "inf"


def cell(values):
    values = np.asarray(values)
    return f"{fmt(np.median(values))} [{fmt(values.min())}, {fmt(values.max())}]"


def counts(errors):
    final = np.asarray(errors["extrapolation"])
    return [f"{int(np.sum(final <= t))}/{len(final)}" for t in THRESHOLDS]


class FirstContactExperiment(Experiment):
    """First contact: every unit of the package, and Dense, as a new user meets them."""

    arguments = {
        "examples": 4096,
        "seeds": Shared(10, help="seeds 0..N-1 per row"),
        "epochs": 100,
        "eval_every": Shared(
            10,
            help="epochs between evaluations (and checkpoints); the errors after "
            f"{EARLY_EPOCH} epochs are read when {EARLY_EPOCH} is one of them "
            "(default %(default)s)",
        ),
        "batch_size": 64,
        "learning_rate": 0.01,
    }
    record_path = "results/first_contact.json"
    checkpoints = True
    continued_by = "--epochs"
    run_unit = "model"

    def add_arguments(self, parser):
        add_selection(parser, "--operations", OPERATIONS, "the operations")
        parser.add_argument(
            "--units",
            nargs="+",
            metavar="UNIT",
            help="the rows: Dense and the package's units by class name "
            "(iNALU for INALU; default: all)",
        )

    def check_arguments(self, args, parser):
        rows = list(units())  # the units' registry: Keras, on its backend now
        unknown = [unit for unit in args.units or () if unit not in rows]
        if unknown:
            parser.error(
                f"argument --units: invalid choice: {unknown[0]!r} (choose from "
                f"{', '.join(rows)})"
            )
        args.units = args.units or rows

    def prepare(self, args, session):
        self.seeds = list(range(args.seeds))
        # Each operation's training set and test sets.
        self.sets = {
            operation: (
                sample(operation, args.examples, "train", seed=0),
                {
                    "interpolation": sample(operation, TEST_SIZE, "train", seed=1),
                    "extrapolation": sample(
                        operation, TEST_SIZE, "extrapolation", seed=2
                    ),
                },
            )
            for operation in args.operations
        }
        print(
            f"One layer UNIT(1) on two inputs, {args.examples} training examples, "
            f"model.fit with Adam {args.learning_rate:g}, batch {args.batch_size}, "
            f"{args.epochs} epochs, seeds {self.seeds[0]}-{self.seeds[-1]} side by "
            f"side; {args.backend} backend.\n"
        )

    def runs(self, args):
        return [
            (operation, unit) for operation in args.operations for unit in args.units
        ]

    def train(self, args, run, session):
        operation, unit = run
        data, tests = self.sets[operation]
        result = train_row(operation, unit, self.seeds, data, tests, args, session)
        row = {
            "operation": operation,
            "unit": unit,
            "errors": row_results(result.history, self.seeds, args),
            "diverged": result.divergence,
            "median_curves": {
                split: result.history[f"{split}_median"] for split in SPLITS
            },
        }
        if unit != "Dense":
            row["snapped"] = snapped_errors(
                result.model, self.seeds, check_sets(operation), tests
            )
        return row

    def run_name(self, run, row):
        operation, unit = run
        return f"{operation} {unit}" + (", diverged" if row["diverged"] else "")

    def progress(self, row):
        errors = row["errors"]
        return {
            f"median extrapolation error{f' at {e}' if e else ''}": np.median(
                errors[mark]["extrapolation"]
            )
            for mark, e in (("early", EARLY_EPOCH), ("final", None))
            if mark in errors
        }

    def report(self, args, rows):
        early = EARLY_EPOCH in evaluated_epochs(args)[:-1]
        heads = ([f"after {EARLY_EPOCH} epochs"] if early else []) + [
            f"after {args.epochs} epochs"
        ]
        print(
            "\nExtrapolation error mean |y_hat - y| / mean |y| on inputs 100 times "
            "larger than in training:\nthe median over the seeds, [min, max]; the "
            f"seeds at most 1e-6 and 1e-4 after {args.epochs} epochs.\n"
        )
        for operation in args.operations:
            low, high = TRAIN_RANGES[operation]
            print(
                f"{operation}: trained on U[{low:g}, {high:g}], tested on "
                f"{'+-' if operation.startswith('signed') else ''}"
                f"U[{EXTRAPOLATION_RANGE[0]:g}, {EXTRAPOLATION_RANGE[1]:g}]\n"
            )
            table = []
            for row in rows:
                if row["operation"] != operation:
                    continue
                marks = [row["errors"]["early"]] if early else []
                marks.append(row["errors"]["final"])
                cells = [cell(m["extrapolation"]) for m in marks]
                name = row["unit"] + (" (diverged)" if row["diverged"] else "")
                table.append([name, *cells, *counts(marks[-1])])
                if "snapped" in row:
                    snapped = row["snapped"]
                    verified = sum(snapped["verified"])
                    table.append(
                        [
                            f"{row['unit']} + snap_weights ({verified}/"
                            f"{len(snapped['verified'])} verified)",
                            *["-"] * (len(heads) - 1),
                            cell(snapped["extrapolation"]),
                            *counts(snapped),
                        ]
                    )
            header = ["unit", *heads, "<= 1e-6", "<= 1e-4"]
            print("\n".join(markdown_table(header, table)))
            print()
        print(
            "'+ snap_weights': each seed's trained layer snapped to exact weights "
            "by keras_nalu.snap_weights,\nkept where it fits fresh samples of both "
            f"ranges within {SNAP_RTOL:g} (verified), else the trained layer.\n"
        )
        print(
            f"Trained {len(rows)} models of {len(self.seeds)} seeds in "
            f"{self.elapsed():.0f} s on the "
            f"{args.backend} backend."
        )

    def record(self, args, rows):
        settings = {k: v for k, v in vars(args).items() if k != "strategy"}
        return {
            "settings": {
                **settings,
                "test_size": TEST_SIZE,
                "thresholds": THRESHOLDS,
                "seconds": round(self.elapsed(), 1),
            },
            "rows": rows,  # what the docs' tables read (also the record's runs)
        }

    def plot(self, args, rows, plt):
        """Each seed's extrapolation error per row (dots), their median (bar)
        and the median snapped (triangle), a panel per operation."""
        operations = args.operations
        fig, axes = plt.subplots(
            1, len(operations), figsize=(2.6 * len(operations) + 1, 3.6), sharey=True
        )
        axes = np.atleast_1d(axes)
        for ax, operation in zip(axes, operations, strict=True):
            mine = [r for r in rows if r["operation"] == operation]
            for i, row in enumerate(mine):
                values = np.asarray(
                    row["errors"]["final"]["extrapolation"], dtype=float
                )
                shown = np.clip(np.nan_to_num(values, nan=1e3, posinf=1e3), 1e-9, 1e3)
                ax.scatter(np.full(len(shown), i), shown, s=9, alpha=0.5, color="C0")
                ax.plot([i - 0.3, i + 0.3], [np.median(shown)] * 2, color="C3", lw=2)
                if "snapped" in row:
                    snapped = np.asarray(row["snapped"]["extrapolation"], dtype=float)
                    snapped = np.clip(
                        np.nan_to_num(snapped, nan=1e3, posinf=1e3), 1e-9, 1e3
                    )
                    ax.scatter(
                        [i + 0.25],
                        [np.median(snapped)],
                        marker="v",
                        s=30,
                        color="C2",
                        label="snapped (median)",
                    )
            ax.set_xticks(range(len(mine)), [r["unit"] for r in mine], rotation=60)
            ax.set_yscale("log")
            ax.set_ylim(1e-9, 2e3)
            for threshold in THRESHOLDS:
                ax.axhline(threshold, color="0.6", lw=0.8, ls=":")
            ax.set_title(operation, fontsize=10)
        axes[0].set_ylabel("extrapolation error (relative)")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            unique = dict(zip(labels, handles, strict=True))
            fig.legend(unique.values(), unique.keys(), loc="upper right", fontsize=8)
        fig.suptitle(
            f"One layer, {args.epochs} epochs of model.fit: each seed (dots), the "
            "median (bar), snapped by snap_weights (triangle); dotted at 1e-6 and "
            "1e-4",
            fontsize=9,
        )
        fig.tight_layout()
        return fig


def main(argv=None):
    return FirstContactExperiment().main(argv)
