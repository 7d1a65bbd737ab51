"""`examples/mnist_supervised.py`: the digit encoder trained on labels, on
scikit-learn's digits at tiny sizes (its mnist5k figures are in
docs/experiments/mnist-counting.md)."""

import json
from pathlib import Path

import keras
import pytest

from keras_nalu.layers import NAUCell
from nalu_research.experiments import mnist_supervised
from nalu_research.models import mnist as mnist_models
from nalu_research.tasks import mnist

# scikit-learn's digits.
pytestmark = pytest.mark.research


def test_labels_teach_the_encoder_the_digits(tmp_path, capsys):
    path = tmp_path / "class.json"
    argv = ["--dataset", "digits", "--epochs", "3", "--seeds", "2"]
    assert mnist_supervised.main([*argv, "--json", str(path)]) == 0
    saved = json.loads(path.read_text())
    assert saved["arguments"]["target"] == "class"
    assert saved["arguments"]["learning_rate"] == mnist_supervised.LEARNING_RATE
    runs = saved["runs"]
    assert [run["seed"] for run in runs] == [0, 1]
    for run in runs:
        assert len(run["epoch_test_accuracy"]) == 3
        # After the last epoch, not the best one.
        assert run["test_accuracy"] == run["epoch_test_accuracy"][-1]
        # Chance is 10%; three epochs on the labels of 1,297 digits read
        # 90% of the 500 test digits (seeds 0 and 1).
        assert run["test_accuracy"] > 70 and run["train_accuracy"] > 70
    out = capsys.readouterr().out
    assert "| median [min, max] |" in out and "after epoch 3" in out


def test_the_value_target_trains_the_addition_model_on_single_images(tmp_path):
    path = tmp_path / "value.json"
    argv = ["--dataset", "digits", "--target", "value", "--epochs", "2"]
    args = mnist_supervised.MnistSupervisedExperiment().parse_args(
        [*argv, "--seeds", "1", "--json", str(path)]
    )
    assert args.learning_rate == mnist_models.LEARNING_RATES["nau"]
    model = mnist_supervised.build(args, (8, 8, 1))
    # The addition model itself: the NAUCell reads the encoder's log-softmax.
    cells = [
        layer.cell
        for layer in model.get_layer("nau_head").layers
        if isinstance(layer, keras.layers.RNN)
    ]
    assert len(cells) == 1 and isinstance(cells[0], NAUCell)
    inputs, targets = mnist_supervised.inputs_and_targets(
        "value", *mnist.load_digit_images("digits", "test")
    )
    assert inputs.shape == (500, 1, 8, 8, 1) and targets.shape == (500, 1)
    assert mnist_supervised.main([*argv, "--seeds", "1", "--json", str(path)]) == 0
    run = json.loads(path.read_text())["runs"][0]
    assert 0 <= run["test_accuracy"] <= 100 and len(run["epoch_test_accuracy"]) == 2


def test_default_output_and_bad_arguments(tmp_path, capsys, monkeypatch):
    args = mnist_supervised.MnistSupervisedExperiment().parse_args(
        ["--dataset", "mnist5k", "--target", "value"]
    )
    assert args.json == Path("results/mnist_supervised_mnist5k_value.json")
    with pytest.raises(SystemExit) as exit_info:
        mnist_supervised.MnistSupervisedExperiment().parse_args(["--target", "sum"])
    assert exit_info.value.code == 2
    assert "--target: invalid choice: 'sum'" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:  # before any training
        mnist_supervised.main(["--dataset", "digits", "--max-shift", "8"])
    assert exit_info.value.code == 2
    assert (
        "--max-shift must be less than the images' side (8 pixels in "
        "scikit-learn digits), got 8" in capsys.readouterr().err
    )
    assert not (tmp_path / "results").exists()  # nothing written
