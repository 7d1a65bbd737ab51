"""The experiments' shared command-line arguments, each declared once.

An experiment names the shared arguments it takes, with its defaults, in its
`arguments` (`nalu_research.experiment.Experiment`); the skeleton adds them
from `SHARED`, so that `--learning-rate` is a finite positive number and
`--seed` an integer >= 0 in every experiment, with one help text:

    class Mystery(Experiment):
        arguments = {"seed": 0, "epochs": 250, "learning_rate": 1e-3}

An entry of `arguments` is a default, or `Shared(default, help=...)` where
the experiment says more than the shared help (e.g. a default per model).
Its own arguments an experiment adds in `add_arguments(parser)`, with the
types below (`positive_int`, ...): the checks of `keras_nalu.validation`,
whose words an invalid value gets at parse time (`argument_type`).

Arguments that change no run's figures (where files go, the strategy,
TensorBoard) are `RUN_OPTIONS`: left out of the configuration a checkpoint
resumes under.

Building the parser and parsing import no Keras (nor `keras_nalu`, whose
`__init__` imports it): `--help` answers at once, and the backend is
imported after parsing (`nalu_research.experiment.Experiment.main`).
"""

import argparse
import dataclasses
import math
import os
import sys
from pathlib import Path
from typing import Any

from nalu_research.backends import BACKENDS, DEFAULTS, TENSORFLOW_ONLY
from nalu_research.monitoring import (
    add_tensorboard_argument,
    output_folder,
    output_folder_name,
)


def argument_type(check, convert):
    """An argparse `type` from a check in the manner of `keras_nalu.validation`
    (`check(name, value)`, raising its `InvalidValueError`): the text
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
        except ValueError as error:  # an `InvalidValueError` says `expected`
            if not hasattr(error, "expected"):
                raise
            raise argparse.ArgumentTypeError(
                f"expected {error.expected}, got {text!r}"
            ) from None

    parse.__name__ = check.__name__  # argparse's "invalid positive_int value"
    return parse


def _number(name, convert, least, expected):
    """The check `name` of `keras_nalu.validation` as an argparse type (a
    finite number at least `least`; `expected` its words), written again
    here: `keras_nalu` imports Keras, which parsing does not. The test
    tests/test_help.py holds the two to the same answers."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= least):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = name  # argparse's "invalid positive_int value"
    return parse


positive_int = _number("positive_int", int, 1, "a positive integer")
non_negative_int = _number("non_negative_int", int, 0, "an integer >= 0")
positive_float = _number(  # float32's smallest normal, as `validation`'s
    "positive_float",
    float,
    1.1754944e-38,
    "a finite number greater than 0 (at least 1.2e-38)",
)
non_negative_float = _number("non_negative_float", float, 0, "a finite number >= 0")


def momentum(text):
    """argparse type: a number in (0, 1), e.g. an average's momentum."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


class _Schedule(argparse.Action):
    """`--regularization STRENGTH START END`, stored as `[strength, start,
    end]` (a float, then integer steps)."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            strength, start, end = (float(v) for v in values)
        except ValueError:
            strength = math.nan
        if not (
            math.isfinite(strength)
            and strength >= 0
            and 0 <= start <= end
            and start == int(start)
            and end == int(end)
        ):
            parser.error(
                "--regularization expects STRENGTH >= 0 and integer steps "
                "0 <= START <= END"
            )
        setattr(namespace, self.dest, [strength, int(start), int(end)])


class _LearningRateDrop(argparse.Action):
    """`--learning-rate-drop STEP FACTOR`, stored as `[step, factor]`."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            step, factor = (float(v) for v in values)
        except ValueError:
            step = math.nan
        if not (
            math.isfinite(step)
            and step >= 0
            and step == int(step)
            and math.isfinite(factor)
            and factor > 0
        ):
            parser.error(
                "--learning-rate-drop expects an integer STEP >= 0 and FACTOR > 0, "
                f"got {' '.join(values)}"
            )
        setattr(namespace, self.dest, [int(step), factor])


@dataclasses.dataclass(frozen=True)
class Shared:
    """An experiment's default of a shared argument, what its help adds
    (`help`, replacing the shared help when given) and, for a list such as
    `--models`, the values it may hold (`choices`)."""

    default: Any = None
    help: str | None = None
    choices: Any = None

    @classmethod
    def all_of(cls, names, help=None):
        """A list argument (`--models`) of some of `names`, all by default."""
        return cls(list(names), help, list(names))


# Each shared argument: its flag's keyword arguments but the default, and a
# help in which `%(default)s` is the experiment's default.
SHARED: dict[str, dict[str, Any]] = {
    "models": {"nargs": "+", "help": "the models trained (default %(default)s)"},
    "seed": {"type": non_negative_int, "help": "the seed (default %(default)s)"},
    "seeds": {
        "type": positive_int,
        "help": "how many seeds, each a run of its own (default %(default)s)",
    },
    "first_seed": {
        "type": non_negative_int,
        "help": "the first seed of --seeds (default %(default)s)",
    },
    "steps": {"type": positive_int, "help": "training steps (default %(default)s)"},
    "epochs": {"type": positive_int, "help": "training epochs (default %(default)s)"},
    "iterations": {
        "type": positive_int,
        "help": "training iterations (default %(default)s)",
    },
    "examples": {
        "type": positive_int,
        "help": "training examples (default %(default)s)",
    },
    "batch_size": {
        "type": positive_int,
        "help": "examples per step (default %(default)s)",
    },
    "learning_rate": {
        "type": positive_float,
        "help": "Adam's learning rate (default %(default)s)",
    },
    "learning_rate_drop": {
        "nargs": 2,
        "action": _LearningRateDrop,
        "metavar": ("STEP", "FACTOR"),
        "help": "multiply the learning rate by FACTOR once the optimizer's step "
        "count exceeds STEP (a Keras PiecewiseConstantDecay; default: constant)",
    },
    "ema": {
        "type": momentum,
        "metavar": "MOMENTUM",
        "help": "end with the moving average of the weights over training, each "
        "step weighing 1 - MOMENTUM (Keras's use_ema; e.g. 0.999; default: "
        "the last weights); the test metrics after each epoch read the "
        "averages too",
    },
    "clipnorm": {
        "type": positive_float,
        "help": "the largest global norm of each step's gradient (Adam's "
        "global_clipnorm; default %(default)s)",
    },
    "regularization": {
        "nargs": 3,
        "action": _Schedule,
        "metavar": ("STRENGTH", "START", "END"),
        "help": "the units' penalty: STRENGTH, ramped in from step START to END "
        "(default %(default)s)",
    },
    "eval_every": {
        "type": positive_int,
        "help": "steps between evaluations (default %(default)s)",
    },
    "eval_size": {
        "type": positive_int,
        "help": "examples in each test set (default %(default)s)",
    },
    # Mistry et al.'s nine (`tasks.static_arithmetic.MISTRY_RANGES`): an
    # experiment gives their indices as `choices`.
    "ranges": {
        "type": int,
        "nargs": "+",
        "help": "indices of the ranges run (default %(default)s: all)",
    },
    "export_dir": {
        "type": output_folder_name,
        "help": "where the SavedModels go (default %(default)s)",
    },
}


def add_shared(parser, arguments):
    """Adds the shared arguments `arguments` (`{name: default or Shared}`,
    names of `SHARED`) to `parser`, in that order."""
    for name, value in arguments.items():
        if name not in SHARED:
            raise ValueError(
                f"Received an invalid value for `arguments`, expected names of "
                f"{tuple(SHARED)}. Received: {name!r}"
            )
        shared = value if isinstance(value, Shared) else Shared(value)
        options = dict(SHARED[name])
        if shared.help is not None:
            options["help"] = shared.help
        if shared.choices is not None:
            options["choices"] = shared.choices
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, default=shared.default, **options)


def add_selection(parser, flag, names, help, empty=False):
    """Adds `flag NAME [NAME ...]`, some of `names`, all of them by default;
    `empty` lets the flag stand with no name (`nargs="*"`)."""
    names = list(names)
    parser.add_argument(
        flag,
        nargs="*" if empty else "+",
        choices=names,
        default=names,
        help=f"{help} (default: all, %(default)s)",
    )


def learning_rate(rate, drop=None):
    """Adam's learning rate: `rate`, or with `drop = [step, factor]` (from
    `--learning-rate-drop`) a `PiecewiseConstantDecay` to `rate * factor`
    after `step` steps."""
    if drop is None:
        return rate
    import keras

    step, factor = drop
    return keras.optimizers.schedules.PiecewiseConstantDecay(
        [int(step)], [rate, rate * factor]
    )


def adam_options(ema):
    """`keras.optimizers.Adam` keyword arguments for `--ema` (None: none)."""
    return {} if ema is None else {"use_ema": True, "ema_momentum": ema}


def add_backend_argument(parser, experiment):
    """Adds `--backend` to the parser of `experiment` (a key of
    `nalu_research.backends.DEFAULTS`), for `--help` and the record of the
    run: `nalu_research.backends.run` has chosen the backend already, before
    Keras was imported. Its value is the backend Keras runs on (`main`
    imports Keras on it after parsing); a parser given another one than
    that of a Keras imported already exits with an error."""
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
        default=running_backend(),
        action=_Backend,
        help=f"Keras backend, set before Keras is imported ({why})",
    )


def running_backend():
    """The backend Keras runs on: an imported Keras's, else the one it will
    be imported with, `$KERAS_BACKEND` (`nalu_research.backends.run` sets
    it), else tensorflow."""
    keras = sys.modules.get("keras")
    if keras is not None:
        return keras.backend.backend()
    return os.environ.get("KERAS_BACKEND") or "tensorflow"


class _Backend(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        running = running_backend()
        if "keras" in sys.modules and values != running:
            parser.error(
                f"argument --backend: Keras was imported with the {running!r} "
                f"backend before --backend {values} was read; run the "
                "experiment through its examples/ script, which sets the "
                "backend first, or set KERAS_BACKEND"
            )
        setattr(namespace, self.dest, values)


# The options that change no run's results (`add_training_arguments`, and
# `--keep-diverged`): left
# out of the `config` a checkpoint resumes under.
RUN_OPTIONS = (
    "strategy",
    "checkpoint_dir",
    "keep_checkpoint",
    "tensorboard",
    "keep_diverged",
)

# `keras_nalu.training.STRATEGIES`, for `--strategy` without importing Keras.
STRATEGIES = ("default", "mirrored", "multi-worker")


def add_training_arguments(
    parser, name, checkpoint_every=None, continued_by=None, keep=True
):
    """Adds `--strategy`, `--checkpoint-dir` (default results/checkpoints/NAME),
    `--keep-checkpoint` (`keep`; `continued_by`: the option that, given
    more, continues a kept run, for its help), `--tensorboard DIR`
    (`nalu_research.monitoring.tensorboard`) and, for an experiment that
    trains in steps, `--checkpoint-every` (the steps of an epoch,
    checkpointed after each; default `checkpoint_every`)."""
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
        help="each run checkpoints here; run the same command again after an "
        "interruption and it resumes (default %(default)s; deleted when the "
        "script finishes)",
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


def check_eval_every(args, parser):
    """Refuses `--eval-every` above `--steps` (no evaluation would come), for
    an experiment's `check_arguments`."""
    if args.eval_every > args.steps:
        parser.error(
            f"--eval-every must be at most --steps ({args.steps}), "
            f"got {args.eval_every}"
        )
