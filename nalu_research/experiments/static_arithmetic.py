"""The paper's static arithmetic task (Trask et al. 2018, Section 4.1, Appendix B).

x in R^100; a and b are the sums of two fixed random slices of x; the target is
op(a, b). A two-layer NALU (hidden size 2) and a ReLU6 MLP (hidden size 2) train
on fresh batches from U[1, 2] and are tested on U[1, 2] (interpolation) and on
U[2, 6] (extrapolation). Errors are on the paper's scale: test MSE relative to a
randomly initialized model of the same architecture (one per architecture),
x100 (0 is exact, 100 is no better than random). Each model trains from several
seeds; the run with the lowest interpolation error is reported and, for the
NALU, exported as a TensorFlow SavedModel, reloaded and served.

Training is checkpointed every `--checkpoint-every` steps (model, optimizer
state and step, written atomically); run the same command again after an
interruption and every run resumes where it stopped, ending with the weights
of an uninterrupted run. The checkpoints are deleted when the script finishes.
`--strategy mirrored|multi-worker` trains on the local devices or on the hosts
of `TF_CONFIG` (`keras_nalu.training.fit`).

After every checkpoint each run is tested on both test sets (`--eval-size`
examples each): its error on the paper's scale and its MSE per set
(`interpolation_error`, `extrapolation_error`, `interpolation_mse`,
`extrapolation_mse`), shown in a progress line with the loss and the time
left, kept in the results and, with `--tensorboard DIR`, written against the
step, a folder per run (DIR/OP/MODEL/SEED). A line per finished run counts the
runs solved so far. The runs' results and settings go to `--json` (default
results/static_arithmetic_OP.json), the plot of their test errors per
checkpoint beside it (`--png`).

    python examples/static_arithmetic.py
    python examples/static_arithmetic.py --operation add --runs 3
"""

import time

import numpy as np

from nalu_research.arguments import RUN_OPTIONS, Shared, positive_int
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.runs import epoch_steps, steps_per_execution, stream_epochs
from nalu_research.serving import Export
from nalu_research.tasks import (
    OPERATIONS,
    PAPER_TABLE_1,
    SYMBOLS,
    StaticArithmetic,
    mean_squared_error,
    paper_scale,
    success_threshold,
)

SOLVED = 1.0  # paper-scale extrapolation error below which a run counts as solved

MODEL_KEYS = {"relu6": "ReLU6 MLP", "nalu": "NALU-NALU"}
TABLE_KEYS = {name: key for key, name in MODEL_KEYS.items()}
SPLITS = ("interpolation", "extrapolation")
# What `error_metrics` adds to the logs of every epoch.
METRICS = tuple(f"{split}_{what}" for split in SPLITS for what in ("error", "mse"))


def build_models(input_size):
    """The two architectures of the static task, each with hidden size 2."""
    import keras

    from keras_nalu import NALU

    return {
        "ReLU6 MLP": lambda: keras.Sequential(
            [
                keras.Input((input_size,), name="x"),
                keras.layers.Dense(2, activation="relu6"),
                keras.layers.Dense(1),
            ],
            name="relu6_mlp",
        ),
        "NALU-NALU": lambda: keras.Sequential(
            [keras.Input((input_size,), name="x"), NALU(2), NALU(1)],
            name="nalu_nalu",
        ),
    }


# Arguments that change neither a run's training nor its recorded test errors
# (`--eval-size` does: the errors after every epoch are kept): a checkpoint
# resumes across them.
IGNORED = (
    "export_dir",
    "no_export",
    "runs",
    "models",
    "json",
    "png",
    *RUN_OPTIONS,
)


def split_mse(model, test_sets):
    """`{split: MSE of model on that test set}`."""
    import keras

    return {
        split: mean_squared_error(
            y, keras.ops.convert_to_numpy(model(x, training=False))
        )
        for split, (x, y) in test_sets.items()
    }


def error_metrics(test_sets, random_mse):
    """A function of a model returning, for each test set, its MSE
    (`<split>_mse`) and its error on the paper's scale (`<split>_error`:
    relative to `random_mse[split]`, x100)."""

    def evaluate(model):
        errors = {}
        for split, mse in split_mse(model, test_sets).items():
            errors[f"{split}_error"] = paper_scale(mse, random_mse[split])
            errors[f"{split}_mse"] = mse
        return errors

    return evaluate


def seeds_of(args):
    """The runs' seeds: `--runs` of them after `--seed`, which fixes the task
    and the random baseline."""
    return range(args.seed + 1, args.seed + 1 + args.runs)


def selected(rows):
    """`{model: its run with the lowest interpolation error}`: the selection
    reads the interpolation error only, so the extrapolation data stays
    unseen."""
    return {
        name: min(
            (row for row in rows if row["model"] == name),
            key=lambda row: np.nan_to_num(row["interpolation_error"], nan=np.inf),
        )
        for name in dict.fromkeys(row["model"] for row in rows)
    }


class StaticArithmeticExperiment(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "models": Shared.all_of(MODEL_KEYS, "which models to train (default: both)"),
        "seed": Shared(
            0, help="fixes the task and the random baseline; runs use seed+1, ..."
        ),
        "steps": 20_000,
        "batch_size": 128,
        "learning_rate": 1e-2,
        "eval_size": 10_000,
    }
    record_path = "results/static_arithmetic_{operation}.json"
    checkpoints = True
    checkpoint_every = 1000
    export_path = "saved_models/static_arithmetic_{operation}"

    def add_arguments(self, parser):
        parser.add_argument("--operation", default="mul", choices=sorted(OPERATIONS))
        parser.add_argument(
            "--runs", type=positive_int, default=5, help="seeds per model"
        )

    def prepare(self, args, session):
        task = self.task = StaticArithmetic(args.operation, seed=args.seed)
        self.test_sets = {
            split: task.sample(args.eval_size, split, seed=(args.seed, 10**9 + i))
            for i, split in enumerate(SPLITS)
        }
        self.builds = build_models(task.input_size)
        self.threshold = success_threshold(task)
        self.random_mse, self.models, self.trained = {}, {}, []
        seeds = seeds_of(args)
        print(
            f"Static task y = {SYMBOLS[args.operation]}: x in R^{task.input_size}, "
            f"a = sum(x[{task.a_slice.start}:{task.a_slice.stop}]), "
            f"b = sum(x[{task.b_slice.start}:{task.b_slice.stop}]); train and "
            f"interpolate on U{list(task.interpolation_range)}, extrapolate on "
            f"U{list(task.extrapolation_range)}. Each model trains {args.runs} "
            f"times (seeds {seeds.start}-{seeds.stop - 1}) for {args.steps} steps "
            f"of {args.batch_size} fresh examples, Adam lr {args.learning_rate:g}.\n"
        )

    def runs(self, args):
        return [
            (name, seed)
            for name in MODEL_KEYS.values()
            if TABLE_KEYS[name] in args.models
            for seed in seeds_of(args)
        ]

    def train(self, args, run, session):
        import keras

        from nalu_research.callbacks import Evaluation

        name, seed = run
        key, build = TABLE_KEYS[name], self.builds[name]
        if name not in self.random_mse:
            # One random model per architecture is the scale of every run
            # (Table 1).
            keras.utils.set_random_seed(args.seed)
            self.random_mse[name] = split_mse(build(), self.test_sets)
        evaluate = error_metrics(self.test_sets, self.random_mse[name])
        keras.utils.set_random_seed(seed)  # the run's own, repeatable init
        print(f"{name}, seed {seed}:", flush=True)
        start = time.perf_counter()
        epochs, batches = stream_epochs(
            args,
            lambda steps, first: self.task.training_batches(
                args.batch_size, steps, seed=seed, start=first
            ),
        )
        config = {k: v for k, v in vars(args).items() if k not in IGNORED}
        result = session.fit(
            args.operation,
            key,
            seed,
            what=f"{name}, seed {seed}",
            model_fn=build,
            data_fn=batches,
            loss="mse",
            optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
            epochs=epochs,
            config={**config, "seed": seed},
            steps_per_execution=steps_per_execution(
                min(100, args.steps, args.checkpoint_every)
            ),
            callbacks=[
                Evaluation(evaluate),
                *session.callbacks(args.operation, key, seed),
            ],
        )
        self.models[name, seed] = result.model
        errors = evaluate(result.model)
        row = {
            "model": name,
            "seed": seed,
            **errors,
            "solved": bool(errors["extrapolation_error"] < SOLVED),
            "strict": bool(errors["extrapolation_mse"] < self.threshold),
            "diverged": result.divergence,
            "seconds": round(time.perf_counter() - start, 2),
            # After every epoch: the step, the loss and the errors then.
            "epochs": {
                "step": np.cumsum(epoch_steps(args))[: result.epochs].tolist(),
                **{k: result.history.get(k, []) for k in ("loss", *METRICS)},
            },
        }
        self.trained.append(row)
        return row

    def run_name(self, run, row):
        name, seed = run
        return f"{name}, seed {seed}" + (", diverged" if row["diverged"] else "")

    def progress(self, row):
        runs = [r for r in self.trained if r["model"] == row["model"]]
        return {
            "interpolation": row["interpolation_error"],
            "extrapolation": row["extrapolation_error"],
            "solved so far": f"{sum(r['solved'] for r in runs)}/{len(runs)}",
            "strict": f"{sum(r['strict'] for r in runs)}/{len(runs)}",
        }

    def report(self, args, rows):
        print(
            f"\nTest error for y = {SYMBOLS[args.operation]}, relative to a "
            "randomly initialized model x100\n(0 is exact, 100 is random). Each "
            "model is the run with the lowest interpolation error;\n'solved' "
            f"counts runs with extrapolation error < {SOLVED:g}; 'strict' runs "
            f"whose extrapolation MSE is below {self.threshold:.3g},\nthat of a "
            "solution with weights off by 1e-5 (Madsen & Johansen 2020).\n"
            "Table 1 of the paper beside it.\n"
        )
        table = []
        for name, best in selected(rows).items():
            runs = [row for row in rows if row["model"] == name]
            paper = "{:.1f} / {:.1f}".format(
                *PAPER_TABLE_1[TABLE_KEYS[name]][args.operation]
            )
            table.append(
                [
                    name,
                    f"{best['interpolation_error']:.4g}",
                    f"{best['extrapolation_error']:.4g}",
                    best["seed"],
                    f"{sum(r['solved'] for r in runs)}/{args.runs}",
                    f"{sum(r['strict'] for r in runs)}/{args.runs}",
                    paper,
                ]
            )
        header = [
            "model",
            "interpolation",
            "extrapolation",
            "seed",
            "solved",
            "strict",
            "paper I / E",
        ]
        print("\n".join(markdown_table(header, table, align="<>>>>>>")))
        print(f"\nTrained in {self.elapsed():.0f} s.")

    def record(self, args, rows):
        task, best = self.task, selected(rows)
        settings = {
            **vars(args),
            "target": f"y = {SYMBOLS[args.operation]}",
            "a_slice": [task.a_slice.start, task.a_slice.stop],
            "b_slice": [task.b_slice.start, task.b_slice.stop],
            "interpolation_range": task.interpolation_range,
            "extrapolation_range": task.extrapolation_range,
            "random_model_mse": self.random_mse,
            "solved_below": SOLVED,
            "strict_threshold": self.threshold,
            "paper_table_1": {
                name: PAPER_TABLE_1[TABLE_KEYS[name]][args.operation] for name in best
            },
            "seconds": round(self.elapsed(), 1),
        }
        runs = [{**row, "selected": row is best[row["model"]]} for row in rows]
        return {"settings": settings, "runs": runs}

    def plot(self, args, rows, plt):
        """Each run's test errors (paper's scale) after every epoch, a colour
        per model, on a log axis: interpolation left, extrapolation right."""
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        colors = dict(zip(MODEL_KEYS.values(), ("tab:orange", "tab:blue"), strict=True))
        floor = 1e-9  # errors below it are drawn at it (log axis)
        for ax, split in zip(axes, SPLITS, strict=True):
            labelled = set()
            for row in rows:
                curve = np.asarray(row["epochs"][f"{split}_error"], dtype=float)
                curve = np.where(np.isfinite(curve), np.maximum(curve, floor), np.nan)
                name = row["model"]
                ax.plot(
                    row["epochs"]["step"],
                    curve,
                    color=colors[name],
                    marker="o",
                    markersize=2.5,
                    linewidth=1.2,
                    alpha=0.8,
                    label=None if name in labelled else name,
                )
                labelled.add(name)
            ax.axhline(100, color="0.5", linestyle=":", linewidth=1, label="random")
            ax.set_yscale("log")
            ax.set_title(f"{split} test error", fontsize=10)
            ax.set_xlabel("training steps")
            ax.grid(True, which="major", alpha=0.3)
        axes[1].axhline(
            SOLVED, color="0.3", linestyle="--", linewidth=1, label="solved"
        )
        axes[0].set_ylabel("error, paper's scale (100 = random)")
        legend = {}  # below the plots, where no curve is
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                legend.setdefault(label, handle)
        fig.legend(
            legend.values(),
            legend.keys(),
            loc="lower center",
            ncol=len(legend),
            fontsize=9,
        )
        fig.suptitle(
            f"Static task y = {SYMBOLS[args.operation]}: each run's test errors "
            "after every epoch",
            fontsize=11,
        )
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        return fig

    def exports(self, args, rows):
        """The selected NALU, served three extrapolation inputs."""
        best = selected(rows).get("NALU-NALU")
        if best is None:
            return []
        x, _ = self.test_sets["extrapolation"]
        model = self.models["NALU-NALU", best["seed"]]
        return [Export("", model, x[:3], sample=x[:8])]

    def served(self, args, served):
        path, outputs = served[""]["path"], served[""]["served"]
        print(f"\nExported the NALU to {path}/ (verified against the Keras model).")
        print(
            f"Served by tf.saved_model.load('{path}').serve(x), on extrapolation "
            "inputs:"
        )
        task, (x, y) = self.task, self.test_sets["extrapolation"]
        a, b = x[:3, task.a_slice].sum(axis=1), x[:3, task.b_slice].sum(axis=1)
        for i, prediction in enumerate(np.asarray(outputs)[:, 0]):
            exact = float(y[i, 0])
            print(
                f"  a = {a[i]:8.3f}, b = {b[i]:8.3f}: served {prediction:12.4f}, "
                f"exact {SYMBOLS[args.operation]} = {exact:12.4f} (relative error "
                f"{abs(prediction - exact) / abs(exact):.1e})"
            )
        return served


def main(argv=None):
    return StaticArithmeticExperiment().main(argv)
