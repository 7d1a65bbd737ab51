"""The Keras backend of each experiment, chosen before Keras is imported.

Keras fixes its backend when it is first imported (`KERAS_BACKEND`), so an
example chooses it first: `run(experiment)` reads `--backend`, checks it, sets
`KERAS_BACKEND`, and only then imports the experiment and calls its `main`,
which imports Keras after parsing (TensorFlow quietly first,
`import_tensorflow_quietly`), so that `--help` imports no Keras at all.
The backend is `--backend` when given, else `$KERAS_BACKEND` when set, else
the experiment's entry in `DEFAULTS`: the backend measured fastest for it
(tensorflow, with a note, when that one is not installed).

This module imports neither Keras nor any backend: `examples/NAME.py` is

    from nalu_research.backends import run

    if __name__ == "__main__":
        raise SystemExit(run("NAME"))
"""

import importlib
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

BACKENDS = ("tensorflow", "jax", "torch")

# Each experiment's backend: the fastest of those it runs on, measured on
# 2026-11-23 on 2 CPU cores (keras 3.15.1, tensorflow 2.21.0, jax 0.10.2,
# torch 2.13.0+cpu). Milliseconds per `model.fit` step (median of 5 rounds,
# compilation excluded) and seconds of the first, compiling fit call, by
#     python examples/step_benchmark.py
#                        tensorflow       jax            torch
#     demo NALU          0.263 ms 0.61 s  0.226 ms 0.44 s  1.55 ms 0.16 s
#     number words       4.73 ms  2.83 s  2.2 ms   1.51 s  19.7 ms 0.74 s
#     program evaluation 4.77 ms  1.88 s  0.688 ms 1.17 s  10.8 ms 0.72 s
# The seed-batched engine (units_benchmark), ms per run-iteration of
# NALU-NALU, by `examples/step_benchmark.py --steps 200`, 10:51 that day:
#     25 runs            tf 0.0309, jax 0.0360, torch 0.108
#     150 runs           tf 0.0314, jax 0.0345, torch 0.169
# Whole runs decide where they disagree with the step times: an experiment
# that builds many small models and evaluates them eagerly between epochs pays
# compilations and eager calls that cost more on jax than the steps save.
# Seconds of training (examples/NAME.py --backend B, the options given):
#     demo (its default run)                       tf 30, jax 42, torch 307
#     number_words --models nalu --sizes 32 --learning-rates 0.01
#                                                  tf 18, jax 35
#     program_evaluation --models nalu lstm --seeds 1 --steps 2000
#                                                  tf 24, jax 15
#     recurrent_arithmetic --operations add mul --models lstm gru rnn_tanh
#       nalu nac --seeds 1 --steps 2000            tf 39, jax 12 (twice each)
#     identity --models NAC ReLU --seeds 1 --steps 2000
#                                                  tf 3, jax 6, torch 7
#     mystery_arithmetic --epochs 60               tf 9-12, jax 11-12, torch 18
#     mnist_counting --dataset digits --models lstm nac --steps 1000
#                                                  tf 19-22, jax 21-25, torch 24
#     mnist_counting --task sum --dataset mnist --models nau --no-dropout
#       --max-shift 1 --ema 0.999 --encoder-output log_softmax --steps 600
#       --checkpoint-every 300 (2026-11-27): tf 49 s to the first epoch's
#       line (300 steps and their test); jax had no such line after 5 min 15 s
#       of CPU time (tf's: at most 98 s on the 2 cores), compilation included
#     grid_world --agents a2c_nac --updates 150 --learning-rate 1e-9 (a
#       policy that stays random: same episode lengths), updates 50 to 150
#                                                  tf 18-19, jax 22-23 (twice)
#     mnist_parity --dataset digits --variants NAC Wx+b --train-size 8000
#       --epochs 2                                 tf 5-6, jax 12-13, torch 8-9
DEFAULTS = {
    "anchor_split": "tensorflow",  # the seeds it names are tensorflow's draws
    "units_benchmark": "tensorflow",  # the engine's rows, below
    "demo": "tensorflow",
    "division_benchmark": "tensorflow",  # the seed-batched engine, as above
    "feynman": "tensorflow",  # a NumPy search; Keras reads units, fits ReLU nets
    "first_contact": "tensorflow",  # the default backend, as a user meets it
    "gpu_check": "jax",  # its workers choose their own, jax and torch
    "grid_world": "tensorflow",  # the rows above
    "identity": "tensorflow",
    "mistry_benchmark": "jax",  # the seed-batched engine, two inputs (docs/units/npu)
    "mistry_oracle": "torch",  # drives their PyTorch code, which needs torch anyway
    "mixed_formulas": "tensorflow",  # model.fit of small models, as demo
    "mnist_counting": "tensorflow",
    "mnist_parity": "tensorflow",
    "mnist_supervised": "tensorflow",  # mnist_counting's encoder, as there
    "mystery_arithmetic": "tensorflow",
    "number_words": "tensorflow",
    "program_evaluation": "jax",
    "recurrent_arithmetic": "jax",
    "recurrent_cells": "jax",  # RNN loops, as recurrent_arithmetic
    "serving_benchmark": "tensorflow",  # it measures TensorFlow SavedModels
    "static_arithmetic": "tensorflow",  # model.fit of small models, as identity
    "step_benchmark": "tensorflow",  # trains nothing: one process per backend
}

# Experiments that run on TensorFlow only, and why.
TENSORFLOW_ONLY = {
    "serving_benchmark": "it measures the SavedModels Keras's TensorFlow "
    "exporter writes, served by TensorFlow",
}

# The command that installs each backend's package, in a checkout of the
# package (it is not on PyPI): its extra, with the version range it tests.
INSTALL = {
    "tensorflow": 'pip install "." (in a checkout of keras-neural-arithmetic)',
    "jax": 'pip install ".[jax]" (in a checkout of keras-neural-arithmetic)',
    "torch": 'pip install ".[torch]" (in a checkout of keras-neural-arithmetic)',
}


def run(experiment, argv=None):
    """Runs `nalu_research.experiments.<experiment>` on its backend.

    Chooses the backend (`choose_backend`), sets `KERAS_BACKEND`, imports the
    experiment (which imports no Keras) and returns `main(argv)`, whose
    parser reads `--backend` too.

    Args:
        experiment: A key of `DEFAULTS`, e.g. `"demo"`.
        argv: The command-line arguments, default `sys.argv[1:]`.
    """
    if experiment not in DEFAULTS:
        raise ValueError(
            "Received an invalid value for `experiment`, expected one of "
            f"{sorted(DEFAULTS)}. Received: experiment={experiment!r}"
        )
    argv = sys.argv[1:] if argv is None else list(argv)
    os.environ["KERAS_BACKEND"] = choose_backend(experiment, argv)
    module = importlib.import_module(f"nalu_research.experiments.{experiment}")
    try:
        return module.main(argv)
    except (RuntimeError, ValueError) as error:
        # Imported already where `main` raised them (they import Keras).
        checkpoints = sys.modules.get("keras_nalu.checkpoints")
        validation = sys.modules.get("keras_nalu.validation")
        if checkpoints and isinstance(error, checkpoints.CheckpointInUseError):
            # Another run holds the folder: said in a line, as argparse says
            # what is wrong, with nothing of either run touched.
            print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
            return 1
        if not (
            validation
            and isinstance(error, validation.InvalidValueError)
            and error.name == "checkpoint_dir"
        ):
            raise
        # E.g. a checkpoint there that an earlier run kept (--keep-checkpoint).
        _fail(
            f"argument --checkpoint-dir: expected {error.expected}, got {error.value!r}"
        )


# What TensorFlow writes to stderr at every start, whatever
# TF_CPP_MIN_LOG_LEVEL says (its C++ libraries log before absl reads it): the
# absl notice, oneDNN's note, the missing CUDA driver of a CPU machine and
# the CPU instructions the binary could use.
_START_UP = re.compile(
    r"All log messages before absl::InitializeLog|oneDNN custom operations|"
    r"Could not find cuda drivers|failed call to cuInit|"
    r"This TensorFlow binary is optimized|To enable the following instructions"
)


def import_tensorflow_quietly():
    """Imports TensorFlow (and lists its GPUs, which logs a CPU machine's
    missing driver) with its start-up lines (`_START_UP`) left out of
    stderr; any other line it writes there is shown, after.

    The lines come from C++ (file descriptor 2), so they are caught there,
    only for this window: an error raised here still prints its traceback
    whole. Without TensorFlow installed, nothing happens.
    """
    if importlib.util.find_spec("tensorflow") is None:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            import tensorflow as tf

            tf.config.list_physical_devices("GPU")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            for line in caught.read().decode(errors="replace").splitlines(True):
                if not _START_UP.search(line):
                    sys.stderr.write(line)


def choose_backend(experiment, argv):
    """The backend `experiment` runs on: `--backend` in `argv`, else
    `$KERAS_BACKEND`, else `DEFAULTS[experiment]`.

    Exits with status 2 (as argparse does) and a message when that backend is
    not one of `BACKENDS`, does not run the experiment, is not installed, or
    is not the one of a Keras imported already. A default backend that is not
    installed gives way to tensorflow (a dependency of the package), with a
    note on stderr saying what to install.
    """
    value = _flag_value(argv)
    if value is not None:
        what = "argument --backend"
    elif os.environ.get("KERAS_BACKEND"):
        value, what = os.environ["KERAS_BACKEND"], "KERAS_BACKEND"
    else:
        value, what = DEFAULTS[experiment], "the default backend"
    if value not in BACKENDS:
        choices = ", ".join(repr(name) for name in BACKENDS)
        _fail(f"{what}: invalid choice: {value!r} (choose from {choices})")
    if experiment in TENSORFLOW_ONLY and value != "tensorflow":
        _fail(
            f"{what}: {experiment} runs on 'tensorflow' only "
            f"({TENSORFLOW_ONLY[experiment]}); received {value!r}"
        )
    if what == "the default backend" and importlib.util.find_spec(value) is None:
        print(
            f"{experiment} runs fastest on {value}, not installed here "
            f"({INSTALL[value]}): running it on tensorflow.",
            file=sys.stderr,
        )
        value = "tensorflow"
    if importlib.util.find_spec(value) is None:
        _fail(
            f"{what}: the {value!r} backend needs the {value} package, which "
            f"is not installed here: {INSTALL[value]}"
        )
    keras = sys.modules.get("keras")
    if keras is not None and keras.backend.backend() != value:
        _fail(
            f"{what}: Keras was imported already, with the "
            f"{keras.backend.backend()!r} backend, so it cannot run on "
            f"{value!r}; start a new process"
        )
    return value


def _flag_value(argv):
    """The value of the last `--backend X` or `--backend=X` in `argv` (before
    a `--`), as argparse reads it, or None."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg.startswith("--backend="):
            value = arg.partition("=")[2]
        elif arg == "--backend":
            if i + 1 == len(argv) or argv[i + 1].startswith("-"):
                _fail("argument --backend: expected one argument")
            value = argv[i + 1]
    return value


def _fail(message):
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)
