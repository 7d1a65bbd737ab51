"""Program evaluation with extrapolation (Trask et al. 2018, Section 4.4, Figure 4).

Programs of Zaremba & Sutskever's "Learning to Execute" (2014) with + , - and
an if statement, or the sum of two integers (`--task addition`), each integer
fed whole at one time step (see `nalu_research.tasks.program_evaluation` for the
representation). Train on integers in [0, 100), validate on 3-digit and test
on 4-digit integers; the score is the percentage of digits of the rounded
prediction that match the target.

Models:

- LSTM: an LSTM over the steps (value and one-hot token), a linear readout of
  its last output.
- NALU: a recurrent NALU "configured by" an LSTM. At each step the LSTM reads
  the token and `tanh` of the NALU's previous output (in effect its signs),
  and its output sets the NALU's `w_hat`, `m_hat` and gate
  (`keras_nalu.layers.ConfiguredNALU`); the NALU computes on the step's value
  and its own previous output, `s_t = NALU_{h_t}([v_t, s_{t-1}])`. Its first
  unit is the prediction; the second is free (a scratch register, e.g. for the
  comparison of an if statement).
- UGRNN: the update-gate RNN of Collins et al. (2017), a linear readout.

Each model trains from several seeds on fresh batches (MSE loss, Adam with
cosine decay and gradient clipping, the same settings for every model); the
digit accuracy on fixed samples of each split is recorded during training
(the Figure 4 curves, saved as a PNG). Prints the final accuracies per model
(median and each seed) and exports the best NALU (by validation accuracy) as
a SavedModel.

Each run is checkpointed every `--eval-every` steps (one epoch); run the same
command again after an interruption and every run resumes where it stopped,
ending with the weights and curves of an uninterrupted run.
`--strategy mirrored|multi-worker` trains on the local devices or on the hosts
of `TF_CONFIG` (`keras_nalu.training.fit`).

    python examples/program_evaluation.py
    python examples/program_evaluation.py --task addition
"""

import time

import numpy as np

from nalu_research.arguments import Shared, check_eval_every, positive_int
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.serving import Export
from nalu_research.tasks.program_evaluation import (
    SPLITS,
    TASKS,
    TOKENS,
    ProgramEvaluation,
    digit_accuracy,
    program_text,
)

MODELS = {"lstm": "LSTM", "nalu": "NALU", "ugrnn": "UGRNN"}


# The arguments that change a run's training or its recorded curves: a
# checkpoint resumes only with them.
TRAINING_ARGUMENTS = (
    "task",
    "seed",
    "steps",
    "eval_every",
    "batch_size",
    "size",
    "learning_rate",
    "clipnorm",
    "loss",
    "schedule",
    "untied",
    "eval_size",
    "backend",
)


def build_model(kind, size, steps, tied_weights=True):
    import keras

    from nalu_research.layers import FirstUnit, LSTMConfiguredNALUCell, UGRNNCell

    features = 1 + len(TOKENS)
    x = keras.Input((steps, features), name="program")
    if kind == "nalu":
        cell = LSTMConfiguredNALUCell(2, size, tied_weights=tied_weights)
        s = keras.layers.RNN(cell)(x)
        y = FirstUnit(name="first_unit")(s)
    else:
        cell = keras.layers.LSTMCell(size) if kind == "lstm" else UGRNNCell(size)
        h = keras.layers.RNN(cell)(x)
        y = keras.layers.Reshape(())(keras.layers.Dense(1)(h))
    return keras.Model(x, y, name=kind)


def predict(model, x):
    import keras

    return keras.ops.convert_to_numpy(model(x, training=False))


def digit_curves(data):
    """`Evaluation`: the digit accuracy on each split, as `<split>_digits`."""
    from nalu_research.callbacks import Evaluation

    return Evaluation(
        lambda model: {
            f"{split}_digits": digit_accuracy(y, predict(model, x))
            for split, (x, y) in data.items()
        }
    )


def make_optimizer(args, steps):
    """Adam at `--learning-rate`, decayed to 1% of it over `steps` steps by
    `--schedule cosine`, with gradients clipped to `--clipnorm`."""
    import keras

    learning_rate = args.learning_rate
    if args.schedule == "cosine":
        learning_rate = keras.optimizers.schedules.CosineDecay(
            args.learning_rate, steps, alpha=0.01
        )
    return keras.optimizers.Adam(learning_rate, clipnorm=args.clipnorm)


def seed_curves(runs, split):
    """`(steps, curves)`: the runs' `split` curves on the evaluation steps of
    the longest run, one row per run, NaN after a run stopped (a diverged
    run's curve ends with its evaluation where it stopped)."""
    steps = np.array(max((run["steps"] for run in runs), key=len))
    curves = np.full((len(runs), len(steps)), np.nan)
    for row, run in zip(curves, runs, strict=True):
        for step, value in zip(run["steps"], run["curves"][split], strict=True):
            row[steps == step] = value
    return steps, curves


class ProgramEvaluationExperiment(Experiment):
    # Its --help description: the module docstring's first paragraph.

    arguments = {
        "models": Shared.all_of(MODELS),
        "seed": 0,
        "seeds": Shared(3, help="runs per model (default %(default)s)"),
        "steps": 6000,
        "eval_every": 500,
        "batch_size": 64,
        "learning_rate": 0.03,
        "clipnorm": Shared(
            1.0,
            help="the largest norm of each weight's gradient (Adam's clipnorm; "
            "default %(default)s)",
        ),
        "eval_size": 1000,
    }
    record_path = "results/program_evaluation_{task}.json"
    checkpoints = True
    export_path = "saved_models/program_evaluation_{task}"

    def add_arguments(self, parser):
        parser.add_argument("--task", default="program", choices=TASKS)
        parser.add_argument(
            "--size", type=positive_int, default=32, help="LSTM/UGRNN units"
        )
        parser.add_argument("--loss", default="mse", choices=["mse", "mae"])
        parser.add_argument(
            "--schedule",
            default="cosine",
            choices=["cosine", "constant"],
            help="learning rate: cosine decay to 1%% over the steps, or constant",
        )
        parser.add_argument(
            "--untied",
            action="store_true",
            help="give the NALU's multiplicative path its own weights",
        )

    def check_arguments(self, args, parser):
        check_eval_every(args, parser)

    def prepare(self, args, session):
        self.generator = generator = ProgramEvaluation(args.task)
        self.data = {
            split: generator.sample(args.eval_size, split, seed=(args.seed, 10**6 + i))
            for i, split in enumerate(SPLITS)
        }
        tokens, values = generator.programs(1, "train", seed=(args.seed, 0))
        seeds = self.seeds(args)
        ranges = {split: "[{}, {})".format(*SPLITS[split]) for split in SPLITS}
        print(
            f"Task '{args.task}', e.g. {program_text(tokens[0], values[0].tolist())}\n"
            f"Train on integers in {ranges['train']}, validate on "
            f"{ranges['validation']}, test on {ranges['test']} "
            f"({args.eval_size} programs each). {args.steps} steps of "
            f"{args.batch_size} fresh programs, Adam lr {args.learning_rate:g} "
            f"({args.schedule}{', untied NALU' if args.untied else ''}) "
            f"(clipnorm {args.clipnorm:g}), {args.loss.upper()} loss, size "
            f"{args.size}, seeds {seeds}.\n",
            flush=True,
        )
        self.best = {}

    def seeds(self, args):
        return list(range(args.seed + 1, args.seed + 1 + args.seeds))

    def runs(self, args):
        return [(kind, seed) for kind in args.models for seed in self.seeds(args)]

    def train(self, args, run, session):
        """Trains one model from its seed in epochs of `--eval-every` fresh
        batches (resumed from its checkpoint when it holds one); its row:
        the curves, the step of each of their points, the final accuracies."""
        import keras

        from nalu_research.tasks.batches import FreshBatches

        kind, seed = run
        name = MODELS[kind]
        print(f"{name}, seed {seed}:", flush=True)
        start = time.perf_counter()
        epochs = max(1, args.steps // args.eval_every)

        def batches(epoch):  # the stream's steps of this epoch: resumable
            first = epoch * args.eval_every
            return FreshBatches(
                self.generator, args.batch_size, args.eval_every, seed, first
            )

        keras.utils.set_random_seed(seed)
        result = session.fit(
            args.task,
            kind,
            seed,
            what=f"{name}, seed {seed}",
            model_fn=lambda: build_model(
                kind, args.size, self.generator.steps, not args.untied
            ),
            data_fn=batches,
            loss=args.loss,
            optimizer_fn=lambda: make_optimizer(args, epochs * args.eval_every),
            epochs=epochs,
            config={
                "model": kind,
                "run_seed": seed,
                **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
            },
            callbacks=[digit_curves(self.data), *session.callbacks(kind, seed)],
        )
        curves = {split: result.history[f"{split}_digits"] for split in self.data}
        final = {split: values[-1] for split, values in curves.items()}
        if name not in self.best or final["validation"] > self.best[name][0]:
            self.best[name] = (final["validation"], seed, result.model)
        return {
            "model": name,
            "seed": seed,
            "final": final,
            "steps": [(epoch + 1) * args.eval_every for epoch in range(result.epochs)],
            "curves": curves,
            "seconds": time.perf_counter() - start,
            "diverged": result.divergence,
        }

    def progress(self, row):
        return {f"{s} digits": f"{v:.1f}%" for s, v in row["final"].items()}

    def run_name(self, run, row):
        return f"{row['model']}, seed {row['seed']}" + (
            ", diverged" if row["diverged"] else ""
        )

    def report(self, args, rows):
        import keras

        seconds = self.elapsed()
        print(
            f"\nDigits correct after {args.steps} steps, median over seeds "
            "(each seed in brackets); train 2-digit, validation 3-digit, test "
            "4-digit integers\n"
        )
        table = []
        for name, runs in results(rows).items():
            cells = []
            for split in SPLITS:
                per_seed = [r["final"][split] for r in runs]
                seeds_text = ", ".join(f"{v:.1f}" for v in per_seed)
                cells.append(f"{np.median(per_seed):.1f}% ({seeds_text})")
            diverged = [r["seed"] for r in runs if r["diverged"]]
            marker = (
                f" (seed {', '.join(map(str, diverged))} diverged)" if diverged else ""
            )
            table.append([f"{name}{marker}", *cells])
        print(
            "\n".join(markdown_table(["model", "train", "validation", "test"], table))
        )
        print(
            f"\nTrained {len(rows)} runs in {seconds:.0f} s on the "
            f"{keras.backend.backend()} backend."
        )
        x_test, y_test = self.data["test"]
        test_tokens, test_values = self.generator.decode(x_test[:3])
        for name, (_, seed, model) in self.best.items():
            prediction = predict(model, x_test[:3])
            print(f"\n{name} (seed {seed}) on test programs:")
            for i in range(3):
                print(
                    f"  {program_text(test_tokens[i], test_values[i].tolist())}"
                    f"  -> {prediction[i]:.1f} (target {y_test[i]:.0f})"
                )

    def exports(self, args, rows):
        """The best NALU, by validation accuracy."""
        if "NALU" not in self.best:
            return []
        x_test = self.data["test"][0]
        return [Export("", self.best["NALU"][2], x_test[:3], sample=x_test[:8])]

    def served(self, args, served):
        (export,) = served.values()
        print(
            f"\nExported the NALU (seed {self.best['NALU'][1]}) to {export['path']}/ "
            "(verified); served on 3 test programs: "
            f"{np.round(np.asarray(export['served']), 1).tolist()}"
        )
        return {"NALU": export}

    def record(self, args, rows):
        return {"results": results(rows)}

    def plot(self, args, rows, plt):
        """The Figure 4 curves: mean and min-max over the seeds."""
        titles = {
            "train": "Train (2 digits)",
            "validation": "Validation (3 digits)",
            "test": "Test (4 digits)",
        }
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.3), sharey=True)
        for ax, split in zip(axes, SPLITS, strict=True):
            for name, runs in results(rows).items():
                steps, curves = seed_curves(runs, split)
                mean = np.nanmean(curves, 0)
                low, high = np.nanmin(curves, 0), np.nanmax(curves, 0)
                (line,) = ax.plot(steps, mean, label=name)
                ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2)
            ax.set_title(titles[split], fontsize=10)
            ax.set_xlabel("training steps")
            ax.set_ylim(0, 100)
        axes[0].set_ylabel("% digits correct")
        axes[0].legend()
        fig.suptitle(
            f"Program evaluation ('{args.task}'): mean and min-max over the seeds "
            "evaluated (a diverged seed's curve ends where it stopped)"
        )
        fig.tight_layout()
        return fig


def results(rows):
    """`{model name: [its runs' rows, without the name]}`, in order (the
    record's `results`)."""
    grouped = {}
    for row in rows:
        grouped.setdefault(row["model"], []).append(
            {k: v for k, v in row.items() if k != "model"}
        )
    return grouped


def main(argv=None):
    return ProgramEvaluationExperiment().main(argv)
