"""The paper's recurrent arithmetic task (Section 4.1, Appendix B, Table 1 right).

x_t in R^10 from U[1, 2]; a and b are sums over two fixed slices and over time;
the target is op(a, b). Models (hidden size 2): LSTM, GRU and SimpleRNN (tanh,
ReLU) followed by a linear readout, and NACCell / NALUCell followed by a NAC /
NALU. They train on fresh batches of 128 sequences of length 10 and are tested
on length 10 (interpolation) and length 1000 (extrapolation: a and b 100 times
larger). Errors are on the paper's scale: test MSE relative to a randomly
initialized model of the same architecture, x100; the median over seeds is
printed beside the paper's Table 1.

Each run is checkpointed every `--checkpoint-every` steps; run the same command
again after an interruption and every run resumes where it stopped, ending with
the weights of an uninterrupted run. `--strategy mirrored|multi-worker` trains
on the local devices or on the hosts of `TF_CONFIG` (`keras_nalu.training.fit`).

    python examples/recurrent_arithmetic.py --quick
    python examples/recurrent_arithmetic.py --seeds 3 --steps 5000
"""

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_nalu import NAC, NALU, NACCell, NALUCell  # noqa: E402
from keras_nalu.distribute import is_chief  # noqa: E402
from keras_nalu.training import fit  # noqa: E402
from nalu_research.cli import (  # noqa: E402
    Checkpoints,
    add_backend_argument,
    add_training_arguments,
    create_strategy,
    report,
    stream_epochs,
)
from nalu_research.tasks import OPERATIONS, SYMBOLS, mean_squared_error, paper_scale  # noqa: E402
from nalu_research.tasks.recurrent_arithmetic import (  # noqa: E402
    PAPER_TABLE_1_RECURRENT,
    RecurrentArithmetic,
)

HIDDEN = 2
MODELS = {
    "lstm": ("LSTM", lambda: keras.layers.LSTM(HIDDEN), lambda: keras.layers.Dense(1)),
    "gru": ("GRU", lambda: keras.layers.GRU(HIDDEN), lambda: keras.layers.Dense(1)),
    "rnn_tanh": (
        "RNN tanh",
        lambda: keras.layers.SimpleRNN(HIDDEN),
        lambda: keras.layers.Dense(1),
    ),
    "rnn_relu": (
        "RNN ReLU",
        lambda: keras.layers.SimpleRNN(HIDDEN, activation="relu"),
        lambda: keras.layers.Dense(1),
    ),
    "nac": ("NAC", lambda: keras.layers.RNN(NACCell(HIDDEN)), lambda: NAC(1)),
    "nalu": ("NALU", lambda: keras.layers.RNN(NALUCell(HIDDEN)), lambda: NALU(1)),
}
QUICK = {"operations": ["add", "mul"], "seeds": 1, "steps": 2000}
BATCH_SIZE = 128
# The arguments that change a run's training: a checkpoint resumes only with them.
TRAINING_ARGUMENTS = ("steps", "learning_rate", "checkpoint_every", "backend")


def build(model, input_size):
    _, recurrent, readout = MODELS[model]
    return keras.Sequential(
        [keras.Input((None, input_size)), recurrent(), readout()], name=model
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", nargs="+", choices=list(OPERATIONS))
    parser.add_argument(
        "--models", nargs="+", choices=list(MODELS), default=list(MODELS)
    )
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 (default 3)")
    parser.add_argument("--steps", type=int, help="training steps (default 5,000)")
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--eval-size", type=int, default=1000)
    parser.add_argument(
        "--quick", action="store_true", help="a+b and a*b, 1 seed, 2,000 steps"
    )
    parser.add_argument("--json", default="results/recurrent_arithmetic.json")
    add_training_arguments(parser, "recurrent_arithmetic", checkpoint_every=1000)
    add_backend_argument(parser, "recurrent_arithmetic")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else {
        "operations": list(OPERATIONS), "seeds": 3, "steps": 5000,
    }  # fmt: skip
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("seeds", "steps", "eval_size"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer")
    return args


def run(model, operation, seed, args, strategy, checkpoint_dir):
    """Trains one model from `seed`; its paper-scale errors, seconds and the
    `training.fit` result (resumed from `checkpoint_dir` when it holds one)."""
    task = RecurrentArithmetic(operation, seed=seed)
    test = {
        split: task.sample(args.eval_size, split, seed=(seed, 10**9 + i))
        for i, split in enumerate(("interpolation", "extrapolation"))
    }
    keras.utils.set_random_seed(seed)
    random_model = build(model, task.input_size)
    epochs, batches = stream_epochs(
        args,
        lambda steps, start: task.training_batches(
            BATCH_SIZE, steps, seed=seed, start=start
        ),
    )

    start = time.perf_counter()
    # The trained model's init follows the random model's in the seeded stream.
    result = fit(
        lambda: build(model, task.input_size),
        batches,
        loss="mse",
        optimizer_fn=lambda: keras.optimizers.Adam(args.learning_rate),
        epochs=epochs,
        strategy=strategy,
        checkpoint_dir=checkpoint_dir,
        config={
            "operation": operation,
            "model": model,
            "seed": seed,
            **{k: getattr(args, k) for k in TRAINING_ARGUMENTS},
        },
        verbose=0,
    )
    seconds = time.perf_counter() - start
    errors = {}
    for split, (x, y) in test.items():
        mse, random_mse = (
            mean_squared_error(y, m.predict(x, batch_size=250, verbose=0))
            for m in (result.model, random_model)
        )
        errors[split] = paper_scale(mse, random_mse) if np.isfinite(mse) else math.inf
    return errors, seconds, result


def fmt(value):
    if value is None:
        return "-"
    return ">999" if not np.isfinite(value) or value > 999 else f"{value:.3g}"


def main(argv=None):
    args = parse_args(argv)
    strategy = create_strategy(args)
    checkpoints = Checkpoints(args.checkpoint_dir, strategy)
    start = time.perf_counter()
    results = []
    for operation in args.operations:
        for model in args.models:
            for seed in range(args.seeds):
                folder = checkpoints(operation, model, seed)
                errors, seconds, result = run(
                    model, operation, seed, args, strategy, folder
                )
                label = f"{SYMBOLS[operation]:>7} {MODELS[model][0]:>8} seed {seed}"
                report(result, f"{SYMBOLS[operation]} {MODELS[model][0]} seed {seed}")
                results.append(
                    {"operation": operation, "model": model, "seed": seed,
                     **errors, "seconds": seconds,
                     "diverged": result.divergence}
                )  # fmt: skip
                print(
                    f"{label}: "
                    f"interpolation {fmt(errors['interpolation'])}, extrapolation "
                    f"{fmt(errors['extrapolation'])} ({seconds:.0f} s)"
                    + (" (diverged)" if result.divergence else ""),
                    flush=True,
                )
    header = "| op | " + " | ".join(MODELS[m][0] for m in args.models) + " |"
    for split, index in (("interpolation", 0), ("extrapolation", 1)):
        print(
            f"\nMedian {split} error on the paper's scale over {args.seeds} seed(s) "
            "(paper's Table 1 in brackets; 100 is the random initialization):\n"
        )
        print(header)
        print("|---" * (len(args.models) + 1) + "|")
        for operation in args.operations:
            cells = []
            for model in args.models:
                runs = [
                    r
                    for r in results
                    if r["operation"] == operation and r["model"] == model
                ]
                ours = np.median([r[split] for r in runs])
                paper = PAPER_TABLE_1_RECURRENT.get(model, {}).get(operation)
                cells.append(
                    fmt(ours)
                    + ("*" if any(r["diverged"] for r in runs) else "")
                    + (f" ({fmt(paper[index])})" if paper else "")
                )
            print(f"| {SYMBOLS[operation]} | " + " | ".join(cells) + " |")
    if any(r["diverged"] for r in results):
        print(
            "\n* includes a run that diverged (non-finite training loss; "
            "training stopped there and the run was evaluated as it stopped)."
        )
    seconds = time.perf_counter() - start
    print(f"\nWall time: {seconds:.0f} s on the {keras.backend.backend()} backend.")
    if is_chief(strategy):
        arguments = {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {"arguments": arguments, "wall_seconds": seconds, "runs": results},
                indent=1,
            )  # fmt: skip
        )
        print(f"Wrote {args.json}.")
    checkpoints.remove()  # done: the runs' checkpoints are no longer needed


if __name__ == "__main__":
    main()
