"""The Keras backend of each experiment, chosen before Keras is imported.

Keras fixes its backend when it is first imported (`KERAS_BACKEND`), so an
example chooses it first: `run(experiment)` reads `--backend`, checks it, sets
`KERAS_BACKEND`, and only then imports the experiment and calls its `main`.
The backend is `--backend` when given, else `$KERAS_BACKEND` when set, else
the experiment's entry in `DEFAULTS`: the backend measured fastest for it.

This module imports neither Keras nor any backend: `examples/NAME.py` is

    from nalu_research.backends import run

    if __name__ == "__main__":
        raise SystemExit(run("NAME"))
"""

import importlib
import importlib.util
import os
import sys
from pathlib import Path

BACKENDS = ("tensorflow", "jax", "torch")

# Each experiment's backend: the fastest of those it runs on, in milliseconds
# per training step of `model.fit`, measured on 2026-11-23 (2 CPU cores) by
#     python examples/step_benchmark.py     # 3 interleaved rounds, 200 steps
# for the demo's NALU model, the number-word model (Embedding -> LSTM -> NALU,
# full batch) and the program-evaluation model (the LSTM-configured NALU):
#     demo                 tensorflow  jax  torch  (see the table in the report)
# The other `fit` experiments take the figure of the closest of the three:
# single small layers trained in small batches (identity, mystery, mnist
# parity: the demo's model), recurrent models on fresh batches (recurrent
# arithmetic, mnist counting: the program-evaluation model).
DEFAULTS = {
    "arithmetic_benchmark": "tensorflow",  # set by the engine's measurement
    "demo": "tensorflow",
    "identity_extrapolation": "tensorflow",
    "mnist_counting": "tensorflow",
    "mnist_parity": "tensorflow",
    "mystery_arithmetic": "tensorflow",
    "number_translation": "tensorflow",
    "program_evaluation": "tensorflow",
    "recurrent_arithmetic": "tensorflow",
    "serving_benchmark": "tensorflow",  # it measures TensorFlow SavedModels
    "static_arithmetic": "tensorflow",  # set by the engine's measurement
    "step_benchmark": "tensorflow",  # trains nothing itself: one process per backend
}

# Experiments that run on TensorFlow only, and why.
TENSORFLOW_ONLY = {
    "serving_benchmark": "it measures the SavedModels Keras's TensorFlow "
    "exporter writes, served by TensorFlow",
}

# The command that installs each backend's package.
INSTALL = {
    "tensorflow": "pip install keras-neural-arithmetic",
    "jax": 'pip install "keras-neural-arithmetic[jax]"',
    "torch": 'pip install "keras-neural-arithmetic[torch]"',
}


def run(experiment, argv=None):
    """Runs `nalu_research.experiments.<experiment>` on its backend.

    Chooses the backend (`choose_backend`), sets `KERAS_BACKEND`, imports the
    experiment and returns `main(argv)`, whose parser reads `--backend` too.

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
    return module.main(argv)


def choose_backend(experiment, argv):
    """The backend `experiment` runs on: `--backend` in `argv`, else
    `$KERAS_BACKEND`, else `DEFAULTS[experiment]`.

    Exits with status 2 (as argparse does) and a message when that backend is
    not one of `BACKENDS`, does not run the experiment, is not installed, or
    is not the one of a Keras imported already.
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
