"""What the example scripts share: argparse types, the `--backend` option,
and the options and steps around `keras_nalu.training.fit` (strategy,
checkpoints, divergence)."""

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path

import keras
import numpy as np

from keras_nalu import validation
from keras_nalu.training import (
    STRATEGIES,
    CheckpointAheadError,
    keep_checkpoint,
    remove_checkpoint,
)
from nalu_research.backends import BACKENDS, DEFAULTS, TENSORFLOW_ONLY
from nalu_research.monitoring import add_tensorboard_argument, output_folder


def argument_type(check, convert):
    """An argparse `type` from a check of `keras_nalu.validation`: the text
    converted by `convert` (e.g. `int`), then checked; a text either rejects
    fails with the check's own words, `expected a positive integer, got
    '0'`."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = text  # the check rejects it, in its words
        try:
            return check("value", value)
        except validation.InvalidValueError as error:
            raise argparse.ArgumentTypeError(
                f"expected {error.expected}, got {text!r}"
            ) from None

    parse.__name__ = check.__name__  # argparse's "invalid positive_int value"
    return parse


positive_int = argument_type(validation.positive_int, int)
non_negative_int = argument_type(validation.non_negative_int, int)
positive_float = argument_type(validation.positive_float, float)
non_negative_float = argument_type(validation.non_negative_float, float)


def add_backend_argument(parser, experiment):
    """Adds `--backend` to the parser of `experiment` (a key of
    `nalu_research.backends.DEFAULTS`), for `--help` and the record of the
    run: `nalu_research.backends.run` has chosen the backend already, before
    Keras was imported. Its value is the backend Keras runs on; a parser
    given another one (Keras was imported first) exits with an error."""
    default = DEFAULTS[experiment]
    if experiment in TENSORFLOW_ONLY:
        choices = ("tensorflow",)
        why = f"tensorflow only: {TENSORFLOW_ONLY[experiment]}"
    else:
        choices = BACKENDS
        why = f"default {default}, measured fastest here; $KERAS_BACKEND overrides it"
    parser.add_argument(
        "--backend",
        choices=choices,
        default=keras.backend.backend(),
        action=_Backend,
        help=f"Keras backend, set before Keras is imported ({why})",
    )


class _Backend(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        running = keras.backend.backend()
        if values != running:
            parser.error(
                f"argument --backend: Keras was imported with the {running!r} "
                f"backend before --backend {values} was read; run the "
                "experiment through its examples/ script, which sets the "
                "backend first, or set KERAS_BACKEND"
            )
        setattr(namespace, self.dest, values)


def add_schedule_argument(parser, default=None, help=None):
    """Adds `--regularization STRENGTH START END`, the units' penalty schedule,
    checked at parse time and stored as `[strength, start, end]` (floats,
    then integer steps)."""
    parser.add_argument(
        "--regularization",
        nargs=3,
        action=_Schedule,
        default=default,
        metavar=("STRENGTH", "START", "END"),
        help=help,
    )


class _Schedule(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        try:
            strength, start, end = (float(v) for v in values)
        except ValueError:
            strength = math.nan
        if not (
            math.isfinite(strength) and strength >= 0 and 0 <= start <= end
            and start == int(start) and end == int(end)
        ):  # fmt: skip
            parser.error(
                "--regularization expects STRENGTH >= 0 and integer steps "
                "0 <= START <= END"
            )
        setattr(namespace, self.dest, [strength, int(start), int(end)])


def add_learning_rate_drop_argument(parser):
    """Adds `--learning-rate-drop STEP FACTOR`, checked at parse time and
    stored as `[step, factor]` (an integer, a float); `learning_rate` reads
    it."""
    parser.add_argument(
        "--learning-rate-drop",
        nargs=2,
        action=_LearningRateDrop,
        metavar=("STEP", "FACTOR"),
        help="multiply the learning rate by FACTOR once the optimizer's step "
        "count exceeds STEP (a Keras PiecewiseConstantDecay; default: constant)",
    )


class _LearningRateDrop(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        try:
            step, factor = (float(v) for v in values)
        except ValueError:
            step = math.nan
        if not (
            math.isfinite(step) and step >= 0 and step == int(step)
            and math.isfinite(factor) and factor > 0
        ):  # fmt: skip
            parser.error(
                "--learning-rate-drop expects an integer STEP >= 0 and FACTOR > 0, "
                f"got {' '.join(values)}"
            )
        setattr(namespace, self.dest, [int(step), factor])


def learning_rate(rate, drop=None):
    """Adam's learning rate: `rate`, or with `drop = [step, factor]` (from
    `--learning-rate-drop`) a `PiecewiseConstantDecay` to `rate * factor`
    after `step` steps."""
    if drop is None:
        return rate
    step, factor = drop
    return keras.optimizers.schedules.PiecewiseConstantDecay(
        [int(step)], [rate, rate * factor]
    )


def add_ema_argument(parser):
    """Adds `--ema MOMENTUM`: Adam keeps a moving average of the weights
    (Keras's `use_ema`), which the trained model ends with; `adam_options`
    reads it."""
    parser.add_argument(
        "--ema",
        type=_momentum,
        metavar="MOMENTUM",
        help="end with the moving average of the weights over training, each "
        "step weighing 1 - MOMENTUM (Keras's use_ema; e.g. 0.999; default: "
        "the last weights); the test metrics after each epoch read the "
        "averages too",
    )


def _momentum(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def adam_options(momentum):
    """`keras.optimizers.Adam` keyword arguments for `--ema` (None: none)."""
    return {} if momentum is None else {"use_ema": True, "ema_momentum": momentum}


def steps_per_execution(steps):
    """`steps` for `model.compile`, or 1 on the torch backend, whose trainer
    runs one step per call."""
    return 1 if keras.backend.backend() == "torch" else steps


def can_export(what):
    """Whether `keras_nalu.export_saved_model` runs on this backend (on
    tensorflow and jax, not on torch); when it does not, prints that `what`
    (e.g. "the models") is not exported, and how to export it."""
    backend = keras.backend.backend()
    if backend in ("tensorflow", "jax"):
        try:  # the export imports it anyway
            import tensorflow  # noqa: F401
        except ImportError:
            print(f"\nNo SavedModel export of {what}: TensorFlow is not installed.")
            return False
        return True
    print(
        f"\nNo SavedModel export of {what} on the {backend} backend (Keras "
        "exports from tensorflow and jax): add --backend tensorflow to export."
    )
    return False


# The options of `add_training_arguments` that change no run's results: left
# out of the `config` a checkpoint resumes under.
RUN_OPTIONS = ("strategy", "checkpoint_dir", "keep_checkpoint", "tensorboard")


def add_training_arguments(
    parser, name, checkpoint_every=None, continued_by=None, keep=True
):
    """Adds `--strategy`, `--checkpoint-dir` (default results/checkpoints/NAME),
    `--keep-checkpoint` for a script that trains with `training.fit` (`keep`;
    `continued_by`: the option that, given more, continues a kept run, for
    its help), `--tensorboard DIR`
    (`nalu_research.monitoring.tensorboard`) and, for a script that trains in
    steps, `--checkpoint-every` (the steps of an epoch, checkpointed after
    each; default `checkpoint_every`)."""
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="default",
        help="tf.distribute strategy: one device, the local devices, or the "
        "hosts of TF_CONFIG (every host runs the same command)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=output_folder,
        default=Path("results/checkpoints") / name,
        help="each run checkpoints here after every epoch; run the same "
        "command again after an interruption and it resumes (default "
        "%(default)s; deleted when the script finishes)",
    )
    if keep:
        parser.add_argument(
            "--keep-checkpoint",
            action="store_true",
            help="keep the runs' checkpoints when the script finishes (default: "
            "deleted): the same command restores them without training"
            + (f", and with more {continued_by} continues them" if continued_by else "")
            + "; a run of other arguments in the same folder is refused",
        )
    add_tensorboard_argument(parser)
    if checkpoint_every is not None:
        parser.add_argument(
            "--checkpoint-every",
            type=positive_int,
            default=checkpoint_every,
            help="steps per epoch, checkpointed after each (default %(default)s)",
        )


def epoch_steps(args):
    """The steps of each epoch when `--steps` are trained in epochs of
    `--checkpoint-every` (the last one may be shorter)."""
    every = args.checkpoint_every
    return [min(every, args.steps - start) for start in range(0, args.steps, every)]


def resumed_total(total, every):
    """What a run's resume check holds of its length `total` (steps or
    passes), trained in epochs of `every`: `None` when they fill whole
    epochs, so that a longer run continues the checkpoint of a shorter one
    (whose epochs are the longer run's first, where the batches depend only
    on the epoch), else `total` (a shorter last epoch is no epoch of a longer
    run). Only for a run whose training `total` changes in nothing else (no
    schedule over it)."""
    return None if total % every == 0 else total


@contextlib.contextmanager
def exits_on_longer_checkpoint(option, checkpoint_dir, per_epoch=1):
    """Within it, `training.fit`'s `CheckpointAheadError` (a kept checkpoint of
    this run holds more epochs than asked) ends the script with an error on
    `option` that says the least value to pass: the checkpoint's epochs
    times `per_epoch` (e.g. `--checkpoint-every` for `--steps`)."""
    try:
        yield
    except CheckpointAheadError as error:
        least = error.checkpoint_epochs * per_epoch
        print(
            f"{Path(sys.argv[0]).name}: error: argument {option}: the checkpoint "
            f"in {checkpoint_dir} holds {least:,} of this run; pass {option} "
            f"{least} or more, or another --checkpoint-dir",
            file=sys.stderr,
        )
        raise SystemExit(2) from None


def stream_epochs(args, batches):
    """`(epochs, data_fn)` for `training.fit`, splitting a stream of `--steps`
    fresh batches into epochs of `--checkpoint-every`: `data_fn(epoch)` is
    `batches(steps, start)`, the epoch's own slice of the stream, the same
    after a resume."""
    lengths = epoch_steps(args)

    def data_fn(epoch):
        return batches(lengths[epoch], epoch * args.checkpoint_every)

    return len(lengths), data_fn


class Shuffled(keras.utils.PyDataset):
    """The batches of one epoch over the arrays `(x, y)`, in the order of a
    permutation drawn from `seed` (the same order whenever it is asked for),
    or in their own order for `seed=None`."""

    def __init__(self, x, y, batch_size, seed=None):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.order = _order(len(y), seed)

    def __len__(self):
        return -(-len(self.y) // self.batch_size)

    def __getitem__(self, i):
        index = self.order[i * self.batch_size : (i + 1) * self.batch_size]
        return self.x[index], self.y[index]


class OneBatch(keras.utils.PyDataset):
    """An epoch of one step: `batch`, e.g. `(x, y, sample_weight)`, each
    part an array or a dict of arrays."""

    def __init__(self, batch):
        super().__init__()
        self.batch = batch

    def __len__(self):
        return 1

    def __getitem__(self, i):
        if i != 0:
            raise IndexError(f"OneBatch has one batch; asked for batch {i}")
        return self.batch


def _order(n, seed):
    return np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)


def array_batches(x, y, batch_size, seed=None):
    """One epoch's batches of the arrays `(x, y)` for `training.fit`, in the
    order of a permutation drawn from `seed` (`None`: their own order): a
    `tf.data.Dataset` on the tensorflow backend, the same batches as a
    `Shuffled` on the others, which then need no TensorFlow."""
    if keras.backend.backend() != "tensorflow":
        return Shuffled(x, y, batch_size, seed)
    import tensorflow as tf

    order = _order(len(y), seed)
    return tf.data.Dataset.from_tensor_slices((x[order], y[order])).batch(batch_size)


def shuffled_epochs(x, y, batch_size, seed):
    """`data_fn(epoch)` for `training.fit`: the arrays `(x, y)` in the
    epoch's own order, drawn from `(seed, epoch)` alone, so that a resumed
    run reads the same batches (`array_batches`)."""
    return lambda epoch: array_batches(x, y, batch_size, seed=(seed, epoch))


def one_batch(batch):
    """`batch` as an epoch of one step for `training.fit`: a
    `tf.data.Dataset` on the tensorflow backend, a `OneBatch` on the others,
    which then need no TensorFlow."""
    if keras.backend.backend() != "tensorflow":
        return OneBatch(batch)
    import tensorflow as tf

    return tf.data.Dataset.from_tensors(batch)


def mean_over_steps(args, epoch_means):
    """The mean over all the steps trained, from each epoch's mean (as Keras
    reports the loss), or `None` before any epoch."""
    steps = epoch_steps(args)[: len(epoch_means)]
    return float(np.dot(epoch_means, steps) / sum(steps)) if steps else None


def quiet_tensorflow_logger():
    """Shows TensorFlow's own log from ERROR on (`predict` retraces for every
    model and sequence length, and warns each time), where TensorFlow is
    installed: jax and torch train without it (a GPU machine may lack it)."""
    try:
        import tensorflow as tf
    except ImportError:
        return
    tf.get_logger().setLevel("ERROR")


def create_strategy(args):
    """Creates the strategy of `--strategy`: call it first in `main`, before
    TensorFlow runs anything (a multi-worker strategy needs that).

    A strategy other than the default one needs the tensorflow backend (it is
    TensorFlow's distribution engine): on another, this exits with status 2
    and says so, as argparse does for an invalid argument.
    """
    backend = keras.backend.backend()
    if args.strategy != "default" and backend != "tensorflow":
        print(
            f"{Path(sys.argv[0]).name}: error: argument --strategy: "
            f"{args.strategy!r} is a tf.distribute strategy, which needs the "
            f"tensorflow backend; this run is on {backend!r} (add --backend "
            "tensorflow, or train with --strategy default)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if args.strategy == "default" and backend != "tensorflow":
        return None  # `training.fit`'s own: no TensorFlow imported
    from keras_nalu.distribute import make_strategy

    return make_strategy(args.strategy)


# `keras_nalu.distribute`'s answers for the strategy of `create_strategy`,
# without importing TensorFlow where there is none (`None`: jax and torch).


def _distribute():
    from keras_nalu import distribute

    return distribute


def is_chief(strategy=None):
    """Whether this process writes the run's files (`distribute.is_chief`)."""
    return strategy is None or _distribute().is_chief(strategy)


def worker_index(strategy=None):
    """`(index, count)` of this worker (`distribute.worker_index`)."""
    return (0, 1) if strategy is None else _distribute().worker_index(strategy)


def gather_json(value, strategy=None):
    """Every worker's `value`, in worker order (`distribute.gather_json`)."""
    if strategy is None:
        return [json.loads(json.dumps(value))]
    return _distribute().gather_json(value, strategy)


class Checkpoints:
    """The per-run checkpoint folders of one script run, under
    `args.checkpoint_dir`, kept at the end with `args.keep_checkpoint`."""

    def __init__(self, args, strategy):
        self.root, self.strategy, self.runs = Path(args.checkpoint_dir), strategy, []
        self.keep = args.keep_checkpoint

    def __call__(self, *parts):
        """The folder of the run named by `parts`."""
        folder = self.root.joinpath(*(str(part) for part in parts))
        self.runs.append(folder)
        return folder

    def remove(self):
        """Deletes the runs' checkpoints (only them): the script finished.
        With `--keep-checkpoint`, says where they stay instead."""
        if not is_chief(self.strategy):
            return
        if self.keep:
            for folder in self.runs:
                keep_checkpoint(folder)
            print(f"checkpoints kept in {self.root} (--keep-checkpoint)")
            return
        for folder in self.runs:
            remove_checkpoint(folder)
        inside = {
            folder
            for run in self.runs
            for folder in run.parents
            if folder == self.root or self.root in folder.parents
        }
        for folder in sorted(inside, key=lambda f: len(f.parts), reverse=True):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def report(result, what="the run"):
    """Prints a resume or a divergence of a `training.fit` result, if any."""
    if result.resumed_at:
        print(f"  {what}: resumed from its checkpoint after epoch {result.resumed_at}")
    if result.divergence:
        print(f"  {what} {result.divergence}; evaluated as it stopped")
