import json
from pathlib import Path

import pytest

from tests.processes import run_in_process

BENCHMARK = Path(__file__).resolve().parents[1] / "examples" / "serving_benchmark.py"


def test_serving_benchmark_smoke_run_prints_ratios(tmp_path):
    result = run_in_process(
        "serving_benchmark", "--quick", "--json", str(tmp_path / "s.json"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "NALU / Dense, both as Keras exports them: batch-1 p50 " in result.stdout
    assert "NALU / Dense, both compiled by XLA: batch-1 p50 " in result.stdout
    assert "NALUCell cost per step at length 100 / at length 10:" in result.stdout
    data = json.loads((tmp_path / "s.json").read_text())
    assert set(data["latency_ms"]) == {"nalu", "dense", "nalu_xla", "dense_xla"}
    assert all(v > 0 for v in data["rows_per_second"].values())
    steps = data["us_per_step_batch_32"]["nalu_cell"]
    assert set(steps) == {"10", "100"}
    # The marginal cost: the time per call's difference over the extra steps.
    marginal = data["marginal_us_per_step_batch_32"]["nalu_cell"]["10-100"]
    assert marginal == pytest.approx((steps["100"] * 100 - steps["10"] * 10) / 90)


def test_serving_benchmark_rejects_bad_arguments(capsys):
    from nalu_research.experiments import serving_benchmark

    with pytest.raises(SystemExit) as exit_info:
        serving_benchmark.main(["--requests", "0"])  # parsing fails before any work
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "argument --requests: expected a positive integer, got '0'" in error
