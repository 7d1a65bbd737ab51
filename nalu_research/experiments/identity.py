"""Identity extrapolation (Trask et al. 2018, Section 1.1, Figure 1, Table 5).

Autoencoders map a scalar to itself: 3 hidden layers of 8 units with one
activation of the paper's Table 5 (plus CReLU), then a linear output, or 3
hidden NAC layers of 8 then a NAC of 1. Each trains 10,000 steps at learning
rate 0.01 on the squared error, on fresh batches of 128 inputs from U[-5, 5]
(the paper gives neither optimizer nor batch size), once per seed; the seed
fixes both the initial weights (keras.utils.set_random_seed) and the data, so
every model sees the same inputs for a given seed. Each model is then tested on
the integers -1000..1000 (Table 5: mean absolute error, 500 is the error of
predicting 0) and on [-20, 20] (Figure 1: absolute error against the input,
averaged over seeds).

The optimizer is Adam with the AMSGrad correction (Keras's
`Adam(0.01, amsgrad=True)`). Plain Adam at this learning rate is unstable once
a model has solved the task: its gradients vanish, its second-moment estimate
decays, and a tiny gradient then moves the weights by a full step. Measured
every 1,000 steps, the linear model's error on -1000..1000 sat at 3e-5 (the
float32 rounding of the inputs) and jumped to 0.6-3.8 at random checkpoints,
the NAC's to 0.03-0.8, so the weights at step 10,000 are a random draw near
such a spike. With AMSGrad, which keeps the largest second moment, both stayed
at their floor (3e-5 and 1e-5) at every checkpoint (seeds 1 and 2 measured).
`--optimizer adam` runs plain Adam.

Each run is checkpointed every `--checkpoint-every` steps; run the same command
again after an interruption and every run resumes where it stopped, ending with
the weights of an uninterrupted run. `--strategy mirrored|multi-worker` trains
on the local devices or on the hosts of `TF_CONFIG` (`keras_nalu.training.fit`).

After every checkpoint the model is tested on the table's integers and on the
training range (`table_mae`, `train_range_mae`): a progress line shows them
with the loss and the time left, then a line per finished run; with
`--tensorboard DIR` they are written against the step, a folder per run
(DIR/MODEL/SEED). The results go to `--json` (default
results/identity.json), the Figure 1 plot beside it (`--png`).

    python examples/identity.py              # 3 seeds, about 4 min
    python examples/identity.py --quick      # 1 seed, 300 steps
    python examples/identity.py --models ReLU NAC --seeds 10
"""

import time

import numpy as np

from nalu_research.arguments import Shared
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.runs import (
    epoch_steps,
    mean_over_steps,
    steps_per_execution,
    stream_epochs,
)
from nalu_research.tasks.identity import (
    FIGURE_RANGE,
    MODELS,
    PAPER_TABLE_5,
    TABLE_RANGE,
    TRAIN_RANGE,
    absolute_errors,
    figure_inputs,
    identity_batches,
    identity_model,
    table_inputs,
)

QUICK = {"seeds": 1, "steps": 300}
OPTIMIZER_NAMES = {"amsgrad": "Adam (AMSGrad)", "adam": "Adam"}
# The arguments that change a run's training: a checkpoint resumes only with them.
TRAINING_ARGUMENTS = (
    "steps",
    "batch_size",
    "learning_rate",
    "optimizer",
    "checkpoint_every",
    "backend",
)


def mean_errors(test_sets):
    """`Evaluation` after every epoch: the mean absolute error on the integers
    -1000..1000 (`table_mae`) and on the training range (`train_range_mae`)."""
    from nalu_research.monitoring import Evaluation

    return Evaluation(
        lambda model: {
            f"{split}_mae": float(np.mean(absolute_errors(model, test_sets[split])))
            for split in ("table", "train_range")
        }
    )


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def paper_value(name):
    """The paper's Table 5 value of the model `name`, as the table shows it."""
    if name not in PAPER_TABLE_5:
        return "-"
    return "<0.0001" if name == "None" else f"{PAPER_TABLE_5[name]:.2f}"


def table_5_lines(runs, names):
    """Table 5's lines from the per-run rows `runs` of the models `names`:
    per model the mean and range over seeds of the error on the integers
    (`table_mae`), the mean error on the training range and the paper's
    value; `*` marks a model with a diverged run."""
    table = []
    for name in names:
        mine = [run for run in runs if run["model"] == name]
        mae = [run["table_mae"] for run in mine]
        train = [run["train_range_mae"] for run in mine]
        diverged = any(run["diverged"] for run in mine)
        table.append(
            [
                name + ("*" if diverged else ""),
                f"{np.mean(mae):.4g}",
                f"{min(mae):.4g} to {max(mae):.4g}",
                f"{np.mean(train):.2g}",
                paper_value(name),
            ]
        )
    header = ["model", "ours: mean", "ours: min to max", "on [-5, 5]", "paper"]
    return markdown_table(header, table, align="<>>>>")


class IdentityExperiment(Experiment):
    """Identity extrapolation (Trask et al. 2018, Section 1.1, Figure 1, Table 5)."""

    arguments = {
        "models": Shared.all_of(
            MODELS, f"which models to train (default: all of {', '.join(MODELS)})"
        ),
        "seeds": Shared(3, help="models per architecture (seeds 1..N)"),
        "steps": 10_000,
        "batch_size": 128,
        "learning_rate": 1e-2,
    }
    record_path = "results/identity.json"
    checkpoints = True
    checkpoint_every = 1000

    def add_arguments(self, parser):
        parser.add_argument(
            "--optimizer",
            default="amsgrad",
            choices=("amsgrad", "adam"),
            help="Adam with or without the AMSGrad correction (default: amsgrad)",
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help=f"a smoke run: {QUICK['seeds']} seed, {QUICK['steps']} steps",
        )

    def check_arguments(self, args, parser):
        if args.quick:
            args.seeds, args.steps = QUICK["seeds"], QUICK["steps"]

    def prepare(self, args, session):
        self.names = [name for name in MODELS if name in args.models]
        self.test_sets = {
            "table": table_inputs(),
            "figure": figure_inputs(),
            "train_range": figure_inputs(101, TRAIN_RANGE),
        }
        print(
            f"Identity autoencoders, {plural(len(self.names), 'model')} x "
            f"{plural(args.seeds, 'seed')}: "
            f"{args.steps} steps of {args.batch_size} fresh inputs from "
            f"U{list(TRAIN_RANGE)}, {OPTIMIZER_NAMES[args.optimizer]} lr "
            f"{args.learning_rate:g}, squared error.\n"
        )

    def runs(self, args):
        return [
            (name, seed) for name in self.names for seed in range(1, args.seeds + 1)
        ]

    def train(self, args, run, session):
        """Trains one model from its seed (which also draws its inputs) and
        returns its errors on the test sets."""
        import keras

        from nalu_research.tasks.batches import array_batches

        name, seed = run
        print(f"{name}, seed {seed}:", flush=True)
        start = time.perf_counter()
        x, y = identity_batches(args.steps, args.batch_size, seed=seed)
        size = args.batch_size

        def slice_of(steps, first):  # the run's one stream, from step `first`
            part = slice(first * size, (first + steps) * size)
            return array_batches(x[part], y[part], size)

        epochs, batches = stream_epochs(args, slice_of)
        keras.utils.set_random_seed(seed)
        result = session.fit(
            name,
            seed,
            what=f"{name}, seed {seed}",
            model_fn=lambda: identity_model(name),
            data_fn=batches,
            loss="mse",
            optimizer_fn=lambda: keras.optimizers.Adam(
                args.learning_rate, amsgrad=args.optimizer == "amsgrad"
            ),
            epochs=epochs,
            config={
                "model": name,
                "seed": seed,
                **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
            },
            callbacks=[mean_errors(self.test_sets), *session.callbacks(name, seed)],
            steps_per_execution=steps_per_execution(
                min(100, args.steps, args.checkpoint_every)
            ),
        )
        errors = {
            split: absolute_errors(result.model, inputs)
            for split, inputs in self.test_sets.items()
        }
        history = result.history
        return {
            "model": name,
            "seed": seed,
            "table_mae": float(np.mean(errors["table"])),
            "train_range_mae": float(np.mean(errors["train_range"])),
            "mean_train_loss": mean_over_steps(args, history["loss"]),
            "seconds": round(time.perf_counter() - start, 2),
            "diverged": result.divergence,
            # After every epoch: the step and the errors then (`mean_errors`).
            "epochs": {
                "step": np.cumsum(epoch_steps(args))[: result.epochs].tolist(),
                **{
                    k: history.get(k, [])
                    for k in ("loss", "table_mae", "train_range_mae")
                },
            },
            "figure_abs_error": [float(f"{e:.6g}") for e in errors["figure"]],
        }

    def run_name(self, run, row):
        name, seed = run
        return f"{name}, seed {seed}" + (", diverged" if row["diverged"] else "")

    def progress(self, row):
        return {
            f"MAE on {TABLE_RANGE[0]}..{TABLE_RANGE[1]}": row["table_mae"],
            f"on {list(TRAIN_RANGE)}": row["train_range_mae"],
        }

    def report(self, args, rows):
        print(
            f"\nTable 5: mean absolute error on the integers {TABLE_RANGE[0]}.."
            f"{TABLE_RANGE[1]} (500 = predicting 0), mean and range over "
            f"{plural(args.seeds, 'seed')};\nthe error on the training range "
            f"{list(TRAIN_RANGE)} beside it; the paper's value (mean of 100 "
            "models) last.\n"
        )
        print("\n".join(table_5_lines(rows, self.names)))
        if any(row["diverged"] for row in rows):
            print(
                "\n* includes a run that diverged (non-finite training loss; "
                "training stopped there and the run was evaluated as it stopped)."
            )
        print(
            f"\nTrained {len(rows)} models in "
            f"{self.elapsed():.0f} s"
            f" on the {args.backend} backend."
        )

    def record(self, args, rows):
        return {
            "settings": {
                **vars(args),
                "loss": "mse",
                "train_range": TRAIN_RANGE,
                "table_range": TABLE_RANGE,
                "paper_table_5": PAPER_TABLE_5,
                "seconds": round(self.elapsed(), 1),
            },
            "figure_inputs": [float(v) for v in self.test_sets["figure"][:, 0]],
        }

    def plot(self, args, rows, plt):
        """Figure 1: each model's absolute error against the input, the mean
        over its seeds, on a log axis."""
        curves = {
            name: np.mean(
                [row["figure_abs_error"] for row in rows if row["model"] == name],
                axis=0,
            )
            for name in self.names
        }
        # The nonlinear activations as thin gray lines (the worst, the best
        # and ReLU named at their right end), the linear model and the NAC
        # in colour: 17 coloured curves could not be told apart.
        highlighted = {"None": ("tab:blue", "None (linear)"), "NAC": ("tab:red", "NAC")}
        fig, ax = plt.subplots(figsize=(9, 5.2), dpi=100)
        ax.axvspan(*TRAIN_RANGE, color="0.92", zorder=0, label="training range")
        floor = 1e-7  # errors below it are drawn at it (log axis)
        grid = self.test_sets["figure"][:, 0]
        nonlinear = [name for name in self.names if name not in highlighted]
        ends = {name: np.mean(curves[name][-5:]) for name in nonlinear}
        named = {max(ends, key=ends.get), min(ends, key=ends.get)} if ends else set()
        named |= {"ReLU"} & set(nonlinear)
        for i, name in enumerate(nonlinear):
            ax.plot(
                grid,
                np.maximum(curves[name], floor),
                color="0.55",
                linewidth=0.9,
                label=f"{len(nonlinear)} nonlinear activations" if i == 0 else None,
            )
            if name in named:
                ax.annotate(
                    name,
                    (grid[-1], max(curves[name][-1], floor)),
                    xytext=(4, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=9,
                    color="0.3",
                )
        for name, (color, label) in highlighted.items():
            if name in curves:
                ax.plot(
                    grid,
                    np.maximum(curves[name], floor),
                    color=color,
                    linewidth=2.2,
                    label=label,
                )
        ax.set_yscale("log")
        ax.set_xlim(*FIGURE_RANGE)
        ax.set_xlabel("input x")
        ax.set_ylabel("mean absolute error |f(x) - x|")
        ax.set_title(
            f"Identity learned on [-5, 5], tested on [-20, 20] "
            f"(mean of {plural(args.seeds, 'seed')}, {args.steps} steps)"
        )
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.09, 0.5), fontsize=9)
        fig.tight_layout()
        return fig


def main(argv=None):
    return IdentityExperiment().main(argv)
