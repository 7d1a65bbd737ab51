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

    python examples/static_arithmetic.py
    python examples/static_arithmetic.py --operation add --runs 3
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_nalu import NALU, export_saved_model  # noqa: E402
from keras_nalu.distribute import is_chief  # noqa: E402
from keras_nalu.training import fit  # noqa: E402
from nalu_research.cli import (  # noqa: E402
    Checkpoints,
    add_backend_argument,
    add_training_arguments,
    create_strategy,
    report,
    steps_per_execution,
    stream_epochs,
)
from nalu_research.tasks import (  # noqa: E402
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
    parser.add_argument("--runs", type=int, default=5, help="seeds per model")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument(
        "--models",
        nargs="+",
        default=list(MODEL_KEYS),
        choices=list(MODEL_KEYS),
        help="which models to train (default: both)",
    )
    parser.add_argument("--eval-size", type=int, default=10_000)
    add_training_arguments(parser, "static_arithmetic", checkpoint_every=1000)
    add_backend_argument(parser, "static_arithmetic")
    parser.add_argument(
        "--export-dir",
        default=None,
        help="where to export the NALU (default saved_models/static_arithmetic_OP)",
    )
    args = parser.parse_args(argv)
    for name in ("runs", "steps", "batch_size", "eval_size"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer")
    if not args.learning_rate > 0:
        parser.error("--learning-rate must be greater than 0")
    return args


def train(build, task, args, seed, strategy, checkpoint_dir):
    """Trains on `args.steps` fresh batches drawn from `seed`, in epochs of
    `args.checkpoint_every` steps, each checkpointed in `checkpoint_dir`.

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
        verbose=1 if sys.stdout.isatty() else 2,
    )


# Arguments that do not change a run's results: a checkpoint resumes across them.
IGNORED = ("export_dir", "checkpoint_dir", "strategy", "runs", "models", "eval_size")


def evaluate(model, random_model, test_sets):
    """Paper-scale error of `model` on each test set."""
    errors = {}
    for split, (x, y) in test_sets.items():
        mse, random_mse = (
            mean_squared_error(y, keras.ops.convert_to_numpy(m(x, training=False)))
            for m in (model, random_model)
        )
        errors[split] = paper_scale(mse, random_mse)
        errors[f"{split} MSE"] = mse
    return errors


def main(argv=None):
    args = parse_args(argv)
    strategy = create_strategy(args)
    task = StaticArithmetic(args.operation, seed=args.seed)
    test_sets = {
        split: task.sample(args.eval_size, split, seed=(args.seed, 10**9 + i))
        for i, split in enumerate(("interpolation", "extrapolation"))
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

    checkpoints = Checkpoints(args.checkpoint_dir, strategy)
    rows, selected = [], {}
    start = time.perf_counter()
    chosen = [MODEL_KEYS[key] for key in args.models]
    for name, build in build_models(task.input_size).items():
        if name not in chosen:
            continue
        # One random model per architecture is the scale of every run (Table 1).
        keras.utils.set_random_seed(args.seed)
        random_model = build()
        runs = []
        for seed in seeds:
            keras.utils.set_random_seed(seed)  # the run's own, repeatable init
            print(f"{name}, seed {seed}:")
            result = train(
                build,
                task,
                args,
                seed,
                strategy,
                checkpoints(args.operation, TABLE_KEYS[name], seed),
            )
            report(result)
            model = result.model
            errors = evaluate(model, random_model, test_sets)
            print(
                f"  interpolation {errors['interpolation']:.4g}, "
                f"extrapolation {errors['extrapolation']:.4g}"
                + (" (diverged)" if result.divergence else "")
            )
            runs.append((errors, seed, model))
        # Select by interpolation error only: extrapolation data stays unseen.
        errors, seed, model = min(
            runs, key=lambda run: np.nan_to_num(run[0]["interpolation"], nan=np.inf)
        )
        solved = sum(run[0]["extrapolation"] < SOLVED for run in runs)
        strict = sum(run[0]["extrapolation MSE"] < threshold for run in runs)
        rows.append((name, errors, seed, solved, strict))
        selected[name] = model

    print(
        f"\nTest error for y = {symbol}, relative to a randomly initialized model "
        "x100\n(0 is exact, 100 is random). Each model is the run with the lowest "
        f"interpolation error;\n'solved' counts runs with extrapolation error "
        f"< {SOLVED:g}; 'strict' runs whose extrapolation MSE is below "
        f"{threshold:.3g},\nthat of a solution with weights off by 1e-5 "
        "(Madsen & Johansen 2020).\n"
        "Table 1 of the paper beside it.\n"
    )
    print(
        "| model     | interpolation | extrapolation | seed | solved | strict "
        "| paper I / E |"
    )
    print(
        "|-----------|---------------|---------------|------|--------|--------"
        "|-------------|"
    )
    for name, errors, seed, solved, strict in rows:
        paper = "{:.1f} / {:.1f}".format(
            *PAPER_TABLE_1[TABLE_KEYS[name]][args.operation]
        )
        print(
            f"| {name} | {errors['interpolation']:13.4g} | "
            f"{errors['extrapolation']:13.4g} | {seed:4d} | "
            f"{f'{solved}/{args.runs}':>6} | {f'{strict}/{args.runs}':>6} | "
            f"{paper:>11} |"
        )
    print(f"\nTrained in {time.perf_counter() - start:.0f} s.")

    if "NALU-NALU" in selected and is_chief(strategy):
        export_and_serve(selected["NALU-NALU"], task, test_sets, args)
    checkpoints.remove()  # done: the runs' checkpoints are no longer needed


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
