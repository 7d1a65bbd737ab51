"""The digit encoder trained on labels: the ceiling of Table 2's single digits.

Table 2 scores the counting and addition models at length 1: the digit a
single test image implies. Their encoder (`nalu_research.models.mnist.
digit_encoder`, the convnet of the PyTorch MNIST example) learns it from the
sequences' counts or sums alone. Here the same encoder, with the same
dropout and image shifts, trains on each training image's own label, on the
same training images, with one of two targets (`--target`):

- `class`: cross-entropy on its 10-way log-softmax (the PyTorch example's
  own training): what those images teach that encoder when every label is
  given, a practical ceiling for the sequence tasks' single digits (a sum of
  ten digits says less about each image than its label does);
- `value`: the addition model itself (`models.sequence_model("nau", "sum",
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

import time

import numpy as np

from nalu_research.arguments import Shared
from nalu_research.experiment import Experiment
from nalu_research.image_arguments import (
    add_dataset_arguments,
    add_encoder_arguments,
    describe_encoder,
    finish_encoder_arguments,
    load_splits,
)
from nalu_research.models import mnist as models
from nalu_research.monitoring import markdown_table
from nalu_research.tasks import mnist

LEARNING_RATE = 1e-3
TARGETS = ("class", "value")


class MnistSupervisedExperiment(Experiment):
    """The digit encoder trained on labels: the ceiling of Table 2's single
    digits."""

    arguments = {
        "epochs": 20,
        "batch_size": 32,
        "learning_rate": Shared(
            help=f"Adam's learning rate (default {LEARNING_RATE:g} for class, the "
            f"NAU's {models.LEARNING_RATES['nau']:g} for value)"
        ),
        "seeds": Shared(3, help="seeds 0 to SEEDS-1 (default %(default)s)"),
    }
    record_path = "results/mnist_supervised_{dataset}_{target}.json"

    def add_arguments(self, parser):
        add_dataset_arguments(parser)
        add_encoder_arguments(parser)
        parser.add_argument(
            "--target",
            choices=TARGETS,
            default="class",
            help="what the encoder learns of each image: its class (cross-entropy, "
            "default) or its value, read by the addition model's NAUCell (mean "
            "squared error)",
        )

    def check_arguments(self, args, parser):
        if args.learning_rate is None:
            rates = {"class": LEARNING_RATE, "value": models.LEARNING_RATES["nau"]}
            args.learning_rate = rates[args.target]
        finish_encoder_arguments(args)

    def prepare(self, args, session):
        self.train_data, self.test_data = load_splits(args)
        print(
            f"{mnist.DATASET_NAMES[args.dataset]}: the sequence tasks' encoder "
            f"trained on the labels of its {len(self.train_data[1])} training "
            f"images, tested on {len(self.test_data[1])} ("
            + (
                "cross-entropy on its classes"
                if args.target == "class"
                else "the addition model on sequences of one image, mean squared error"
            )
            + f"): {args.epochs} epochs, batch {args.batch_size}, "
            f"Adam lr {args.learning_rate:g}, {describe_encoder(args)}"
            + f"; seeds 0-{args.seeds - 1}.\n",
            flush=True,
        )
        self.started = time.perf_counter()

    def runs(self, args):
        return [(seed,) for seed in range(args.seeds)]

    def train(self, args, run, session):
        (seed,) = run
        print(f"seed {seed}:", flush=True)
        curve, train_accuracy = train_seed(args, seed, self.train_data, self.test_data)
        return {
            "seed": seed,
            "test_accuracy": curve[-1],
            "train_accuracy": train_accuracy,
            "epoch_test_accuracy": curve,
        }

    def progress(self, row):
        return {"test": f"{row['test_accuracy']:.1f}%"}

    def run_name(self, run, row):
        return f"seed {run[0]}"

    def report(self, args, rows):
        test = [row["test_accuracy"] for row in rows]
        table = [
            [
                str(row["seed"]),
                f"{row['test_accuracy']:.1f}",
                f"{row['train_accuracy']:.1f}",
            ]
            for row in rows
        ]
        table.append(
            [
                "median [min, max]",
                f"{np.median(test):.1f} [{min(test):.1f}, {max(test):.1f}]",
                f"{np.median([row['train_accuracy'] for row in rows]):.1f}",
            ]
        )
        print(
            f"\nSingle test digits read by the encoder trained on labels "
            f"({mnist.DATASET_NAMES[args.dataset]}), after epoch {args.epochs}:\n"
        )
        print("\n".join(markdown_table(["seed", "test (%)", "training (%)"], table)))
        self.wall = time.perf_counter() - self.started
        print(f"\nTrained in {self.wall:.0f} s on the {args.backend} backend.")

    def record(self, args, rows):
        return {
            "wall_seconds": self.wall,
            "median_test_accuracy": float(
                np.median([row["test_accuracy"] for row in rows])
            ),
        }


def build(args, image_shape):
    """The model `--target` trains, compiled: the encoder (`class`), or the
    addition model reading sequences of one image (`value`)."""
    import keras

    if args.target == "class":
        model = models.digit_encoder(
            image_shape,
            dropout=args.dropout,
            output="log_softmax",
            encoder=args.encoder,
        )
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        model, _, _ = models.sequence_model(
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


def train_seed(args, seed, train_data, test_data):
    """One seed: `args.epochs` epochs over the training images, each in an
    order and with shifts drawn from `(seed, epoch)`; returns the test
    accuracy after every epoch and the training images' after the last."""
    import keras

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
    return MnistSupervisedExperiment().main(argv)
