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

import argparse
import os
import time
from pathlib import Path

import keras
import numpy as np

from keras_nalu import NALU, export_saved_model
from keras_nalu.training import Progress, fit
from nalu_research.cli import (
    RUN_OPTIONS,
    Checkpoints,
    add_backend_argument,
    add_training_arguments,
    create_strategy,
    epoch_steps,
    is_chief,
    positive_float,
    positive_int,
    report,
    steps_per_execution,
    stream_epochs,
)
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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operation", default="mul", choices=sorted(OPERATIONS))
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="fixes the task and the random baseline; runs use seed+1, ...",
    )
    parser.add_argument("--runs", type=positive_int, default=5, help="seeds per model")
    parser.add_argument("--steps", type=positive_int, default=20_000)
    parser.add_argument("--batch-size", type=positive_int, default=128)
    parser.add_argument("--learning-rate", type=positive_float, default=1e-2)
    parser.add_argument(
        "--models",
        nargs="+",
        default=list(MODEL_KEYS),
        choices=list(MODEL_KEYS),
        help="which models to train (default: both)",
    )
    parser.add_argument("--eval-size", type=positive_int, default=10_000)
    add_training_arguments(parser, "static_arithmetic", checkpoint_every=1000)
    add_backend_argument(parser, "static_arithmetic")
    parser.add_argument(
        "--export-dir",
        type=output_folder_name,
        default=None,
        help="where to export the NALU (default saved_models/static_arithmetic_OP)",
    )
    add_output_arguments(
        parser,
        None,
        what="settings and every run's errors",
        shown_default="results/static_arithmetic_OP.json",
    )
    args = parser.parse_args(argv)
    if args.json is None:
        args.json = Path(f"results/static_arithmetic_{args.operation}.json")
    args.png = png_path(args)
    return args


def train(build, task, args, seed, strategy, checkpoint_dir, callbacks=()):
    """Trains on `args.steps` fresh batches drawn from `seed`, in epochs of
    `args.checkpoint_every` steps, each checkpointed in `checkpoint_dir`,
    with the Keras `callbacks`.

    Resumes from the checkpoint when one of the same configuration exists;
    returns the `training.fit` result.
    """
    epochs, batches = stream_epochs(
        args,
        lambda steps, start: task.training_batches(
            args.batch_size, steps, seed=seed, start=start
        ),
    )
    config = {k: v for k, v in vars(args).items() if k not in IGNORED}
    return fit(
        build,
        batches,
        loss="mse",
        optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
        epochs=epochs,
        strategy=strategy,
        checkpoint_dir=checkpoint_dir,
        config={**config, "seed": seed},
        steps_per_execution=steps_per_execution(
            min(100, args.steps, args.checkpoint_every)
        ),
        callbacks=callbacks,
    )


# Arguments that change neither a run's training nor its recorded test errors
# (`--eval-size` does: the errors after every epoch are kept): a checkpoint
# resumes across them.
IGNORED = (
    "export_dir",
    "runs",
    "models",
    "json",
    "png",
    *RUN_OPTIONS,
)


def split_mse(model, test_sets):
    """`{split: MSE of model on that test set}`."""
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


def main(argv=None):
    args = parse_args(argv)
    strategy = create_strategy(args)
    task = StaticArithmetic(args.operation, seed=args.seed)
    test_sets = {
        split: task.sample(args.eval_size, split, seed=(args.seed, 10**9 + i))
        for i, split in enumerate(SPLITS)
    }
    symbol = SYMBOLS[args.operation]
    seeds = range(args.seed + 1, args.seed + 1 + args.runs)
    threshold = success_threshold(task)
    print(
        f"Static task y = {symbol}: x in R^{task.input_size}, "
        f"a = sum(x[{task.a_slice.start}:{task.a_slice.stop}]), "
        f"b = sum(x[{task.b_slice.start}:{task.b_slice.stop}]); train and "
        f"interpolate on U{list(task.interpolation_range)}, extrapolate on "
        f"U{list(task.extrapolation_range)}. Each model trains {args.runs} "
        f"times (seeds {seeds.start}-{seeds.stop - 1}) for {args.steps} steps "
        f"of {args.batch_size} fresh examples, Adam lr {args.learning_rate:g}.\n"
    )

    checkpoints = Checkpoints(args, strategy)
    rows, selected, records, random_mses = [], {}, [], {}
    start = time.perf_counter()
    chosen = [MODEL_KEYS[key] for key in args.models]
    progress = Progress(len(chosen) * args.runs, done=0, unit="run")
    for name, build in build_models(task.input_size).items():
        if name not in chosen:
            continue
        # One random model per architecture is the scale of every run (Table 1).
        keras.utils.set_random_seed(args.seed)
        random_mse = random_mses[name] = split_mse(build(), test_sets)
        evaluate = error_metrics(test_sets, random_mse)
        runs = []
        for seed in seeds:
            keras.utils.set_random_seed(seed)  # the run's own, repeatable init
            print(f"{name}, seed {seed}:", flush=True)
            run_start = time.perf_counter()
            key = TABLE_KEYS[name]
            result = train(
                build,
                task,
                args,
                seed,
                strategy,
                checkpoints(args.operation, key, seed),
                callbacks=[
                    Evaluation(evaluate),
                    *tensorboard(args, args.operation, key, seed),
                ],
            )
            report(result, f"{name}, seed {seed}")
            model = result.model
            errors = evaluate(model)
            runs.append((errors, seed, model))
            solved = sum(run[0]["extrapolation_error"] < SOLVED for run in runs)
            strict = sum(run[0]["extrapolation_mse"] < threshold for run in runs)
            records.append(
                {
                    "model": name,
                    "seed": seed,
                    **errors,
                    "solved": bool(errors["extrapolation_error"] < SOLVED),
                    "strict": bool(errors["extrapolation_mse"] < threshold),
                    "selected": False,
                    "diverged": result.divergence,
                    "seconds": round(time.perf_counter() - run_start, 2),
                    # After every epoch: the step, the loss and the errors then.
                    "epochs": {
                        "step": np.cumsum(epoch_steps(args))[: result.epochs].tolist(),
                        **{k: result.history.get(k, []) for k in ("loss", *METRICS)},
                    },
                }
            )
            progress.update(
                len(records),
                {
                    "interpolation": errors["interpolation_error"],
                    "extrapolation": errors["extrapolation_error"],
                    "solved so far": f"{solved}/{len(runs)}",
                    "strict": f"{strict}/{len(runs)}",
                },
                what=f"{name}, seed {seed}"
                + (", diverged" if result.divergence else ""),
            )
        # Select by interpolation error only: extrapolation data stays unseen.
        errors, seed, model = min(
            runs,
            key=lambda run: np.nan_to_num(run[0]["interpolation_error"], nan=np.inf),
        )
        rows.append((name, errors, seed, solved, strict))
        selected[name] = model
        for record in records:
            if record["model"] == name and record["seed"] == seed:
                record["selected"] = True
    seconds = time.perf_counter() - start

    print(
        f"\nTest error for y = {symbol}, relative to a randomly initialized model "
        "x100\n(0 is exact, 100 is random). Each model is the run with the lowest "
        f"interpolation error;\n'solved' counts runs with extrapolation error "
        f"< {SOLVED:g}; 'strict' runs whose extrapolation MSE is below "
        f"{threshold:.3g},\nthat of a solution with weights off by 1e-5 "
        "(Madsen & Johansen 2020).\n"
        "Table 1 of the paper beside it.\n"
    )
    table = []
    for name, errors, seed, solved, strict in rows:
        paper = "{:.1f} / {:.1f}".format(
            *PAPER_TABLE_1[TABLE_KEYS[name]][args.operation]
        )
        table.append(
            [name, f"{errors['interpolation_error']:.4g}",
             f"{errors['extrapolation_error']:.4g}", seed, f"{solved}/{args.runs}",
             f"{strict}/{args.runs}", paper]
        )  # fmt: skip
    header = ["model", "interpolation", "extrapolation", "seed", "solved", "strict",
              "paper I / E"]  # fmt: skip
    print("\n".join(markdown_table(header, table, align="<>>>>>>")))
    print(f"\nTrained in {seconds:.0f} s.")

    if is_chief(strategy):
        if "NALU-NALU" in selected:
            export_and_serve(selected["NALU-NALU"], task, test_sets, args)
        settings = {
            **{k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "target": f"y = {symbol}",
            "a_slice": [task.a_slice.start, task.a_slice.stop],
            "b_slice": [task.b_slice.start, task.b_slice.stop],
            "interpolation_range": task.interpolation_range,
            "extrapolation_range": task.extrapolation_range,
            "random_model_mse": random_mses,
            "solved_below": SOLVED,
            "strict_threshold": threshold,
            "paper_table_1": {
                name: PAPER_TABLE_1[TABLE_KEYS[name]][args.operation] for name in chosen
            },
            "seconds": round(seconds, 1),
        }
        save_json({"settings": settings, "runs": records}, args.json)
        plot(records, symbol, args)
        print(f"\nWrote {args.json} and {args.png}.")
    checkpoints.remove()  # done: the runs' checkpoints are no longer needed


def plot(records, symbol, args):
    """Each run's test errors (paper's scale) after every epoch, a colour per
    model, on a log axis: interpolation left, extrapolation right."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    colors = dict(zip(MODEL_KEYS.values(), ("tab:orange", "tab:blue"), strict=True))
    floor = 1e-9  # errors below it are drawn at it (log axis)
    for ax, split in zip(axes, SPLITS, strict=True):
        labelled = set()
        for record in records:
            curve = np.asarray(record["epochs"][f"{split}_error"], dtype=float)
            curve = np.where(np.isfinite(curve), np.maximum(curve, floor), np.nan)
            name = record["model"]
            ax.plot(
                record["epochs"]["step"],
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
    axes[1].axhline(SOLVED, color="0.3", linestyle="--", linewidth=1, label="solved")
    axes[0].set_ylabel("error, paper's scale (100 = random)")
    legend = {}  # below the plots, where no curve is
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(
        legend.values(), legend.keys(), loc="lower center", ncol=len(legend), fontsize=9
    )
    fig.suptitle(
        f"Static task y = {symbol}: each run's test errors after every epoch",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_png(fig, args.png)


def export_and_serve(model, task, test_sets, args):
    symbol = SYMBOLS[args.operation]
    export_dir = args.export_dir or os.path.join(
        "saved_models", f"static_arithmetic_{args.operation}"
    )
    x_extrap, y_extrap = test_sets["extrapolation"]
    path = export_saved_model(model, export_dir, x_extrap[:8])
    print(f"\nExported the NALU to {path}/ (verified against the Keras model).")

    import tensorflow as tf

    reloaded = tf.saved_model.load(str(path))  # keep it referenced while serving
    served = reloaded.serve(x_extrap[:3])
    print(f"Served by tf.saved_model.load('{path}').serve(x), on extrapolation inputs:")
    a = x_extrap[:3, task.a_slice].sum(axis=1)
    b = x_extrap[:3, task.b_slice].sum(axis=1)
    for i, prediction in enumerate(np.asarray(served)[:, 0]):
        exact = float(y_extrap[i, 0])
        print(
            f"  a = {a[i]:8.3f}, b = {b[i]:8.3f}: served {prediction:12.4f}, "
            f"exact {symbol} = {exact:12.4f} (relative error "
            f"{abs(prediction - exact) / abs(exact):.1e})"
        )


if __name__ == "__main__":
    main()
