"""The "mystery arithmetic" task of the reference PyTorch walk-through.

100 inputs, 10 outputs, each `op(x_i, x_j)` for random `i != j` and `op` in
{+, -, *}. Training on 1,000 examples from U[-10, 10], 250 epochs of batches of
32, Adam lr 1e-3, MSE (the blog's setup); testing on 1,000 examples from
U[-50, 50] (the blog's code drew its test set from U[-10, 10] by mistake).
Models, each one layer as in the blog: Dense + ReLU, NAC, NALU (paper's tied
weights), and iNALU (sign-aware: the task's products of signed inputs need it).
Prints the final training and test MSE, the test MSE per kind of output, whether
each model solved the task, and saves the loss curves as a PNG.

    python examples/mystery_arithmetic.py
"""

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_nalu import INALU, NAC, NALU  # noqa: E402
from keras_nalu.tasks import SYMBOLS  # noqa: E402
from keras_nalu.tasks.mystery import MysteryArithmetic  # noqa: E402

MODELS = {
    "Dense-ReLU": lambda n: keras.layers.Dense(n, activation="relu"),
    "NAC": NAC,
    "NALU": NALU,
    "iNALU": INALU,
}


class TestErrorByOperation(keras.callbacks.Callback):
    """Test MSE of the outputs of each operation, after every epoch."""

    def __init__(self, x, y, kinds):
        super().__init__()
        self.x, self.y = x, y
        self.columns = {op: [k for k, o in enumerate(kinds) if o == op] for op in kinds}
        self.history = {op: [] for op in self.columns}

    def on_epoch_end(self, epoch, logs=None):
        error = np.square(self.model.predict(self.x, verbose=0) - self.y).mean(axis=0)
        for op, columns in self.columns.items():
            self.history[op].append(float(error[columns].mean()))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=250)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--train-size", type=int, default=1000)
    parser.add_argument("--test-size", type=int, default=1000)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--png", default="results/mystery_arithmetic.png")
    parser.add_argument("--json", default="results/mystery_arithmetic.json")
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "train_size", "test_size"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer")
    return args


def main(argv=None):
    args = parse_args(argv)
    task = MysteryArithmetic(seed=args.seed)
    x_train, y_train = task.sample(args.train_size, "train", seed=(args.seed, 1))
    x_test, y_test = task.sample(args.test_size, "test", seed=(args.seed, 2))
    print("Outputs: " + ", ".join(task.describe()))
    kinds = [op for _, _, op in task.configuration]
    print(
        f"Train on {args.train_size} examples from U{list(task.train_range)}, test "
        f"on {args.test_size} from U{list(task.test_range)}; {args.epochs} epochs "
        f"of batches of {args.batch_size}, Adam lr {args.learning_rate:g}.\n"
    )

    ops_ = sorted(set(kinds))
    curves, rows = {}, []
    for name, layer in MODELS.items():
        keras.utils.set_random_seed(args.seed)
        model = keras.Sequential([keras.Input((task.input_size,)), layer(10)])
        model.compile(optimizer=keras.optimizers.Adam(args.learning_rate), loss="mse")
        by_operation = TestErrorByOperation(x_test, y_test, kinds)
        start = time.perf_counter()
        history = model.fit(
            x_train,
            y_train,
            batch_size=args.batch_size,
            epochs=args.epochs,
            validation_data=(x_test, y_test),
            callbacks=[by_operation],
            verbose=0,
        )
        seconds = time.perf_counter() - start
        curves[name] = {**history.history, **by_operation.history}
        per_kind = {op: values[-1] for op, values in by_operation.history.items()}
        rows.append((name, history.history, per_kind, seconds))
        print(f"{name}: trained in {seconds:.0f} s", flush=True)

    print(
        "\n| model | train MSE | test MSE | "
        + " | ".join(f"test MSE of {SYMBOLS[op]} outputs" for op in ops_)
        + " |"
    )
    print("|---" * (3 + len(ops_)) + "|")
    for name, hist, per_kind, _ in rows:
        print(
            f"| {name} | {hist['loss'][-1]:.4g} | {hist['val_loss'][-1]:.4g} | "
            + " | ".join(f"{per_kind[op]:.4g}" for op in ops_)
            + " |"
        )
    threshold = task.success_threshold()
    print(
        f"\nSolved means a test MSE within 1% of {threshold:.3g}, that of a "
        "solution whose weights are each off by 1e-5 (simulated): "
        + ", ".join(
            f"{name} {'yes' if hist['val_loss'][-1] <= 1.01 * threshold else 'no'}"
            for name, hist, _, _ in rows
        )
        + "."
    )
    print(
        f"For scale: the test targets have variance {float(y_test.var()):.4g}; "
        "predicting 0 everywhere gives test MSE "
        f"{float(np.square(y_test).mean()):.4g}."
    )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("loss", "training MSE, U[-10, 10]"),
        ("val_loss", "test MSE, U[-50, 50]"),
    ]
    panels += [(op, f"test MSE of {SYMBOLS[op]} outputs") for op in ops_]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2))
    for ax, (key, title) in zip(axes, panels, strict=True):
        for name, hist in curves.items():
            ax.plot(hist[key], label=name)
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_title(title, fontsize=10)
    axes[0].legend()
    fig.tight_layout()
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=100)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps(
            {
                "arguments": vars(args),
                "outputs": task.describe(),
                "models": {
                    name: {
                        "loss": hist["loss"],
                        "val_loss": hist["val_loss"],
                        "test_mse_by_operation": per_kind,
                        "seconds": s,
                    }
                    for name, hist, per_kind, s in rows
                },
            },
            indent=1,
        )  # fmt: skip
    )
    print(f"Wrote {args.png} and {args.json}.")


if __name__ == "__main__":
    main()
