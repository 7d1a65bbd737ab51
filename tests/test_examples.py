import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from tests.processes import checkpoint_epoch, kill_when_written

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


def test_static_demo_killed_mid_run_resumes_to_the_uninterrupted_weights(tmp_path):
    def command(name):
        return [sys.executable, str(DEMO), "--steps", "6000", "--checkpoint-every",
                "500", "--runs", "1", "--models", "nalu", "--eval-size", "256",
                "--export-dir", str(tmp_path / f"{name}_model"),
                "--checkpoint-dir", str(tmp_path / f"{name}_checkpoints")]  # fmt: skip

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    whole = subprocess.run(command("whole"), capture_output=True, text=True, env=env)
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert not (tmp_path / "whole_checkpoints").exists()  # cleaned up when done

    state = tmp_path / "killed_checkpoints" / "mul" / "nalu" / "1" / "checkpoint"
    kill_when_written(command("killed"), state, env)
    killed_at = 500 * checkpoint_epoch(state.parent)
    assert 0 < killed_at < 6000 and not (tmp_path / "killed_model").exists()

    resumed = subprocess.run(command("killed"), capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from its checkpoint" in resumed.stdout
    x = np.random.default_rng(0).uniform(1, 6, (16, 100)).astype("float32")
    whole_model = tf.saved_model.load(str(tmp_path / "whole_model"))
    resumed_model = tf.saved_model.load(str(tmp_path / "killed_model"))
    np.testing.assert_allclose(
        resumed_model.serve(x).numpy(), whole_model.serve(x).numpy(), rtol=1e-6
    )
