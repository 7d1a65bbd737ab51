"""The README's Python code runs as a user would paste it, and does what it says.

Every ```python block of README.md, in order, runs in one fresh process with
the TensorFlow backend. Blocks not meant to run use another fence (```bash,
```text). The first example prints each unit's relative error far outside
its training range; the README claims the NALU is within 10%, and the
snapped NALU and the NMU exact to float32 rounding, so the printed errors are
checked against that.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The README's blocks and printed errors, read as `make gpu-check` reads them.
from nalu_research.experiments.gpu_check.workers import BLOCK, ERROR

pytestmark = pytest.mark.processes

README = Path(__file__).resolve().parents[1] / "README.md"
# What the README claims: the largest relative error of each unit.
CLAIMED_MAX_ERROR = {"NALU": 0.1, "snapped": 1e-5, "NMU": 1e-5}


def python_blocks(text):
    return BLOCK.findall(text)


def test_python_blocks_are_found():
    blocks = python_blocks("x\n```python\na = 1\n```\n```bash\nls\n```\n")
    assert blocks == ["a = 1\n"]


def run_blocks(blocks, tmp_path):
    """Runs the code `blocks` as one script in a fresh process (tensorflow),
    in `tmp_path`; returns what it printed."""
    script = tmp_path / "page.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_readme_code_runs_and_extrapolates_as_claimed(tmp_path):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2, "the README lost its first example"
    done = run_blocks(blocks, tmp_path)
    errors = {name: float(high) for name, _, high in ERROR.findall(done.stdout)}
    assert set(errors) == set(CLAIMED_MAX_ERROR), done.stdout
    for name, claimed in CLAIMED_MAX_ERROR.items():
        assert errors[name] < claimed, done.stdout
    assert "['y0 = a*b']" in done.stdout  # the snapped NALU's formula


def test_the_docs_home_page_code_runs_as_printed(tmp_path):
    """docs/index.md's first model prints the product it claims, exactly."""
    index = README.parent / "docs" / "index.md"
    (block,) = python_blocks(index.read_text(encoding="utf-8"))
    done = run_blocks([block], tmp_path)
    claimed = re.search(r"# (\[\[\d+\.\]\]), exact", block).group(1)
    assert done.stdout.strip().splitlines()[-1] == claimed


def test_the_writing_a_unit_page_runs_as_printed(tmp_path):
    """docs/writing-a-unit.md: a unit defined outside the package trains,
    reads as its formula, snaps, reloads and trains in the seed-batched
    engine, with no change inside the package."""
    page = README.parent / "docs" / "writing-a-unit.md"
    done = run_blocks(python_blocks(page.read_text(encoding="utf-8")), tmp_path)
    assert done.stdout.splitlines() == [
        "['y0 = a**2*b']",
        "['y0 = a**2*b']",
        "True",
        "Power",
        "2",
    ], done.stdout
