"""`--help` answers before Keras is imported: every experiment's module, its
parser and the parsing import no Keras nor any backend; the skeleton imports
them after parsing (TensorFlow quietly), and the command line's checks are
`keras_nalu.validation`'s."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keras_nalu import validation
from keras_nalu.training import STRATEGIES
from nalu_research import arguments, backends

pytestmark = [pytest.mark.research, pytest.mark.processes]

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("keras", "tensorflow", "jax", "torch")
# As a user runs an example: no KERAS_BACKEND (each experiment's default).
ENV = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}

# Prints, as JSON, what `run(name, ["--help"])` of every experiment printed
# and its exit status, the options of its parser, the chain of modules that
# first imported each of HEAVY, and the new modules of each experiment that
# hold one of them at their top (those that imported it once it was there).
HELP_OF_EVERY_EXPERIMENT = """
import contextlib, io, json, os, sys, traceback, types
from nalu_research import backends
from nalu_research.experiment import Experiment

HEAVY = {heavy!r}
OURS = ("nalu_research", "keras_nalu")
chains = {{}}

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in HEAVY and name not in chains:
            frames = [frame for frame, _ in traceback.walk_stack(None)]
            if all(f.f_code.co_name != "_find_and_load" for f in frames):
                return None  # a look-up (`importlib.util.find_spec`)
            names = [frame.f_globals.get("__name__", "") for frame in frames]
            ours = [n for n in reversed(names) if n.startswith(OURS)]
            chain = [n for i, n in enumerate(ours) if i == 0 or n != ours[i - 1]]
            chains[name] = [*chain, name]
        return None

sys.meta_path.insert(0, Spy())

def heavy_at_top(module):
    for value in vars(module).values():
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        else:
            origin = getattr(value, "__module__", None)
        if isinstance(origin, str) and origin.split(".")[0] in (*HEAVY, "keras_nalu"):
            return True
    return False

found = {{}}
for name in sorted(backends.DEFAULTS):
    os.environ.pop("KERAS_BACKEND", None)
    if "keras" in sys.modules:  # an earlier one imported it: its backend
        os.environ["KERAS_BACKEND"] = sys.modules["keras"].backend.backend()
    before, seen = set(sys.modules), set(chains)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            backends.run(name, ["--help"])
            status = None
        except SystemExit as exit_:
            status = exit_.code
    module = sys.modules.get(f"nalu_research.experiments.{{name}}")
    options = []
    for value in vars(module or types).values():
        if (isinstance(value, type) and issubclass(value, Experiment)
                and value.__module__ == module.__name__):
            actions = [a for a in value().parser()._actions if a.option_strings]
            options = [max(a.option_strings, key=len) for a in actions]
    new = sorted(m for m in set(sys.modules) - before if m.startswith("nalu_research"))
    found[name] = {{
        "status": status,
        "help": out.getvalue(),
        "options": options,
        "chains": {{h: chains[h] for h in set(chains) - seen}},
        "heavy_modules": [m for m in new if heavy_at_top(sys.modules[m])],
    }}
found[""] = [m for m in HEAVY if m in sys.modules]
print(json.dumps(found))
"""


def test_every_help_answers_without_importing_keras():
    result = subprocess.run(
        [sys.executable, "-c", HELP_OF_EVERY_EXPERIMENT.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    imported = found.pop("")
    assert set(found) == set(backends.DEFAULTS)
    culprits = []
    for name, seen in found.items():
        chains = {}  # the modules that imported them -> them
        for *chain, heavy in seen["chains"].values():
            chains.setdefault(" -> ".join(chain), []).append(heavy)
        lines = [f"{chain} -> {', '.join(heavy)}" for chain, heavy in chains.items()]
        if seen["heavy_modules"]:
            lines.append(f"at the top of {', '.join(seen['heavy_modules'])}")
        if lines:
            culprits.append(f"{name}: {'; '.join(lines)}")
    assert not imported, "--help imported {}:\n{}".format(
        ", ".join(imported), "\n".join(culprits)
    )
    for name, seen in found.items():
        assert seen["status"] == 0, f"{name} --help exited with {seen['status']}"
        text = " ".join(seen["help"].split())
        assert text.startswith("usage: ") and seen["options"], f"{name}: no help"
        missing = [option for option in seen["options"] if option not in text]
        assert not missing, f"{name}'s help leaves out {missing}"


# The arguments' checks, at the command line and in `keras_nalu.validation`.
CHECKS = ("positive_int", "non_negative_int", "positive_float", "non_negative_float")
TEXTS = ("3", "1", "0", "-1", "0.5", "2.0", "1e-39", "1e-30", "nan", "inf", "x", "")


@pytest.mark.parametrize("check", CHECKS)
def test_the_command_lines_checks_are_the_librarys(check):
    convert = int if "int" in check else float
    for text in TEXTS:
        try:
            value = convert(text)
        except ValueError:
            value = text
        try:
            expected = getattr(validation, check)("value", value)
        except validation.InvalidValueError as error:
            with pytest.raises(argparse.ArgumentTypeError) as refused:
                getattr(arguments, check)(text)
            assert str(refused.value) == f"expected {error.expected}, got {text!r}"
        else:
            parsed = getattr(arguments, check)(text)
            assert parsed == expected and type(parsed) is type(expected), text


def test_the_strategies_are_the_librarys():
    assert arguments.STRATEGIES == STRATEGIES


# An experiment whose first import of Keras is its training's: the skeleton
# imports TensorFlow (quietly) and Keras after parsing.
AFTER_PARSING = """
import sys
from nalu_research.experiment import Experiment

class Probe(Experiment):
    name = "demo"

    def train(self, args, run, session):
        import keras

        print(keras.backend.backend(), "tensorflow" in sys.modules)
        return {}

Probe().parser().parse_args([])  # argparse alone: --help, a rejected value
assert "tensorflow" not in sys.modules and "keras" not in sys.modules
raise SystemExit(Probe().main([]))
"""


def test_the_skeleton_imports_tensorflow_quietly_after_parsing():
    result = subprocess.run(
        [sys.executable, "-c", AFTER_PARSING],
        capture_output=True,
        text=True,
        # The level that shows everything: TensorFlow's start-up lines come
        # whatever it says, and the quiet import leaves them out.
        env={**ENV, "TF_CPP_MIN_LOG_LEVEL": "0"},
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["tensorflow", "True"]
    assert not backends._START_UP.search(result.stderr), result.stderr
