"""Every model an experiment builds saves to `.keras` and reloads, with the
same outputs, in a fresh process that imports only `nalu_research` (whose
import registers the experiments' own layers)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from nalu_research.experiments import (
    demo,
    mystery_arithmetic,
    program_evaluation,
    recurrent_arithmetic,
    static_arithmetic,
)
from nalu_research.models import mnist as mnist_models
from nalu_research.models import number_words
from nalu_research.tasks import identity, mnist
from nalu_research.tasks.program_evaluation import TOKENS


def _positive(*shape):
    return np.random.default_rng(0).uniform(1.0, 3.0, shape).astype("float32")


def experiment_models():
    """`{name: (model, inputs)}` for every architecture of every experiment."""
    models = {}
    for operation, layers in demo.MODELS.items():
        for name, build in layers.items():
            model = keras.Sequential([keras.Input((2,)), *build()])
            models[f"demo {operation} {name}"] = (model, _positive(3, 2))
    for name, build in static_arithmetic.build_models(10).items():
        models[f"static {name}"] = (build(), _positive(3, 10))
    for name in mystery_arithmetic.MODELS:
        model = mystery_arithmetic.build_model(name, 4, steps=100)
        models[f"mystery {name}"] = (model, _positive(3, 4))
    for name in identity.MODELS:
        models[f"identity {name}"] = (identity.identity_model(name), _positive(3, 1))
    for name in recurrent_arithmetic.MODELS:
        model = recurrent_arithmetic.build(name, 3)
        models[f"recurrent {name}"] = (model, _positive(2, 4, 3))
    for kind in mnist_models.RECURRENT_MODELS:
        for task in mnist.SEQUENCE_TASKS:
            model, _, _ = mnist_models.sequence_model(kind, task, (8, 8, 1), features=8)
            images = _positive(2, 3, 8, 8, 1) / 3.0
            models[f"mnist {task} {kind}"] = (model, images)
    model, _, _ = mnist_models.sequence_model(
        "nau", "sum", (8, 8, 1), features=8, encoder_output="log_softmax"
    )
    models["mnist sum nau log-softmax"] = (model, images)
    for variant in mnist_models.ABLATION_VARIANTS:
        model = mnist_models.parity_model(
            variant, (16, 16, 1), features=8, filters=(4, 4)
        )
        models[f"parity {variant}"] = (model, _positive(2, 16, 16, 1) / 3.0)
    ids = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], "int32")
    for kind in number_words.MODELS:
        ((steps_model, model),) = number_words.build_models(kind, 8, [0])
        models[f"number words {kind} (per token)"] = (steps_model, ids)
        models[f"number words {kind}"] = (model, ids)
    for kind in ("nac", "nalu"):
        for readout in ("recurrent", "two-layer", "pairs"):
            ((_, model),) = number_words.build_models(kind, 8, [0], readout=readout)
            models[f"number words {kind} {readout} readout"] = (model, ids)
    ((_, model),) = number_words.build_models("nalu", 8, [0], readout="configured")
    models["number words nalu configured readout"] = (model, ids)
    program = np.zeros((2, 5, 1 + len(TOKENS)), "float32")
    program[:, :, 0] = [[1, 2, 3, 4, 5], [10, 20, 30, 40, 50]]
    program[:, np.arange(5), 1] = 1.0
    for kind in program_evaluation.MODELS:
        for tied in (True, False) if kind == "nalu" else (True,):
            model = program_evaluation.build_model(kind, 8, 5, tied_weights=tied)
            models[f"program {kind} tied={tied}"] = (model, program)
    return models


_RELOAD = """
import json, sys
import keras, numpy as np
import nalu_research.layers  # registers the experiments' layers
cases = json.loads(sys.stdin.read())
for path, inputs, expected in cases:
    model = keras.saving.load_model(path)
    out = keras.ops.convert_to_numpy(model(np.asarray(inputs[0], inputs[1])))
    np.testing.assert_allclose(out, np.asarray(expected), rtol=1e-5, atol=1e-6,
                               err_msg=path)
print("reloaded", len(cases))
"""


@pytest.mark.processes
def test_every_experiment_model_reloads_in_a_fresh_process(tmp_path):
    keras.utils.set_random_seed(0)
    cases = []
    for i, (name, (model, inputs)) in enumerate(experiment_models().items()):
        path = tmp_path / f"model_{i}.keras"
        model.save(path)
        expected = keras.ops.convert_to_numpy(model(inputs, training=False))
        assert np.all(np.isfinite(expected)), name
        cases.append(
            [str(path), [inputs.tolist(), str(inputs.dtype)], expected.tolist()]
        )
    assert len(cases) >= 50
    result = subprocess.run(
        [sys.executable, "-c", _RELOAD],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == ["reloaded", str(len(cases))]


@pytest.mark.parametrize(
    "name",
    [
        "CheckedTokens",
        "CReLU",
        "FirstUnit",
        "InstructedLSTMCell",
        "LastToken",
        "LSTMConfiguredNALUCell",
        "SummedStates",
        "UGRNNCell",
    ],  # fmt: skip
)
def test_experiment_layers_are_registered_under_the_harness_name(name):
    import nalu_research.layers

    cls = getattr(nalu_research.layers, name)
    assert keras.saving.get_registered_name(cls) == f"nalu_research>{name}"
