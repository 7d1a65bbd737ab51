import os
import re
import subprocess
import sys
from pathlib import Path

import tensorflow as tf

DEMO = Path(__file__).resolve().parents[1] / "examples" / "static_arithmetic.py"


def test_static_arithmetic_demo_trains_prints_and_exports(tmp_path):
    export_dir = tmp_path / "model"
    result = subprocess.run(
        [sys.executable, str(DEMO),
         "--steps", "200", "--eval-size", "256", "--runs", "1",
         "--export-dir", str(export_dir)],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    rows = {
        cells[0]: cells
        for line in out.splitlines()
        if line.startswith("| ") and "---" not in line
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == {"model", "ReLU6 MLP", "NALU-NALU"}
    for name in ("ReLU6 MLP", "NALU-NALU"):
        interpolation, extrapolation = float(rows[name][1]), float(rows[name][2])
        assert interpolation >= 0 and extrapolation >= 0  # numbers, not nan
        assert rows[name][4].endswith("/1") and rows[name][5].endswith("/1")
    served = re.findall(r"served +(\S+), exact a\*b = +(\S+)", out)
    assert len(served) == 3
    assert all(float(exact) > 0 for _, exact in served)
    reloaded = tf.saved_model.load(str(export_dir))
    assert reloaded.serve(tf.ones((2, 100))).shape == (2, 1)


def test_static_arithmetic_demo_rejects_bad_arguments(tmp_path):
    result = subprocess.run(
        [sys.executable, str(DEMO), "--steps", "0"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--steps must be a positive integer" in result.stderr
