"""The "mystery arithmetic" task of the reference PyTorch walk-through.

100 inputs, 10 outputs, each `op(x_i, x_j)` for random `i != j` and `op` in
{+, -, *}. Training on 1,000 examples from U[-10, 10], 250 epochs of batches of
32, Adam lr 1e-3, MSE (the blog's setup); testing on 1,000 examples from
U[-50, 50] (the blog's code drew its test set from U[-10, 10] by mistake).
Models, each one layer as in the blog: Dense + ReLU, NAC, NALU (paper's tied
weights), and iNALU (sign-aware: the task's products of signed inputs need it).
`--models NAU-NMU` adds ours (not run by default): a NAU and an NMU side by
side, concatenated, then a NAU to the outputs, trained with the penalty ramped
in over the middle of the run and gradient clipping, then snapped
(`keras_nalu.snap_weights` with `search=True`: halfway weights decided on a
held-out sample of the test range, kept if no worse there) and read out as
formulas (`keras_nalu.formulas`).
`--division` adds `/` to the operations, on the blog's ranges with (-1, 1)
cut out (a quotient's variance is infinite on a range around 0); `--models
NAU-NMRU` is the NAU-NMU with an NMRU, which also divides, in the NMU's
place and a NAU of 20 units beside it, trained on the normalized MSE
(`keras_nalu.losses`: each output's squared error over its variance, so a
quotient pulls as hard as a product).
Prints the final training loss and test MSE, the test MSE per kind of output,
whether each model solved the task. Writes the results and every epoch's errors as
JSON (`--json`) and the curves as a PNG beside it (`--png`).

The test errors are evaluated after every epoch: a line per epoch shows them
with the training loss and the time left (with Keras's progress bar on a
terminal), and a line per trained model; `--tensorboard DIR` writes them, a
run per model.

Each model is checkpointed after every epoch; run the same command again after
an interruption and every model resumes where it stopped, ending with the
weights of an uninterrupted run (each epoch's order of the training examples is
drawn from the seed and the epoch). `--strategy mirrored|multi-worker` trains on
the local devices or on the hosts of `TF_CONFIG` (`keras_nalu.training.fit`).

    python examples/mystery_arithmetic.py
"""

import time

import numpy as np

from nalu_research.arguments import Shared, positive_int
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.tasks import SYMBOLS
from nalu_research.tasks.first_contact import relative_error
from nalu_research.tasks.mystery import MysteryArithmetic
from nalu_research.tasks.static_arithmetic import describe_range

# The blog's models, one layer each: the `keras_nalu` layer (None: a Dense
# layer with ReLU).
BLOG_MODELS = {"Dense-ReLU": None, "NAC": "NAC", "NALU": "NALU", "iNALU": "INALU"}
# Ours: a NAU beside a product unit (the `keras_nalu` layer), then a NAU to
# the outputs.
PRODUCT_UNITS = {"NAU-NMU": "NMU", "NAU-NMRU": "NMRU"}
MODELS = (*BLOG_MODELS, *PRODUCT_UNITS)
# Their recipe: 20 product units (the task has up to 10 products or
# quotients), initialized near 0 (each unit starts as a product of nothing,
# 1), the penalty ramped in from half to three quarters of the steps, and
# Adam's update clipped to a global norm of 1.
NMU_UNITS = 20
# The NAU's units beside them. With 10 (as many as the outputs), the NAU-NMRU
# lost a sum in training on 2 of 10 seeds of the task with division; with 20,
# on none of 10 (the docs have the runs).
SUM_UNITS = {"NAU-NMU": 10, "NAU-NMRU": 20}
NMU_INITIALIZER = {
    "class_name": "RandomUniform",
    "config": {"minval": 0.0, "maxval": 0.02},
}
CLIPNORM = dict.fromkeys(PRODUCT_UNITS, 1.0)
# The loss of each model (`--loss` overrides it): the MSE, or each output's
# squared error over the training targets' variance of that output.
LOSSES = ("mse", "normalized")
DEFAULT_LOSS = {"NAU-NMRU": "normalized"}
# `--division`: the four operations on the blog's ranges without (-1, 1).
DIVISION_TASK = {
    "operations": ("add", "sub", "mul", "div"),
    "train_range": ((-10.0, -1.0), (1.0, 10.0)),
    "test_range": ((-50.0, -1.0), (1.0, 50.0)),
}


def build_model(name, input_size, steps):
    """`MODELS[name]` from `input_size` inputs to the 10 outputs: one layer
    of the blog's models, or the NAU-NMU or NAU-NMRU of `steps` training
    steps."""
    import keras

    import keras_nalu
    from keras_nalu import NAU

    if name in BLOG_MODELS:
        layer = (
            keras.layers.Dense(10, activation="relu")
            if BLOG_MODELS[name] is None
            else getattr(keras_nalu, BLOG_MODELS[name])(10)
        )
        return keras.Sequential([keras.Input((input_size,)), layer], name=name)
    schedule = {
        "regularization_start": steps // 2,
        "regularization_end": steps * 3 // 4,
    }
    x = keras.Input((input_size,))
    sums = NAU(SUM_UNITS[name], **schedule)(x)
    unit = getattr(keras_nalu, PRODUCT_UNITS[name])
    products = unit(NMU_UNITS, kernel_initializer=NMU_INITIALIZER, **schedule)(x)
    features = keras.layers.Concatenate()([sums, products])
    return keras.Model(x, NAU(10, **schedule)(features), name=name.lower())


def loss_kind(name, kind):
    """`kind` ("mse" or "normalized"), or model `name`'s default if `None`."""
    return kind or DEFAULT_LOSS.get(name, "mse")


def loss_of(name, kind, y_train):
    """The Keras loss `kind` ("mse", "normalized" or `None`: the model's
    default) of model `name`, normalized by the variances of `y_train`."""
    from keras_nalu.losses import NormalizedMeanSquaredError

    if loss_kind(name, kind) == "normalized":
        return NormalizedMeanSquaredError(y_train.var(axis=0))
    return "mse"


# The arguments that change a run's training or its recorded curves: a
# checkpoint resumes only with them.
TRAINING_ARGUMENTS = (
    "seed",
    "epochs",
    "batch_size",
    "train_size",
    "test_size",
    "learning_rate",
    "backend",
    "division",
)


def test_errors(x, y, kinds):
    """`Evaluation`: the test MSE, overall (`test_mse`) and of the outputs of
    each operation (`test_mse_<op>`)."""
    import keras

    from nalu_research.monitoring import Evaluation

    columns = {op: [k for k, o in enumerate(kinds) if o == op] for op in kinds}

    def evaluate(model):
        prediction = keras.ops.convert_to_numpy(model(x, training=False))
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging model
            error = np.square(prediction - y).mean(axis=0)
        return {
            "test_mse": float(error.mean()),
            **{f"test_mse_{op}": float(error[c].mean()) for op, c in columns.items()},
        }

    return Evaluation(evaluate)


class MysteryArithmeticExperiment(Experiment):
    """The "mystery arithmetic" task of the reference PyTorch walk-through."""

    arguments = {
        "models": Shared(
            list(BLOG_MODELS),
            choices=MODELS,
            help="the models trained (default: the blog's, %(default)s)",
        ),
        "seed": 0,
        "epochs": 250,
        "batch_size": 32,
        "learning_rate": 1e-3,
    }
    record_path = "results/mystery_arithmetic.json"
    checkpoints = True
    run_unit = "model"

    def add_arguments(self, parser):
        parser.add_argument("--train-size", type=positive_int, default=1000)
        parser.add_argument("--test-size", type=positive_int, default=1000)
        parser.add_argument(
            "--division",
            action="store_true",
            help="add / to the operations, on "
            f"{describe_range(DIVISION_TASK['train_range'])} for training and "
            f"{describe_range(DIVISION_TASK['test_range'])} for testing",
        )
        parser.add_argument(
            "--loss",
            choices=LOSSES,
            help="the loss of every model (default: the normalized MSE for "
            "NAU-NMRU, the MSE for the others)",
        )

    def check_arguments(self, args, parser):
        if args.train_size < 2 and any(
            loss_kind(model, args.loss) == "normalized" for model in args.models
        ):
            parser.error(
                f"--train-size must be at least 2 with the normalized loss (it "
                f"divides by the training targets' variances), got {args.train_size}"
            )

    def prepare(self, args, session):
        task = MysteryArithmetic(
            seed=args.seed, **(DIVISION_TASK if args.division else {})
        )
        self.task = task
        self.train_set = task.sample(args.train_size, "train", seed=(args.seed, 1))
        self.test_set = task.sample(args.test_size, "test", seed=(args.seed, 2))
        self.kinds = [op for _, _, op in task.configuration]
        self.operations = sorted(set(self.kinds))
        print("Outputs: " + ", ".join(task.describe()))
        print(
            f"Train on {args.train_size} examples from "
            f"{describe_range(task.train_range)}, test on {args.test_size} from "
            f"{describe_range(task.test_range)}; {args.epochs} epochs of batches "
            f"of {args.batch_size}, Adam lr {args.learning_rate:g}; Keras "
            f"backend {args.backend}.\n"
        )

    def runs(self, args):
        return [(name,) for name in args.models]

    def train(self, args, run, session):
        import keras

        from nalu_research.tasks.batches import shuffled_epochs

        (name,) = run
        task, (x_train, y_train) = self.task, self.train_set
        x_test, y_test = self.test_set
        print(f"{name}:", flush=True)
        start = time.perf_counter()
        keras.utils.set_random_seed(args.seed)
        steps = args.epochs * -(-args.train_size // args.batch_size)
        config = {k: getattr(args, k) for k in TRAINING_ARGUMENTS}
        result = session.fit(
            name,
            model_fn=lambda: build_model(name, task.input_size, steps),
            data_fn=shuffled_epochs(x_train, y_train, args.batch_size, args.seed),
            loss=loss_of(name, args.loss, y_train),
            optimizer_fn=lambda: keras.optimizers.Adam(
                args.learning_rate, global_clipnorm=CLIPNORM.get(name)
            ),
            epochs=args.epochs,
            config={**config, "model": name, "loss": loss_kind(name, args.loss)},
            callbacks=[
                test_errors(x_test, y_test, self.kinds),
                *session.callbacks(name),
            ],
        )
        history = result.history
        row = {
            "model": name,
            "loss": history["loss"],
            "test_mse": history["test_mse"],
            "test_mse_by_operation": {
                op: history[f"test_mse_{op}"][-1] for op in self.operations
            },
            "curves": {op: history[f"test_mse_{op}"] for op in self.operations},
            "seconds": time.perf_counter() - start,
            "diverged": result.divergence,
        }
        if name in PRODUCT_UNITS:
            held_out = task.sample(args.test_size, "test", seed=(args.seed, 3))
            row["snapped"] = snapped_formulas(
                result.model, held_out, self.test_set, task
            )
        return row

    def run_name(self, run, row):
        return run[0] + (", diverged" if row["diverged"] else "")

    def progress(self, row):
        return {"train loss": row["loss"][-1], "test MSE": row["test_mse"][-1]}

    def report(self, args, rows):
        task, (_, y_test) = self.task, self.test_set
        table = [
            [
                f"{row['model']}{' (diverged)' if row['diverged'] else ''}",
                f"{row['loss'][-1]:.4g}",
                f"{row['test_mse'][-1]:.4g}",
                *(f"{row['test_mse_by_operation'][op]:.4g}" for op in self.operations),
            ]
            for row in rows
        ]
        header = ["model", "train loss", "test MSE"]
        header += [f"test MSE of {SYMBOLS[op]} outputs" for op in self.operations]
        print("\n" + "\n".join(markdown_table(header, table)))
        threshold = task.success_threshold()
        print(
            f"\nSolved means a test MSE within 1% of {threshold:.3g}, that of a "
            "solution whose weights are each off by 1e-5 (simulated): "
            + ", ".join(
                f"{row['model']} "
                f"{'yes' if row['test_mse'][-1] <= 1.01 * threshold else 'no'}"
                for row in rows
            )
            + "."
        )
        for row in rows:
            if "snapped" not in row:
                continue
            found = row["snapped"]
            print(f"\n{row['model']} snapped to exact weights: {found['verdict']}")
            if not found["formulas"]:
                continue
            pairs = zip(found["formulas"], task.describe(), strict=True)
            for formula, target in pairs:
                print(f"  {formula:24s} (task: {target})")
        print(
            f"For scale: the test targets have variance {float(y_test.var()):.4g}; "
            "predicting 0 everywhere gives test MSE "
            f"{float(np.square(y_test).mean()):.4g}."
        )

    def record(self, args, rows):
        keys = ("loss", "test_mse", "test_mse_by_operation", "seconds", "diverged")
        return {
            "outputs": self.task.describe(),
            "models": {row["model"]: {k: row[k] for k in keys} for row in rows},
            "snapped": {r["model"]: r["snapped"] for r in rows if "snapped" in r},
        }

    def plot(self, args, rows, plt):
        task = self.task
        panels = [
            ("loss", f"training loss, {describe_range(task.train_range)}"),
            ("test_mse", f"test MSE, {describe_range(task.test_range)}"),
        ]
        panels += [(op, f"test MSE of {SYMBOLS[op]} outputs") for op in self.operations]
        fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
        for ax, (key, title) in zip(axes, panels, strict=True):
            for row in rows:
                curve = row["curves"][key] if key in row["curves"] else row[key]
                ax.plot(range(1, len(curve) + 1), curve, label=row["model"])
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_title(title, fontsize=10)
        axes[0].legend()
        fig.tight_layout()
        return fig


# `snap_weights` keeps the snapped model if it does no worse than the trained
# one on the held-out sample; each output is then judged on the test set by
# the task's threshold.
NO_WORSE = 1e30


def snapped_formulas(model, held_out, test, task):
    """`{"verdict", "formulas", "solved"}`: the model snapped to exact
    weights (`snap_weights(..., search=True)` on the `held_out` pair `(x,
    y)`, kept if no worse there), its formulas and the outputs whose MSE on
    the `test` pair is within 1% of the task's threshold; or why it was not
    kept."""
    import keras

    from keras_nalu import formulas, snap_weights

    try:
        snapped, _ = snap_weights(
            model, {"held-out": held_out}, rtol=NO_WORSE, search=True
        )
    except ValueError as error:
        return {"verdict": f"refused: {error}", "formulas": [], "solved": []}
    x_test, y_test = test
    prediction = keras.ops.convert_to_numpy(snapped(x_test, training=False))
    mse = np.square(prediction - y_test).mean(axis=0)
    solved = [int(k) for k in np.flatnonzero(mse <= 1.01 * task.success_threshold())]
    trained = keras.ops.convert_to_numpy(model(x_test, training=False))
    return {
        "verdict": f"relative test error {relative_error(prediction, y_test):.2g} "
        f"(trained: {relative_error(trained, y_test):.2g}), "
        f"solved {len(solved)} of {len(mse)} outputs",
        "formulas": formulas(snapped),
        "solved": solved,
    }


def main(argv=None):
    return MysteryArithmeticExperiment().main(argv)
