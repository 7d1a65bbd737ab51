"""Smoke runs of examples/number_words.py and examples/program_evaluation.py."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from nalu_research.models import number_words as models
from tests.processes import (
    example_env,
    kill_when_written,
    run_command_in_process,
    run_in_process,
    tensorboard_scalars,
)
from tests.test_bad_input import serve_each_in_fresh_process
from tests.test_export import serve_in_fresh_process

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run(script, args, cwd):
    return run_in_process(Path(script).stem, *args, cwd=cwd)


def table_rows(out):
    return {
        cells[0]: cells
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


@pytest.mark.processes
@pytest.mark.research  # plots with matplotlib
def test_number_words_trains_prints_and_serves_strings(tmp_path):
    export_dir = tmp_path / "words"
    argv = ["--quick", "--export-dir", export_dir, "--json", "r.json", "--strategy"]
    argv += ["mirrored", "--checkpoint-dir", tmp_path / "ckpt", "--tensorboard"]
    result = run("number_words.py", [*argv, tmp_path / "tb"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    # Not a terminal: a line per evaluation (2 epochs of 20 steps per
    # configuration) with the seed's MAEs and the time left, then one per
    # configuration.
    lines = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    epochs = ["epoch 1/2 (step 20)", "epoch 2/2 (step 40)"]
    assert [line.split(" - ")[0] for line in lines] == epochs * 3
    assert " - validation_mae/seed_1 " in lines[0] and lines[0].endswith(" left")
    assert lines[-1].endswith(", done")
    for i, name in enumerate(("LSTM", "LSTM + NAC", "LSTM + NALU"), start=1):
        assert f"configuration {i}/3 ({name}, size 16, lr 0.01) - median " in (
            result.stdout
        )
    # The plot beside the JSON (its default place).
    assert (tmp_path / "r.png").stat().st_size > 1000
    # TensorBoard: a run per configuration, the loss and the MAEs per step.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"lstm/16/0.01", "nac/16/0.01", "nalu/16/0.01"}
    for tags in scalars.values():  # the test split is read at the end only
        assert tags == {"loss": [20, 40], "validation_mae/seed_1": [20, 40]}
    rows = table_rows(result.stdout)
    assert set(rows) == {"model", "LSTM", "LSTM + NAC", "LSTM + NALU"}
    assert rows["LSTM + NALU"][4].endswith("(0.41)")
    for name in ("LSTM", "LSTM + NAC", "LSTM + NALU"):
        assert float(rows[name][4].split()[0]) >= 0  # a number, not nan
    assert result.stdout.count("(paper)") == 4  # the four queries of Figure 3
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["figure_3"]["three hundred and thirty four"]) == 5
    (run_,) = report["runs"]["LSTM + NALU"]["size 16, lr 0.01"]
    assert run_["steps"] == [20, 40]
    assert run_["curves"]["validation"][-1] == pytest.approx(run_["validation"])
    # The test MAE apart on the 26 phrases that use a word training shows
    # alone and on the other 605: together, the test MAE.
    assert (run_["test_lone_count"], run_["test_other_count"]) == (26, 605)
    parts = 26 * run_["test_lone"] + 605 * run_["test_other"]
    assert parts / 631 == pytest.approx(run_["test"], rel=1e-5)
    assert "Test MAE apart: on the 26 test phrases that use a word" in result.stdout
    # The served model's check: 15 phrases as people type them, counted as
    # served; the 5 outside the grammar flagged whatever the model.
    check = report["served_check"]
    assert len(check["phrases"]) == 15 and check["flagged"] == 5
    within = np.abs(np.subtract(check["served"], check["values"])) <= 0.5
    assert check["within"] == within.sum()
    assert f"Served {check['within']}/15 typed phrases within 0.5" in result.stdout
    assert "flagged 5/5 invalid ones" in result.stdout
    assert "The model the docs recommend" in result.stdout

    # The SavedModel takes text: tokenized inside the graph, no keras_nalu.
    # It returns a dict; "value" is NaN where "valid" is false.
    typed = ["Forty-Two", "  forty   two ", "a hundred", "one hundred"]
    texts = [["five hundred and fifteen", "nine", "eighty eight"], ["zero"], ["nine"]]
    texts += [["zzz qqq", "", "nine " * 500], [*typed, "eleven hundred"]]
    cases = [(export_dir, t, "string") for t in texts]
    served = serve_each_in_fresh_process(cases, tmp_path)
    values = [np.array(s["value"]) for s in served]
    assert [v.shape for v in values] == [(3,), (1,), (1,), (3,), (5,)]
    assert all(np.all(np.isfinite(v)) for v in values[:3])
    assert all(s["valid"] == [True] * len(s["valid"]) for s in served[:3])
    # The same text served alone or in a batch (padding does not leak).
    np.testing.assert_allclose(values[2], values[0][1:2], rtol=1e-5, atol=1e-4)
    # Unknown words, an empty and an over-long phrase: flagged, no number.
    assert served[3]["valid"] == [False, False, False]
    assert served[3]["unknown_tokens"] == [2, 0, 0]
    assert served[3]["tokens"] == [2, 0, 500]
    assert np.all(np.isnan(values[3]))
    # What people type, normalized inside the graph: the same number as the
    # spelling trained; a phrase outside the grammar (known words) flagged.
    assert served[4]["valid"] == [True, True, True, True, False]
    np.testing.assert_allclose(values[4][[0, 2]], values[4][[1, 3]], rtol=1e-6)
    assert np.isnan(values[4][4])


@pytest.mark.research  # plots with matplotlib
def test_number_words_split_without_lone_word_phrases_is_not_a_divergence(tmp_path):
    """Split 500's test set has no phrase after a word training shows alone:
    the MAE over them is absent (null, count 0), not NaN, and the run is
    healthy: exit 0, the record in place, not `.diverged.json`."""
    from nalu_research.tasks.number_words import NumberWords

    assert not NumberWords(seed=500).after_lone_words("test").any()
    flags = "--seed 500 --models nalu --seeds 1 --sizes 4 --learning-rates 0.01"
    flags += " --steps 10 --eval-every 10 --no-export --json r.json --checkpoint-dir c"
    result = run("number_words.py", flags.split(), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "r.diverged.json").exists()
    record = json.loads((tmp_path / "r.json").read_text())
    (run_,) = record["runs"]["LSTM + NALU"]["size 4, lr 0.01"]
    assert (run_["test_lone"], run_["test_lone_count"]) == (None, 0)
    assert run_["test_other_count"] == 631
    assert run_["test_other"] == pytest.approx(run_["test"], rel=1e-6)
    assert "test – on the 0 phrases after lone words" in result.stdout
    assert "No test phrase uses a word that training shows only alone." in result.stdout


# Slow (three runs of the example, about 35 s): `make test` keeps the
# resume of training.fit in-process (tests/test_training.py) and end to end
# through the demo and program evaluation; run it with `pytest -m slow`.
@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.research  # plots with matplotlib
def test_number_words_killed_mid_run_resumes_to_the_same_results(tmp_path):
    # A seed whose best step came before the kill: the resumed run must keep
    # the best weights from its checkpoint (KeepBest's state).
    def command(name):
        flags = "--seeds 2 --steps 60 --eval-every 10 --sizes 8 --learning-rates 0.2"
        flags += " --models nalu --log-test --export-dir {0}_model --json {0}.json"
        flags += " --checkpoint-dir {0}_checkpoints"
        script = str(EXAMPLES / "number_words.py")
        return [sys.executable, script, *flags.format(tmp_path / name).split()]

    whole = run_command_in_process(
        [*command("whole"), "--tensorboard", str(tmp_path / "tb")]
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert not (tmp_path / "whole_checkpoints").exists()  # cleaned up when done
    # Two seeds side by side: each one's loss and MAEs, by name.
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert set(scalars) == {"nalu/8/0.2"}
    tags = "loss seed_1_loss seed_2_loss validation_mae/seed_1 validation_mae/seed_2"
    tags += " test_mae/seed_1 test_mae/seed_2"
    assert scalars["nalu/8/0.2"] == {t: list(range(10, 61, 10)) for t in tags.split()}
    assert "configuration 1/1 (LSTM + NALU, size 8, lr 0.2) - " in whole.stdout

    state = tmp_path / "killed_checkpoints" / "nalu" / "8" / "0.2"
    kill_when_written(command("killed"), state, example_env())
    assert not (tmp_path / "killed.json").exists()

    resumed = run_command_in_process(command("killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    resume = "LSTM + NALU, size 8, lr 0.2: resumed from its checkpoint after epoch "
    assert resume in resumed.stdout
    killed_at = int(resumed.stdout.split(resume)[1].split()[0])
    assert 0 < killed_at < 6  # of the 6 epochs of 10 steps
    assert not (tmp_path / "killed_checkpoints").exists()

    def results(name):  # all but the times
        saved = json.loads((tmp_path / f"{name}.json").read_text())
        for configs in saved["runs"].values():
            for runs in configs.values():
                for run in runs:
                    del run["seconds"]
        return saved["runs"], saved["chosen"], saved["figure_3"]

    assert results("killed") == results("whole")
    runs = results("whole")[0]["LSTM + NALU"]["size 8, lr 0.2"]
    # Which steps are best depends on the TensorFlow build's float rounding;
    # what matters is that one of them came before the kill.
    assert min(run["best_step"] for run in runs) <= 10 * killed_at


@pytest.mark.processes
@pytest.mark.research  # plots with matplotlib
def test_program_evaluation_trains_prints_and_exports(tmp_path):
    export_dir = tmp_path / "programs"
    argv = "--seeds 1 --steps 20 --eval-every 10 --eval-size 50 --models lstm nalu"
    argv += f" ugrnn --export-dir {export_dir} --png c.png --json r.json"
    result = run("program_evaluation.py", argv.split(), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = table_rows(result.stdout)
    assert set(rows) == {"model", "LSTM", "NALU", "UGRNN"}
    for name in ("LSTM", "NALU", "UGRNN"):
        for cell in rows[name][1:]:
            assert 0 <= float(cell.split("%")[0]) <= 100
    assert (tmp_path / "c.png").stat().st_size > 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["results"]["NALU"][0]["steps"] == [10, 20]
    x = np.zeros((2, 5, 10), "float32")
    x[:, :, 0] = [[1, 2, 3, 4, 5], [10, 20, 30, 40, 50]]
    x[:, np.arange(5), [1, 2, 4, 6, 8]] = 1.0  # SET ADD IF_LT THEN_ADD ELSE_ADD
    served = serve_in_fresh_process(export_dir, {"x": x}, tmp_path)["x"]
    assert served.shape == (2,) and np.all(np.isfinite(served))


def load_example(script):
    return importlib.import_module(f"nalu_research.experiments.{script[:-3]}")


# fmt: off
BAD_ARGUMENTS = [
    ("number_words.py", ["--steps", "0"],
     "argument --steps: expected a positive integer, got '0'"),
    ("number_words.py", ["--seed", "-1"],
     "argument --seed: expected an integer >= 0, got '-1'"),
    ("number_words.py", ["--sizes", "16", "-2"],
     "argument --sizes: expected a positive integer, got '-2'"),
    ("number_words.py", ["--embedding-size", "0"],
     "argument --embedding-size: expected a positive integer, got '0'"),
    ("number_words.py", ["--learning-rates", "0"],
     "argument --learning-rates: expected a finite number greater than 0 "
     "(at least 1.2e-38), got '0'"),
    ("number_words.py", ["--steps", "10", "--eval-every", "20"],
     "--eval-every must be at most --steps (10), got 20"),
    ("number_words.py", ["--readout", "pairs", "--embedding-size", "8"],
     "--embedding-size has no use with --readout pairs, whose --sizes are "
     "the embedding's; got --embedding-size 8"),
    ("number_words.py", ["--readout", "configured", "--models", "nac"],
     "--models nac has no --readout configured: it reads nalu only"),
    ("number_words.py",
     ["--steps", "100", "--eval-every", "50", "--learning-rate-drop", "100", "0.1"],
     "--learning-rate-drop STEP must be below --steps (100), got 100"),
    ("number_words.py", ["--learning-rate-drop", "100", "0"],
     "--learning-rate-drop expects an integer STEP >= 0 and FACTOR > 0, got 100 0"),
    ("program_evaluation.py", ["--seeds", "0"],
     "argument --seeds: expected a positive integer, got '0'"),
    ("program_evaluation.py", ["--eval-size", "1.5"],
     "argument --eval-size: expected a positive integer, got '1.5'"),
    ("program_evaluation.py", ["--seed", "-1"],
     "argument --seed: expected an integer >= 0, got '-1'"),
    ("program_evaluation.py", ["--learning-rate", "-1"],
     "argument --learning-rate: expected a finite number greater than 0 "
     "(at least 1.2e-38), got '-1'"),
    ("program_evaluation.py", ["--clipnorm", "nan"],
     "argument --clipnorm: expected a finite number greater than 0 "
     "(at least 1.2e-38), got 'nan'"),
    ("program_evaluation.py", ["--steps", "10", "--eval-every", "20"],
     "--eval-every must be at most --steps (10), got 20"),
    ("program_evaluation.py", ["--task", "sort"], "invalid choice: 'sort'"),
]
# fmt: on


@pytest.mark.parametrize("script, args, message", BAD_ARGUMENTS)
def test_examples_reject_bad_arguments(capsys, script, args, message):
    with pytest.raises(SystemExit) as exit_info:
        load_example(script).main(args)  # parsing fails before any work
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.research  # its arguments name a plot, which needs matplotlib
def test_seeds_trained_side_by_side_match_a_seed_trained_alone():
    """number_words trains a configuration's seeds in one model."""
    example = load_example("number_words.py")
    args = example.NumberWordsExperiment().parse_args(
        ["--steps", "20", "--eval-every", "10"]
    )
    from nalu_research.tasks.number_words import NumberWords

    task = NumberWords(seed=0)
    data = {s: task.split(s)[1:] for s in ("train", "validation", "test")}
    together = example.train_config("nalu", 8, 0.01, [1, 2], data, args)
    alone = example.train_config("nalu", 8, 0.01, [2], data, args)
    for split in data:
        assert together[1][0][split] == pytest.approx(alone[0][0][split], rel=1e-5)
    assert together[0][0]["train"] != pytest.approx(together[1][0]["train"])


def test_number_words_embedding_size_is_set_apart_from_the_lstm_size():

    def sizes(model):
        layers = model.layers
        (embedding,) = [x for x in layers if isinstance(x, keras.layers.Embedding)]
        (lstm,) = [x for x in layers if isinstance(x, keras.layers.LSTM)]
        return embedding.output_dim, lstm.units

    ((_, model),) = models.build_models("nalu", 4, [0], embedding_size=6)
    assert sizes(model) == (6, 4)
    ((_, model),) = models.build_models("nalu", 4, [0])  # the paper's grid
    assert sizes(model) == (4, 4)


@pytest.mark.parametrize("kind", ["nac", "nalu"])
def test_number_words_two_layer_readout_has_a_hidden_unit_layer(kind):
    from keras_nalu import NAC

    def units(readout):
        ((steps, _),) = models.build_models(kind, 4, [0], readout=readout)
        return [x.units for x in steps.layers if isinstance(x, NAC)]  # NALU too

    assert units("step") == [1]
    assert units("two-layer") == [4, 1]  # as wide as the LSTM, then the output
    ids = np.array([[1, 2, 3, 0, 0]], "int32")
    ((steps, model),) = models.build_models(kind, 4, [0], readout="two-layer")
    assert steps(ids).shape == (1, 5) and model(ids).shape == (1,)


def test_number_words_configured_readout_is_a_nalu_the_lstm_configures():
    from nalu_research.layers import LSTMConfiguredNALUCell

    ((steps, model),) = models.build_models("nalu", 4, [0], readout="configured")
    (rnn,) = [x for x in steps.layers if isinstance(x, keras.layers.RNN)]
    assert isinstance(rnn.cell, LSTMConfiguredNALUCell)
    assert (rnn.cell.units, rnn.cell.control_units) == (1, 4)
    # The cell's controller is the LSTM; a number per token is the NALU's input.
    assert not [x for x in steps.layers if isinstance(x, keras.layers.LSTM)]
    widths = [
        x.output_dim for x in steps.layers if isinstance(x, keras.layers.Embedding)
    ]
    assert sorted(widths) == [1, 4]
    ids = np.array([[1, 2, 3, 0, 0]], "int32")
    assert steps(ids).shape == (1, 5) and model(ids).shape == (1,)
    # The numbers per token are exp of the width-1 embedding by default
    # (`--token-values log`), the embedding itself with "linear".
    for token_values, activations in (("log", ["exponential"]), ("linear", [])):
        ((steps, _),) = models.build_models(
            "nalu", 4, [0], readout="configured", token_values=token_values
        )
        assert activations == [
            x.activation.__name__
            for x in steps.layers
            if isinstance(x, keras.layers.Activation)
        ]
    # The LSTM baseline, which a configured run trains too, is unchanged.
    ((lstm_steps, _),) = models.build_models("lstm", 4, [0], readout="configured")
    ((plain, _),) = models.build_models("lstm", 4, [0])
    assert [type(x) for x in lstm_steps.layers] == [type(x) for x in plain.layers]


@pytest.mark.parametrize("kind", ["nac", "nalu"])
def test_number_words_pair_readout_sums_the_unit_over_adjacent_words(kind):
    """`--readout pairs`: no LSTM; the prediction after token t is the sum
    over i <= t of the unit on [e_i; e_i+1], the padding's embedding after
    the last word; later padding adds nothing."""
    from keras_nalu import NAC

    ((steps, model),) = models.build_models(kind, 3, [0], readout="pairs")
    assert not [x for x in steps.layers if isinstance(x, keras.layers.LSTM)]
    (embedding,) = [x for x in steps.layers if isinstance(x, keras.layers.Embedding)]
    (unit,) = [x for x in steps.layers if isinstance(x, NAC)]  # NALU too
    assert (embedding.output_dim, unit.units) == (3, 1)
    ids = np.array([[5, 7, 9, 0], [4, 0, 0, 0], [3, 6, 8, 2]], "int32")
    table = keras.ops.convert_to_numpy(embedding.embeddings)
    following = np.concatenate([ids[:, 1:], np.zeros_like(ids[:, :1])], axis=1)
    pairs = np.concatenate([table[ids], table[following]], axis=-1)
    values = keras.ops.convert_to_numpy(unit(pairs.astype("float32")))[..., 0]
    expected = np.cumsum(values * (ids != 0), axis=1)
    np.testing.assert_allclose(steps(ids), expected, rtol=1e-5, atol=1e-5)
    last = expected[np.arange(3), (ids != 0).sum(axis=1) - 1]
    np.testing.assert_allclose(model(ids), last, rtol=1e-5, atol=1e-5)
    padded = np.pad(ids, ((0, 0), (0, 2)))  # a served phrase has padding after it
    np.testing.assert_allclose(model(padded), last, rtol=1e-5, atol=1e-5)
    assert models.model_name(kind, "pairs") == f"{kind.upper()} over word pairs"
    assert models.model_name(kind, "step") == models.MODELS[kind]


@pytest.mark.research  # its arguments name a plot, which needs matplotlib
def test_number_words_models_default_to_those_the_readout_has():
    parse_args = load_example("number_words.py").NumberWordsExperiment().parse_args
    assert parse_args([]).models == ["lstm", "nac", "nalu"]
    assert parse_args(["--readout", "configured"]).models == ["lstm", "nalu"]
    assert parse_args(["--readout", "pairs"]).models == ["lstm", "nac", "nalu"]


def test_number_words_per_token_loss_reads_each_phrase_to_its_last_word():
    nan = np.nan
    y_true = np.array([[3, 300, 300, 330, 334], [8, nan, nan, nan, nan]], "float32")
    y_pred = np.array([[4, 300, 290, 330, 334], [5, 1e9, -1e9, 0, 7]], "float32")
    for kind, expected in (("mae", [11 / 5, 3]), ("mse", [101 / 5, 9])):
        loss = models.per_token_loss(kind)(y_true, y_pred)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(loss), expected)
    # The gradient reaches the phrase's tokens only, not its padding.
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        prediction = tf.Variable(y_pred)
        with tf.GradientTape() as tape:
            total = tf.reduce_sum(models.per_token_loss("mae")(y_true, prediction))
        grad = tape.gradient(total, prediction).numpy()
        np.testing.assert_allclose(grad[1], [-1, 0, 0, 0, 0])
        np.testing.assert_allclose(grad[0], [0.2, 0, -0.2, 0, 0])


@pytest.mark.research  # its arguments name a plot, which needs matplotlib
def test_number_words_trains_on_prefix_targets():
    """`--targets prefix` fits every token's running value: after a short run
    the error of the predictions at the training phrases' earlier words is
    small (14 when written; 189 when the loss reads the last token only)."""
    example = load_example("number_words.py")
    from nalu_research.tasks.number_words import NumberWords

    task = NumberWords(seed=0)
    data = {s: task.split(s)[1:] for s in ("train", "validation", "test")}
    ids, _ = data["train"]
    prefix = task.prefix_targets("train")
    flags = "--steps 1000 --eval-every 1000 --readout recurrent --targets prefix"
    args = example.NumberWordsExperiment().parse_args(flags.split())
    ((errors, _, steps_model, _),) = example.train_config(
        "nalu", 16, 0.01, [1], data, args, train_targets=prefix
    )
    # The epoch's evaluation reads the trained model's every-token output at
    # each phrase's last word, as the last-token model does.
    assert errors["curves"]["validation"][-1] == pytest.approx(
        errors["validation"], rel=1e-5
    )
    per_token = keras.ops.convert_to_numpy(steps_model(ids, training=False))
    earlier = ~np.isnan(prefix)
    earlier[np.arange(len(ids)), np.count_nonzero(ids, axis=1) - 1] = False
    assert np.mean(np.abs(per_token - prefix)[earlier]) < 40


@pytest.mark.research  # its arguments name a plot, which needs matplotlib
def test_number_words_log_token_values_fit_the_numbers_sooner():
    """The configured readout's numbers per token through `exp` reach the
    training numbers in far fewer steps than the linear embedding, which
    Adam moves by about the learning rate a step (when written, 1,000 steps
    of one seed: training MAE 79.6 against 454)."""
    example = load_example("number_words.py")
    from nalu_research.tasks.number_words import NumberWords

    task = NumberWords(seed=0)
    data = {s: task.split(s)[1:] for s in ("train", "validation", "test")}
    train = {}
    for token_values in ("log", "linear"):
        flags = "--steps 1000 --eval-every 1000 --readout configured --targets prefix"
        args = example.NumberWordsExperiment().parse_args(
            [*flags.split(), "--token-values", token_values]
        )
        prefix = task.prefix_targets("train")
        ((errors, *_),) = example.train_config(
            "nalu", 16, 0.01, [1], data, args, train_targets=prefix
        )
        train[token_values] = errors["train"]
    assert train["log"] < 200 < 400 < train["linear"]


# A small configuration of the pairs model: its figures must not depend on
# the run (the same command twice) or on what trains beside it in the
# process (the NAC's configuration first).
REPEATED = "--readout pairs --sizes 8 --learning-rates 0.01 --seeds 2 --steps 200"
REPEATED = [*REPEATED.split(), *"--eval-every 100 --loss mse --no-export".split()]


def nalu_figures(path):
    (runs,) = json.loads(path.read_text())["runs"]["NALU over word pairs"].values()
    return [(r["seed"], r["train"], r["validation"], r["test"]) for r in runs]


@pytest.mark.processes
@pytest.mark.research
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_number_words_figures_repeat_whatever_shares_the_run(backend, tmp_path):
    """The model alone, then with the NAC's configuration trained first, in
    one process of `backend` (this one, or a fresh one for another)."""
    import subprocess

    def args(name, models):
        json_path, checkpoints = str(tmp_path / f"{name}.json"), str(tmp_path / name)
        given = ["--models", *models, "--backend", backend, "--json", json_path]
        return [*REPEATED, *given, "--checkpoint-dir", checkpoints]

    runs = [args("alone", ["nalu"]), args("beside", ["nac", "nalu"])]
    if backend == keras.backend.backend():  # in this process, after others
        for argv in runs:
            done = run("number_words.py", argv, tmp_path)
            assert done.returncode == 0, done.stderr[-3000:]
    else:  # both runs in one fresh process of that backend
        code = (
            "import sys; from nalu_research.backends import run\n"
            "for argv in eval(sys.argv[1]): assert run('number_words', argv) == 0"
        )
        command = [sys.executable, "-c", code, repr(runs)]
        done = subprocess.run(
            command, capture_output=True, text=True, env=example_env(), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr[-3000:]
    alone = nalu_figures(tmp_path / "alone.json")
    assert nalu_figures(tmp_path / "beside.json") == alone  # to the last bit
    assert len({f[3] for f in alone}) == 2  # the two seeds differ
