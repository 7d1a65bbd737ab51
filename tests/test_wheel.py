"""The built wheel holds everything the library needs: the README's first
example runs from the wheel's files alone, not from this checkout."""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_installs_and_runs_the_readme_example(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation",
         "--outdir", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("keras_neural_arithmetic-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.search(r"\.dist-info/(licenses/)?LICENSE$", n) for n in names)
    assert "keras_nalu/layers/nalu.py" in names
    assert "keras_nalu/py.typed" in names  # the hints are for type checkers

    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
         "--target", str(site), str(wheel)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    script = "\n".join(blocks) + (
        "\nimport keras_nalu\nprint('from', keras_nalu.__file__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the checkout
        env={**os.environ, "PYTHONPATH": str(site), "TF_CPP_MIN_LOG_LEVEL": "3"},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    origin = run.stdout.strip().splitlines()[-1]
    assert origin == f"from {site / 'keras_nalu' / '__init__.py'}"
    assert "NMU: W = [1. 1.]" in run.stdout
