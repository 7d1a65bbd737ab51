"""What every training run of an experiment shares: the strategy
(`create_strategy`, `is_chief`, ...), the runs' checkpoint folders
(`Checkpoints`), epochs of a stream of steps (`stream_epochs`) and the
lines that report a resume or a divergence (`report`). The skeleton
(`nalu_research.experiment`) uses them; an experiment's `train` reaches
them through its `Session`."""

import contextlib
import json
import sys
from pathlib import Path

import numpy as np


def steps_per_execution(steps):
    """`steps` for `model.compile`, or 1 on the torch backend, whose trainer
    runs one step per call."""
    import keras

    return 1 if keras.backend.backend() == "torch" else steps


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
    from keras_nalu.training import CheckpointAheadError

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
    import keras

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
        from keras_nalu.training import keep_checkpoint, remove_checkpoint

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
