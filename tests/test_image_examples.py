"""Smoke runs of the image examples, at tiny sizes, on scikit-learn's digits."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nalu_research.tasks import mnist
from tests.test_export import serve_in_fresh_process

# scikit-learn's digits, tensorflow-datasets and matplotlib plots.
pytestmark = pytest.mark.research

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run(script, *args, cwd):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True, text=True, env=ENV, cwd=cwd,
    )  # fmt: skip


def table_rows(out):
    return {
        cells[0]: cells[1:]
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


def test_counting_example_trains_prints_table_2_and_exports(tmp_path):
    export_dir = tmp_path / "model"
    result = run(
        "mnist_counting.py",
        "--task", "count", "--dataset", "digits", "--models", "nac", "lstm",
        "--steps", "20", "--batch-size", "4", "--eval-sequences", "6",
        "--lengths", "1", "10", "--export-dir", str(export_dir),
        "--json", str(tmp_path / "results.json"), "--strategy", "mirrored",
        "--checkpoint-every", "8", "--checkpoint-dir", str(tmp_path / "ckpt"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
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
        assert len(saved["results"][kind]["epoch_losses"]) == 3
        assert saved["results"][kind]["diverged"] is None
    assert "scikit-learn digits" in result.stdout

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


def test_counting_example_sum_task_has_one_output(tmp_path):
    # A multi-worker strategy without TF_CONFIG: one worker, the custom loop.
    result = run(
        "mnist_counting.py",
        "--task", "sum", "--dataset", "digits", "--models", "gru",
        "--steps", "5", "--batch-size", "2", "--eval-sequences", "3",
        "--lengths", "1", "100", "--json", str(tmp_path / "r.json"),
        "--strategy", "multi-worker", "--checkpoint-every", "2",
        "--checkpoint-dir", str(tmp_path / "ckpt"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    saved = json.loads((tmp_path / "r.json").read_text())
    assert len(saved["results"]["gru"]["epoch_losses"]) == 3  # 2, 2 and 1 steps
    rows = table_rows(result.stdout)
    assert rows["GRU"][0].endswith("(0.0%)") and rows["GRU"][1].endswith("(771)")
    assert not (tmp_path / "saved_models").exists()  # no NAC, nothing exported


def test_counting_example_without_prepared_mnist_fails_at_once(tmp_path):
    start = time.perf_counter()
    result = run(
        "mnist_counting.py", "--data-dir", str(tmp_path / "none"), cwd=tmp_path
    )
    assert time.perf_counter() - start < 60  # TensorFlow's import, no download
    assert result.returncode == 2
    assert "MNIST is not prepared" in result.stderr
    assert "--dataset digits" in result.stderr and "--data-dir" in result.stderr


def test_counting_example_rejects_bad_arguments(tmp_path):
    result = run("mnist_counting.py", "--steps", "0", cwd=tmp_path)
    assert result.returncode == 2
    assert "--steps: expected a positive integer, got '0'" in result.stderr


def test_parity_example_trains_each_variant_and_prints_table_4(tmp_path):
    result = run(
        "mnist_parity.py",
        "--dataset", "digits", "--variants", "NAC", "Wx+b",
        "--train-size", "64", "--test-size", "32", "--epochs", "2",
        "--json", str(tmp_path / "parity.json"), "--strategy", "mirrored",
        "--checkpoint-dir", str(tmp_path / "ckpt"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed when done
    rows = table_rows(result.stdout)
    assert set(rows) == {"last layer", "Seguí et al.: Wx+b", "NAC", "Wx+b"}
    assert rows["NAC"][2] == "93.1" and rows["Wx+b"][2] == "88.1"
    for name in ("NAC", "Wx+b"):
        assert 0 <= float(rows[name][0]) <= 100
    saved = json.loads((tmp_path / "parity.json").read_text())
    assert saved["arguments"]["canvas_size"] == 28
    assert [r["seed"] for r in saved["results"]["NAC"]] == [0]
    assert 0 <= saved["results"]["NAC"][0]["train_accuracy"] <= 100


def test_parity_example_rejects_bad_arguments(tmp_path):
    result = run("mnist_parity.py", "--variants", "relu(W)x", cwd=tmp_path)
    assert result.returncode == 2
    assert "--variants: invalid choice: 'relu(W)x'" in result.stderr
    result = run(
        "mnist_parity.py", "--dataset", "digits", "--canvas-size", "12", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "`canvas_size`" in result.stderr
