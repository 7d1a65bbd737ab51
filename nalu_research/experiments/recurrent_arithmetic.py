"""The paper's recurrent arithmetic task (Section 4.1, Appendix B, Table 1 right).

x_t in R^10 from U[1, 2]; a and b are sums over two fixed slices and over time;
the target is op(a, b). Models (hidden size 2): LSTM, GRU and SimpleRNN (tanh,
ReLU) followed by a linear readout, NACCell / NALUCell followed by a NAC /
NALU, and NAUCell followed by a NAU (not in the paper: its state weights reach
1 exactly; it adds and subtracts only). Not run unless named: the NAUCell
followed by an NMU (`nau-nmu`, products) or by a RealNPU without gate
(`nau-realnpu`, products, ratios and powers). They train on fresh batches of 128
sequences of length 10 and are tested on length 10 (interpolation) and length
1000 (extrapolation: a and b 100 times larger). Errors are on the paper's
scale: test MSE relative to a randomly initialized model of the same
architecture, x100; the median over seeds is printed beside the paper's
Table 1.

Both errors are evaluated after every epoch (`--checkpoint-every` steps):
printed on a line per epoch with the loss and the time left (and Keras's
progress bar on a terminal), with a line per finished run; `--tensorboard DIR`
writes them, a run per operation, model and seed. Writes every run's errors
and curves as JSON (`--json`) and the curves as a PNG beside it (`--png`).

Each run is checkpointed every `--checkpoint-every` steps; run the same command
again after an interruption and every run resumes where it stopped, ending with
the weights of an uninterrupted run. `--strategy mirrored|multi-worker` trains
on the local devices or on the hosts of `TF_CONFIG` (`keras_nalu.training.fit`).

    python examples/recurrent_arithmetic.py --quick
    python examples/recurrent_arithmetic.py --seeds 3 --steps 5000
"""

import math
import time

import numpy as np

from nalu_research.arguments import Shared
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.runs import epoch_steps, stream_epochs
from nalu_research.tasks import OPERATIONS, SYMBOLS, mean_squared_error, paper_scale
from nalu_research.tasks.recurrent_arithmetic import (
    PAPER_TABLE_1_RECURRENT,
    RecurrentArithmetic,
)

HIDDEN = 2
# `(name, recurrent(layers, nalu), readout(layers, nalu, steps))`, called with
# `keras.layers` and `keras_nalu` (imported by `build`, not for --help).
MODELS = {
    "lstm": (
        "LSTM",
        lambda layers, nalu: layers.LSTM(HIDDEN),
        lambda layers, nalu, steps: layers.Dense(1),
    ),
    "gru": (
        "GRU",
        lambda layers, nalu: layers.GRU(HIDDEN),
        lambda layers, nalu, steps: layers.Dense(1),
    ),
    "rnn_tanh": (
        "RNN tanh",
        lambda layers, nalu: layers.SimpleRNN(HIDDEN),
        lambda layers, nalu, steps: layers.Dense(1),
    ),
    "rnn_relu": (
        "RNN ReLU",
        lambda layers, nalu: layers.SimpleRNN(HIDDEN, activation="relu"),
        lambda layers, nalu, steps: layers.Dense(1),
    ),
    "nac": (
        "NAC",
        lambda layers, nalu: layers.RNN(nalu.NACCell(HIDDEN)),
        lambda layers, nalu, steps: nalu.NAC(1),
    ),
    "nalu": (
        "NALU",
        lambda layers, nalu: layers.RNN(nalu.NALUCell(HIDDEN)),
        lambda layers, nalu, steps: nalu.NALU(1),
    ),
    "nau": (
        "NAU",
        lambda layers, nalu: layers.RNN(_running_sums()),
        lambda layers, nalu, steps: nalu.NAU(1),
    ),
    "nau-nmu": (
        "NAU-NMU",
        lambda layers, nalu: layers.RNN(_running_sums(centered_gradient=True)),
        lambda layers, nalu, steps: nalu.NMU(1, **_schedule(steps)),
    ),
    "nau-realnpu": (
        "NAU-RealNPU",
        lambda layers, nalu: layers.RNN(_running_sums(centered_gradient=True)),
        lambda layers, nalu, steps: nalu.RealNPU(1, gated=False, **_schedule(steps)),
    ),
}
# Ours beyond the NAU, trained only when named.
OPT_IN = ("nau-nmu", "nau-realnpu")
# The models whose trained weights `keras_nalu.snap_weights` also rounds to
# exact values, kept if they fit two fresh check sets (one per split) within
# SNAP_RTOL; their errors are reported beside the trained ones.
SNAPPED = ("nau", "nau-nmu", "nau-realnpu")
SNAP_RTOL = 1e-4
QUICK = {"operations": ["add", "mul"], "seeds": 1, "steps": 2000}
BATCH_SIZE = 128
# The arguments that change a run's training or its recorded curves: a
# checkpoint resumes only with them.
TRAINING_ARGUMENTS = (
    "steps",
    "learning_rate",
    "checkpoint_every",
    "eval_size",
    "backend",
)
SPLITS = ("interpolation", "extrapolation")


def _running_sums(centered_gradient=False):
    """The NAUCell of the `nau*` models: two running sums, each state row
    started at the identity (exact sums need state weights of exactly 1);
    under a product or a ratio, with the centered gradient, which tells
    the inputs of `a` and `b` apart (as on the static task)."""
    from keras_nalu import NAUCell

    return NAUCell(HIDDEN, diagonal_state=True, centered_gradient=centered_gradient)


def _schedule(steps):
    """The penalty of the `OPT_IN` readouts: ramped in from half to four
    fifths of a run of `steps` (the layer's default schedule without)."""
    if steps is None:
        return {}
    return {"regularization_start": steps // 2, "regularization_end": steps * 4 // 5}


def build(model, input_size, steps=None):
    """`MODELS[model]` for `input_size` inputs per step, its penalty (if any)
    scheduled over `steps` training steps."""
    import keras

    import keras_nalu

    _, recurrent, readout = MODELS[model]
    layers = (keras.layers, keras_nalu)
    return keras.Sequential(
        [keras.Input((None, input_size)), recurrent(*layers), readout(*layers, steps)],
        name=model,
    )


def paper_errors(test, random_model):
    """`Evaluation`: the errors on each split of `test` on the paper's scale
    (against `random_model`, the same architecture untrained), as
    `<split>_error`; infinite when the model's MSE is not finite."""
    from nalu_research.callbacks import Evaluation

    random_mse = {
        split: mean_squared_error(y, predict(random_model, x))
        for split, (x, y) in test.items()
    }

    def evaluate(model):
        errors = {}
        for split, (x, y) in test.items():
            mse = mean_squared_error(y, predict(model, x))
            finite = np.isfinite(mse)
            errors[f"{split}_error"] = (
                paper_scale(mse, random_mse[split]) if finite else math.inf
            )
        return errors

    return Evaluation(evaluate)


def predict(model, x):
    return model.predict(x, batch_size=250, verbose=0)


def snapped_errors(model, task, evaluation, seed):
    """`{"snapped_<split>_error": error}` of `model` after `snap_weights`
    (verified within `SNAP_RTOL` on a fresh check set of each split, drawn
    apart from the test sets), by `evaluation` (the run's `paper_errors`), or
    `{"snapped": False}` with the trained errors left as they are when it
    refuses."""
    from keras_nalu import snap_weights

    checks = {
        split: task.sample(1000, split, seed=(seed, 10**9 + 2 + i))
        for i, split in enumerate(SPLITS)
    }
    try:
        snapped, _ = snap_weights(model, checks, rtol=SNAP_RTOL)
    except ValueError:
        return {"snapped": False}
    errors = evaluation.evaluate(snapped)
    return {"snapped": True, **{f"snapped_{k}": v for k, v in errors.items()}}


def _runs(results, operation, model):
    """The runs of `results` of one operation and model (a table's cell)."""
    return [r for r in results if r["operation"] == operation and r["model"] == model]


def fmt(value):
    if value is None:
        return "-"
    return ">999" if not np.isfinite(value) or value > 999 else f"{value:.3g}"


def title(run):
    """What names the run `(operation, model, seed)`, e.g. "a*b NALU seed 0"."""
    operation, model, seed = run
    return f"{SYMBOLS[operation]} {MODELS[model][0]} seed {seed}"


class RecurrentArithmeticExperiment(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "models": Shared(
            [m for m in MODELS if m not in OPT_IN],
            choices=list(MODELS),
            help=f"default: all but {', '.join(OPT_IN)}",
        ),
        "seeds": Shared(None, help="seeds 0..N-1 (default 3)"),
        "steps": Shared(None, help="training steps (default 5,000)"),
        "learning_rate": 1e-2,
        "eval_size": 1000,
    }
    record_path = "results/recurrent_arithmetic.json"
    checkpoints = True
    checkpoint_every = 1000

    def add_arguments(self, parser):
        parser.add_argument("--operations", nargs="+", choices=list(OPERATIONS))
        parser.add_argument(
            "--quick", action="store_true", help="a+b and a*b, 1 seed, 2,000 steps"
        )

    def check_arguments(self, args, parser):
        # What is not given comes from --quick, else from the defaults.
        defaults = (
            QUICK
            if args.quick
            else {
                "operations": list(OPERATIONS),
                "seeds": 3,
                "steps": 5000,
            }
        )
        for name, value in defaults.items():
            if getattr(args, name) is None:
                setattr(args, name, value)

    def runs(self, args):
        return [
            (operation, model, seed)
            for operation in args.operations
            for model in args.models
            for seed in range(args.seeds)
        ]

    def train(self, args, run, session):
        """Trains one model from its seed; its paper-scale errors, their
        curves (`{split: [error after each epoch]}`) and seconds."""
        import keras

        operation, model, seed = run
        print(f"{title(run)}:", flush=True)
        task = RecurrentArithmetic(operation, seed=seed)
        test = {
            split: task.sample(args.eval_size, split, seed=(seed, 10**9 + i))
            for i, split in enumerate(SPLITS)
        }
        keras.utils.set_random_seed(seed)
        random_model = build(model, task.input_size, args.steps)
        epochs, batches = stream_epochs(
            args,
            lambda steps, first: task.training_batches(
                BATCH_SIZE, steps, seed=seed, start=first
            ),
        )
        evaluation = paper_errors(test, random_model)
        start = time.perf_counter()
        # The trained model's init follows the random model's in the seeded
        # stream.
        result = session.fit(
            operation,
            model,
            seed,
            what=title(run),
            model_fn=lambda: build(model, task.input_size, args.steps),
            data_fn=batches,
            loss="mse",
            optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
            epochs=epochs,
            config={
                "operation": operation,
                "model": model,
                "seed": seed,
                **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
            },
            callbacks=[evaluation, *session.callbacks(operation, model, seed)],
        )
        seconds = time.perf_counter() - start
        # The last evaluation is of the trained model (also after a
        # divergence: the epoch it stopped in ends with one).
        curves = {split: result.history[f"{split}_error"] for split in SPLITS}
        errors = {split: curve[-1] for split, curve in curves.items()}
        if model in SNAPPED:
            errors.update(snapped_errors(result.model, task, evaluation, seed))
        return {
            "operation": operation,
            "model": model,
            "seed": seed,
            **errors,
            "seconds": seconds,
            "diverged": result.divergence,
            "steps": np.cumsum(epoch_steps(args))[: result.epochs].tolist(),
            "curves": curves,
        }

    def run_name(self, run, row):
        return title(run) + (", diverged" if row["diverged"] else "")

    def progress(self, row):
        return {f"{split} error": fmt(row[split]) for split in SPLITS}

    def report(self, args, rows):
        import keras

        header = ["op", *(MODELS[m][0] for m in args.models)]
        for index, split in enumerate(SPLITS):
            print(
                f"\nMedian {split} error on the paper's scale over {args.seeds} "
                "seed(s) (paper's Table 1 in brackets; 100 is the random "
                "initialization):\n"
            )
            table = []
            for operation in args.operations:
                cells = []
                for model in args.models:
                    runs = _runs(rows, operation, model)
                    ours = np.median([r[split] for r in runs])
                    paper = PAPER_TABLE_1_RECURRENT.get(model, {}).get(operation)
                    cells.append(
                        fmt(ours)
                        + ("*" if any(r["diverged"] for r in runs) else "")
                        + (f" ({fmt(paper[index])})" if paper else "")
                    )
                table.append([SYMBOLS[operation], *cells])
            print("\n".join(markdown_table(header, table)))
        snapped = [m for m in args.models if m in SNAPPED]
        if snapped:
            print(
                "\nAfter keras_nalu.snap_weights (verified within "
                f"{SNAP_RTOL:g} on fresh check sets of both splits), the median "
                "extrapolation error on the paper's scale, the trained model's "
                "where it refused, and how many seeds it verified:\n"
            )
            table = []
            for operation in args.operations:
                cells = []
                for model in snapped:
                    runs = _runs(rows, operation, model)
                    best = [
                        r.get("snapped_extrapolation_error", r["extrapolation"])
                        for r in runs
                    ]
                    count = sum(r["snapped"] for r in runs)
                    cells.append(
                        f"{fmt(np.median(best))} ({count}/{len(runs)} snapped)"
                    )
                table.append([SYMBOLS[operation], *cells])
            header = ["op", *(MODELS[m][0] for m in snapped)]
            print("\n".join(markdown_table(header, table)))
        if any(r["diverged"] for r in rows):
            print(
                "\n* includes a run that diverged (non-finite training loss; "
                "training stopped there and the run was evaluated as it stopped)."
            )
        print(
            f"\nWall time: {self.elapsed():.0f} s on the "
            f"{keras.backend.backend()} backend."
        )

    def record(self, args, rows):
        return {"wall_seconds": self.elapsed()}

    def plot(self, args, rows, plt):
        """The interpolation and extrapolation errors over training, a panel
        per operation and split, a line per model (its seeds' median), on a
        log scale (infinite errors left out)."""
        ops = args.operations
        fig, axes = plt.subplots(
            2, len(ops), figsize=(2.8 * len(ops) + 0.8, 5.6), squeeze=False
        )
        for column, operation in enumerate(ops):
            for row, split in enumerate(SPLITS):
                ax = axes[row][column]
                for model in args.models:
                    runs = _runs(rows, operation, model)
                    length = min(len(r["curves"][split]) for r in runs)
                    curve = np.median(
                        [r["curves"][split][:length] for r in runs], axis=0
                    )
                    curve = np.where(np.isfinite(curve), curve, np.nan)
                    ax.plot(
                        runs[0]["steps"][:length],
                        curve,
                        marker="." if length == 1 else None,
                        label=MODELS[model][0],
                    )
                ax.axhline(100, color="0.6", linewidth=0.8, linestyle=":")
                ax.set_yscale("log")
                ax.set_title(f"{SYMBOLS[operation]}, {split}", fontsize=10)
                if row == 1:
                    ax.set_xlabel("training steps")
            axes[0][column].sharex(axes[1][column])
        axes[0][0].set_ylabel("error (100 = random init)")
        axes[1][0].set_ylabel("error (100 = random init)")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(
            f"Recurrent arithmetic: median over {args.seeds} seed(s)", fontsize=11
        )
        fig.tight_layout()
        return fig


def main(argv=None):
    return RecurrentArithmeticExperiment().main(argv)
