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

import argparse
import time
from pathlib import Path

import keras
import numpy as np

from keras_nalu import export_saved_model
from keras_nalu.training import Progress, fit
from nalu_research.cli import (
    Checkpoints,
    add_backend_argument,
    add_training_arguments,
    can_export,
    create_strategy,
    is_chief,
    non_negative_int,
    positive_float,
    positive_int,
    report,
)
from nalu_research.layers import FirstUnit, LSTMConfiguredNALUCell, UGRNNCell
from nalu_research.monitoring import (
    Evaluation,
    add_output_arguments,
    markdown_table,
    output_folder_name,
    png_path,
    pyplot,
    save_json,
    save_png,
    tensorboard,
)
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


class Batches(keras.utils.PyDataset):
    """`steps` fresh training batches; batch `i` is drawn from
    `(seed, start + i)`, so consecutive slices of the stream (`start=0`, then
    `start=steps`, ...) are the batches of one long stream."""

    def __init__(self, generator, batch_size, steps, seed, start=0):
        super().__init__()
        self.generator, self.batch_size = generator, batch_size
        self.steps, self.seed, self.start = steps, seed, start

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        seed = (self.seed, self.start + index)
        return self.generator.sample(self.batch_size, "train", seed=seed)


def predict(model, x):
    return keras.ops.convert_to_numpy(model(x, training=False))


def digit_curves(data):
    """`Evaluation`: the digit accuracy on each split, as `<split>_digits`."""
    return Evaluation(
        lambda model: {
            f"{split}_digits": digit_accuracy(y, predict(model, x))
            for split, (x, y) in data.items()
        }
    )


def make_optimizer(args, steps):
    """Adam at `--learning-rate`, decayed to 1% of it over `steps` steps by
    `--schedule cosine`, with gradients clipped to `--clipnorm`."""
    learning_rate = args.learning_rate
    if args.schedule == "cosine":
        learning_rate = keras.optimizers.schedules.CosineDecay(
            args.learning_rate, steps, alpha=0.01
        )
    return keras.optimizers.Adam(learning_rate, clipnorm=args.clipnorm)


def train_run(kind, seed, generator, data, args, strategy, checkpoint_dir):
    """Trains one model from `seed` in epochs of `args.eval_every` fresh
    batches; returns the `training.fit` result (resumed from `checkpoint_dir`
    when it holds one), the curves and the step of each of their points."""
    epochs = max(1, args.steps // args.eval_every)

    def batches(epoch):  # the stream's steps of this epoch: resumable
        start = epoch * args.eval_every
        return Batches(generator, args.batch_size, args.eval_every, seed, start)

    keras.utils.set_random_seed(seed)
    result = fit(
        lambda: build_model(kind, args.size, generator.steps, not args.untied),
        batches,
        loss=args.loss,
        optimizer_fn=lambda: make_optimizer(args, epochs * args.eval_every),
        epochs=epochs,
        strategy=strategy,
        checkpoint_dir=checkpoint_dir,
        config={
            "model": kind,
            "run_seed": seed,
            **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
        },
        callbacks=[digit_curves(data), *tensorboard(args, kind, seed)],
    )
    curves = {split: result.history[f"{split}_digits"] for split in data}
    steps = [(epoch + 1) * args.eval_every for epoch in range(result.epochs)]
    return result, curves, steps


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="program", choices=TASKS)
    parser.add_argument(
        "--models", nargs="+", default=list(MODELS), choices=list(MODELS)
    )
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--seeds", type=positive_int, default=3, help="runs per model")
    parser.add_argument("--steps", type=positive_int, default=6000)
    parser.add_argument("--eval-every", type=positive_int, default=500)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument(
        "--size", type=positive_int, default=32, help="LSTM/UGRNN units"
    )
    parser.add_argument("--learning-rate", type=positive_float, default=0.03)
    parser.add_argument("--clipnorm", type=positive_float, default=1.0)
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
    parser.add_argument("--eval-size", type=positive_int, default=1000)
    parser.add_argument(
        "--export-dir",
        type=output_folder_name,
        help="default saved_models/program_evaluation_TASK",
    )
    add_output_arguments(
        parser, None, shown_default="results/program_evaluation_TASK.json"
    )
    add_training_arguments(parser, "program_evaluation")
    add_backend_argument(parser, "program_evaluation")
    args = parser.parse_args(argv)
    if args.eval_every > args.steps:
        parser.error(
            f"--eval-every must be at most --steps ({args.steps}), "
            f"got {args.eval_every}"
        )
    if args.export_dir is None:
        args.export_dir = f"saved_models/program_evaluation_{args.task}"
    if args.json is None:
        args.json = Path(f"results/program_evaluation_{args.task}.json")
    args.png = png_path(args)
    return args


def main(argv=None):
    args = parse_args(argv)
    strategy = create_strategy(args)
    checkpoints = Checkpoints(args, strategy)
    generator = ProgramEvaluation(args.task)
    data = {
        split: generator.sample(args.eval_size, split, seed=(args.seed, 10**6 + i))
        for i, split in enumerate(SPLITS)
    }
    tokens, values = generator.programs(1, "train", seed=(args.seed, 0))
    seeds = list(range(args.seed + 1, args.seed + 1 + args.seeds))
    ranges = {split: "[{}, {})".format(*SPLITS[split]) for split in SPLITS}
    print(
        f"Task '{args.task}', e.g. {program_text(tokens[0], values[0].tolist())}\n"
        f"Train on integers in {ranges['train']}, validate on "
        f"{ranges['validation']}, test on {ranges['test']} "
        f"({args.eval_size} programs each). {args.steps} steps of "
        f"{args.batch_size} fresh programs, Adam lr {args.learning_rate:g} "
        f"({args.schedule}{', untied NALU' if args.untied else ''}) "
        f"(clipnorm {args.clipnorm:g}), {args.loss.upper()} loss, size {args.size}, "
        f"seeds {seeds}.\n",
        flush=True,
    )
    start = time.perf_counter()
    results, best = {}, {}
    progress = Progress(len(args.models) * len(seeds), done=0, unit="run")
    for key in args.models:
        name = MODELS[key]
        results[name] = []
        for seed in seeds:
            print(f"{name}, seed {seed}:", flush=True)
            t0 = time.perf_counter()
            folder = checkpoints(args.task, key, seed)
            result, curves, steps = train_run(
                key, seed, generator, data, args, strategy, folder
            )
            report(result, f"{name}, seed {seed}")
            model = result.model
            final = {split: values[-1] for split, values in curves.items()}
            results[name].append(
                {"seed": seed, "final": final, "steps": steps, "curves": curves,
                 "seconds": time.perf_counter() - t0,
                 "diverged": result.divergence}
            )  # fmt: skip
            progress.update(
                sum(map(len, results.values())),
                {f"{s} digits": f"{v:.1f}%" for s, v in final.items()},
                what=f"{name}, seed {seed}"
                + (", diverged" if result.divergence else ""),
            )
            if name not in best or final["validation"] > best[name][0]:
                best[name] = (final["validation"], seed, model)
    seconds = time.perf_counter() - start

    print(
        f"\nDigits correct after {args.steps} steps, median over seeds "
        "(each seed in brackets); train 2-digit, validation 3-digit, test "
        "4-digit integers\n"
    )
    table = []
    for name, runs in results.items():
        cells = []
        for split in SPLITS:
            per_seed = [r["final"][split] for r in runs]
            seeds_text = ", ".join(f"{v:.1f}" for v in per_seed)
            cells.append(f"{np.median(per_seed):.1f}% ({seeds_text})")
        diverged = [r["seed"] for r in runs if r["diverged"]]
        marker = f" (seed {', '.join(map(str, diverged))} diverged)" if diverged else ""
        table.append([f"{name}{marker}", *cells])
    print("\n".join(markdown_table(["model", "train", "validation", "test"], table)))
    print(
        f"\nTrained {progress.total} runs in {seconds:.0f} s on the "
        f"{keras.backend.backend()} backend."
    )

    x_test, y_test = data["test"]
    for name, (_, seed, model) in best.items():
        prediction = predict(model, x_test[:3])
        print(f"\n{name} (seed {seed}) on test programs:")
        test_tokens, test_values = generator.decode(x_test[:3])
        for i in range(3):
            print(
                f"  {program_text(test_tokens[i], test_values[i].tolist())}"
                f"  -> {prediction[i]:.1f} (target {y_test[i]:.0f})"
            )

    if is_chief(strategy):
        write_outputs(results, best, x_test, seconds, args)
    checkpoints.remove()  # done: the runs' checkpoints are no longer needed


def write_outputs(results, best, x_test, seconds, args):
    """The curves (PNG), the best NALU (SavedModel) and the results (JSON)."""
    _plot(results, args)
    if "NALU" in best and can_export("the NALU"):
        path = export_saved_model(best["NALU"][2], args.export_dir, x_test[:8])
        import tensorflow as tf

        reloaded = tf.saved_model.load(str(path))  # keep it referenced
        served = reloaded.serve(x_test[:3])
        print(
            f"\nExported the NALU (seed {best['NALU'][1]}) to {path}/ (verified); "
            f"served on 3 test programs: {np.round(np.asarray(served), 1).tolist()}"
        )
    arguments = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    save_json(
        {"arguments": arguments, "results": results, "seconds": seconds}, args.json
    )
    print(f"Wrote {args.png} and {args.json}.")


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


def _plot(results, args):
    plt = pyplot()
    titles = {"train": "Train (2 digits)", "validation": "Validation (3 digits)",
              "test": "Test (4 digits)"}  # fmt: skip
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3), sharey=True)
    for ax, split in zip(axes, SPLITS, strict=True):
        for name, runs in results.items():
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
    save_png(fig, args.png)


if __name__ == "__main__":
    main()
