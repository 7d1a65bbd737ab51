"""The digit encoder trained on labels: the ceiling of Table 2's single digits.

Table 2 scores the counting and addition models at length 1: the digit a
single test image implies. Their encoder (`nalu_research.tasks.mnist.
digit_encoder`, the convnet of the PyTorch MNIST example) learns it from the
sequences' counts or sums alone. Here the same encoder, with the same
dropout and image shifts, trains on each training image's own label, on the
same training images, with one of two targets (`--target`):

- `class`: cross-entropy on its 10-way log-softmax (the PyTorch example's
  own training): what those images teach that encoder when every label is
  given, a practical ceiling for the sequence tasks' single digits (a sum of
  ten digits says less about each image than its label does);
- `value`: the addition model itself (`mnist.sequence_model("nau", "sum",
  encoder_output="log_softmax")`: the log-softmax read by the `NAUCell`) on
  sequences of one image, whose sum is its digit (mean squared error, the
  NAU's learning rate): the same labels through the addition model's reading,
  which regresses a value instead of choosing a class.

Reported after the last epoch (no epoch chosen on test data), per seed, with
the training images' accuracy (unshifted) and the median over the seeds.

    python examples/mnist_supervised.py --dataset mnist5k            # 3 seeds
    python examples/mnist_supervised.py --dataset mnist5k --target value

Writes the per-epoch test accuracies with the settings as JSON (`--json`,
default results/mnist_supervised_DATASET_TARGET.json).
"""

import argparse
import sys
import time
from pathlib import Path

import keras
import numpy as np

from nalu_research.cli import (
    add_backend_argument,
    positive_float,
    positive_int,
)
from nalu_research.monitoring import markdown_table, output_file, save_json
from nalu_research.tasks import mnist

EPOCHS = 20
BATCH_SIZE = 32
LEARNING_RATE = 1e-3
TARGETS = ("class", "value")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mnist.add_dataset_arguments(parser)
    mnist.add_encoder_arguments(parser)
    parser.add_argument("--epochs", type=positive_int, default=EPOCHS)
    parser.add_argument("--batch-size", type=positive_int, default=BATCH_SIZE)
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="class",
        help="what the encoder learns of each image: its class (cross-entropy, "
        "default) or its value, read by the addition model's NAUCell (mean "
        "squared error)",
    )
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        help=f"Adam's learning rate (default {LEARNING_RATE:g} for class, the "
        f"NAU's {mnist.LEARNING_RATES['nau']:g} for value)",
    )
    parser.add_argument(
        "--seeds", type=positive_int, default=3, help="seeds 0 to SEEDS-1"
    )
    parser.add_argument(
        "--json",
        type=output_file,
        help="the results as JSON (default "
        "results/mnist_supervised_DATASET_TARGET.json)",
    )
    add_backend_argument(parser, "mnist_supervised")
    args = parser.parse_args(argv)
    if args.json is None:
        args.json = Path(f"results/mnist_supervised_{args.dataset}_{args.target}.json")
    if args.learning_rate is None:
        args.learning_rate = (
            LEARNING_RATE if args.target == "class" else mnist.LEARNING_RATES["nau"]
        )
    return mnist.finish_encoder_arguments(args)


def build(args, image_shape):
    """The model `--target` trains, compiled: the encoder (`class`), or the
    addition model reading sequences of one image (`value`)."""
    if args.target == "class":
        model = mnist.digit_encoder(
            image_shape,
            dropout=args.dropout,
            output="log_softmax",
            encoder=args.encoder,
        )
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        model, _, _ = mnist.sequence_model(
            "nau",
            "sum",
            image_shape,
            dropout=args.dropout,
            encoder_output="log_softmax",
            encoder=args.encoder,
        )
        loss = "mse"
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate), loss=loss)
    return model


def inputs_and_targets(target, images, labels):
    """What the model of `target` reads and learns: the images and their
    classes, or sequences of one image and their sums (`(n, 1)`)."""
    if target == "class":
        return images, labels
    return images[:, None], mnist.sum_targets(labels[:, None])


def accuracy(target, model, images, labels):
    """Test-time accuracy (%): the most probable class, or the rounded sum
    (`mnist.predicted_classes`, as Table 2's length 1)."""
    inputs, _ = inputs_and_targets(target, images, labels)
    predictions = model.predict(inputs, batch_size=1000, verbose=0)
    if target == "class":
        predicted = np.argmax(predictions, -1)
    else:
        predicted = mnist.predicted_classes("sum", predictions)
    return 100.0 * float(np.mean(predicted == labels))


def train(args, seed, train_data, test_data):
    """One seed: `args.epochs` epochs over the training images, each in an
    order and with shifts drawn from `(seed, epoch)`; returns the test
    accuracy after every epoch and the training images' after the last."""
    images, labels = train_data
    keras.utils.set_random_seed(seed)
    model = build(args, images.shape[1:])
    curve = []
    for epoch in range(args.epochs):
        rng = np.random.default_rng((seed, epoch))
        order = rng.permutation(len(labels))
        shifted = mnist.shift_images(
            images[order], args.max_shift, seed=(seed, epoch, 1)
        )
        model.fit(
            *inputs_and_targets(args.target, shifted, labels[order]),
            batch_size=args.batch_size,
            epochs=1,
            shuffle=False,
            verbose=0,
        )
        curve.append(accuracy(args.target, model, *test_data))
        print(f"  epoch {epoch + 1}/{args.epochs}: test {curve[-1]:.1f}%", flush=True)
    return curve, accuracy(args.target, model, *train_data)


def main(argv=None):
    args = parse_args(argv)
    dataset_name = mnist.DATASET_NAMES[args.dataset]
    try:
        train_data, test_data = mnist.load_splits(args)
    except (FileNotFoundError, ImportError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"{dataset_name}: the sequence tasks' encoder trained on the labels of "
        f"its {len(train_data[1])} training images, tested on "
        f"{len(test_data[1])} ("
        + (
            "cross-entropy on its classes"
            if args.target == "class"
            else "the addition model on sequences of one image, mean squared error"
        )
        + f"): {args.epochs} epochs, batch {args.batch_size}, "
        f"Adam lr {args.learning_rate:g}, encoder {args.encoder}, its dropout "
        f"{mnist.describe_dropout(args.dropout, args.encoder)}"
        + (f", images moved by up to {args.max_shift} px" if args.max_shift else "")
        + f"; seeds 0-{args.seeds - 1}.\n",
        flush=True,
    )
    start = time.perf_counter()
    runs = []
    for seed in range(args.seeds):
        print(f"seed {seed}:", flush=True)
        curve, train_accuracy = train(args, seed, train_data, test_data)
        runs.append(
            {
                "seed": seed,
                "test_accuracy": curve[-1],
                "train_accuracy": train_accuracy,
                "epoch_test_accuracy": curve,
            }
        )
    test = [run["test_accuracy"] for run in runs]
    rows = [
        [
            str(run["seed"]),
            f"{run['test_accuracy']:.1f}",
            f"{run['train_accuracy']:.1f}",
        ]
        for run in runs
    ]
    rows.append(
        [
            "median [min, max]",
            f"{np.median(test):.1f} [{min(test):.1f}, {max(test):.1f}]",
            f"{np.median([run['train_accuracy'] for run in runs]):.1f}",
        ]
    )
    print(
        f"\nSingle test digits read by the encoder trained on labels "
        f"({dataset_name}), after epoch {args.epochs}:\n"
    )
    print("\n".join(markdown_table(["seed", "test (%)", "training (%)"], rows)))
    wall = time.perf_counter() - start
    print(f"\nTrained in {wall:.0f} s on the {keras.backend.backend()} backend.")
    save_json(
        {
            "arguments": vars(args),
            "wall_seconds": wall,
            "median_test_accuracy": float(np.median(test)),
            "runs": runs,
        },
        args.json,
    )
    print(f"Wrote {args.json}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
