import os
import subprocess
import sys
from pathlib import Path

import tensorflow as tf

DEMO = Path(__file__).resolve().parents[1] / "examples" / "static_arithmetic.py"


def test_static_arithmetic_demo_trains_prints_and_exports(tmp_path):
    export_dir = tmp_path / "model"
    result = subprocess.run(
        [sys.executable, str(DEMO),
         "--steps", "200", "--eval-size", "256", "--export-dir", str(export_dir)],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "| ReLU6 MLP |" in out and "| NALU-NALU |" in out
    assert "3.2 / 10.1" in out and "0.0 / 0.0" in out  # the paper's a*b row
    assert out.count("served") >= 3
    reloaded = tf.saved_model.load(str(export_dir))
    assert reloaded.serve(tf.ones((2, 100))).shape == (2, 1)


def test_static_arithmetic_demo_rejects_bad_arguments(tmp_path):
    result = subprocess.run(
        [sys.executable, str(DEMO), "--steps", "0"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--steps must be a positive integer" in result.stderr
