"""`make gpu-check`'s accounting: how test outcomes are counted and how the
report reads its results (the check itself runs in CI as its dry run,
`GPU_CHECK_DRY_RUN=1 make gpu-check`)."""

import json

from nalu_research.experiments import gpu_check
from nalu_research.experiments.gpu_check import page

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_ops" name="test_sum"/>
<testcase classname="tests.test_ops" name="test_skipped">
  <skipped message="no"/>
</testcase>
<testcase classname="tests.test_export" name="test_serve">
  <failure message="ModuleNotFoundError: No module named 'tensorflow'">tb</failure>
</testcase>
<testcase classname="keras_nalu.distribute" name="">
  <error message="collection failure">ImportError: keras_nalu.distribute
  (tf.distribute strategies) needs TensorFlow</error>
</testcase>
<testcase classname="tests.test_units" name="test_nmu">
  <failure message="AssertionError: 1e-3 &gt; 1e-6">tb</failure>
</testcase>
</testsuite></testsuites>
"""


def test_failures_for_want_of_tensorflow_are_counted_apart():
    counts = gpu_check.count_outcomes(JUNIT)
    names = ("passed", "skipped", "needs_tensorflow", "failed")
    assert [counts[name] for name in names] == [1, 1, 2, 1]
    assert counts["failures"] == [
        "tests.test_units::test_nmu: AssertionError: 1e-3 > 1e-6"
    ]


def test_the_report_says_what_failed_and_reads_the_anchor(tmp_path):
    ok = {"device": "gpu", "errors": {"NAC sum": 6e-8, "NALU product": 5e-7}}
    runs = [
        {"seed": s, "success": s != 1, "solved_at": None if s == 1 else 1_500_000,
         "extrapolation_mse": 0.0, "initial_split": 0.01 if s == 1 else 0.5}
        for s in range(4)
    ]  # fmt: skip
    results = {
        "dry_run": False,
        "notes": ["A note."],
        "seconds": 400.0,
        "machine": {"gpu": "H200", "cpus": 16, "python": "3.12", "versions": {}},
        "tests": {
            "jax-gpu": {
                "passed": 3,
                "failed": 1,
                "skipped": 0,
                "needs_tensorflow": 2,
                "wall_seconds": 9.0,
                "failures": ["t::x: boom"],
            },
            "torch-gpu": {"error": "stopped at the time limit, 240 s"},
        },  # fmt: skip
        "precision": {"jax-gpu": ok, "jax-gpu-tf32": {"error": "exit 1: x"}},
        "readme": {"jax-gpu": {"device": "gpu", "errors": {"NMU": {"max": 0.0}}}},
        "demo": {"jax-gpu": {"error": "exit 1: y"}},
        "engine": {
            v: {"timings": [{"model": "nmu", "runs": 25, "ms_per_run_iteration": t}]}
            for v, t in (("jax-gpu", 0.001), ("jax-cpu", 0.02))
        },
        "anchor": {
            "settings": {"seeds": 4, "iterations": 10, "every": 5},
            "iterations": 10,
            "seconds": 2.0,
            "runs": runs,
        },  # fmt: skip
    }
    text = page.report(json.loads(json.dumps(results)))
    assert "*A note.*" in text
    assert "| jax-gpu | 3 | 1 | 0 | 2 | 9 s |" in text
    assert "- `t::x: boom`" in text
    assert "| torch-gpu | stopped at the time limit, 240 s |" in text
    assert "| NAC sum | 6.0e-08 | exit 1: x |" in text
    assert "| NAU-NMU | 25 | 1.00e-03 | 2.00e-02 | 20.0 |" in text
    assert "**3/4** solved" in text
    assert "1 of 4 seeds (1); 1 of them unsolved. Unsolved seeds: 1." in text


def test_the_page_is_written_again_from_its_record(tmp_path, capsys):
    """`--from-json`: the skeleton's replay of the committed record writes
    the committed page, runs nothing and writes no record."""
    root = gpu_check.ROOT
    status = gpu_check.main(
        ["--from-json", str(root / "docs/gpu/gpu.json"), "--output", str(tmp_path)]
    )
    saved = json.loads((root / "docs/gpu/gpu.json").read_text())
    assert status == (1 if gpu_check.failed_parts(saved) else 0)
    assert (tmp_path / "gpu.md").read_text() == (root / "docs/gpu.md").read_text()
    assert not (tmp_path / "gpu").exists()  # no record
