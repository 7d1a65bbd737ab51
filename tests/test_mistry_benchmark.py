"""Mistry et al.'s single-module benchmark: its recipes, its table and a run
of examples/mistry_benchmark.py at a tiny budget (two units, two ranges,
two seeds)."""

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from keras_nalu import INALU, NAC, NPU
from nalu_research.experiments import mistry_benchmark
from nalu_research.experiments.mistry_benchmark import (
    PAPER_OPS,
    RECIPES,
    MistryBenchmark,
    benchmark,
    best_units,
    nac_range,
    operations,
    successes,
    tables,
    their_sparsity,
)
from tests.processes import run_in_process

pytestmark = pytest.mark.research  # scipy, and the plot's matplotlib


def parse_args(argv):
    return MistryBenchmark().parse_args(argv)


def test_their_nac_range_solves_their_variance_equation():
    r = nac_range()
    variance = (1 - np.tanh(r) / r) * (r - np.tanh(r / 2)) / (2 * r)
    assert 5 * variance == pytest.approx(2.0, abs=1e-9)  # fan max(2 + 1, 5)
    assert 1 < r < 10  # far beyond glorot's 1.41: the NAC starts saturated
    assert nac_range(10, 10) < r  # a larger fan, a smaller range


def test_each_unit_trains_by_its_recipe():
    args = parse_args(["--ranges", "6", "--seeds", "1", "--eval-size", "16"])
    inalu = benchmark("inalu", args)
    assert (inalu.recipe.clipvalue, inalu.recipe.clipnorm) == (0.1, None)
    # Their penalty after their iteration 10,000, gated per run; reinitialised.
    assert inalu.schedules == {0: (4.0, 10_002, 10_002)}
    assert inalu.penalty_gate is not None and RECIPES["inalu"].inalu_protocol
    assert benchmark("nau", args).penalty_gate is None
    npu = benchmark("npu", args)
    assert npu.schedules == {} and npu.recipe.learning_rate == 5e-3
    assert npu.l1 == {"add": (1e-7, 1e-5), "sub": (1e-7, 1e-5),
                      "mul": (1e-7, 1e-5), "div": (1e-9, 1e-7)}  # fmt: skip
    nmru = benchmark("nmru", args)
    assert (nmru.recipe.clipnorm, nmru.recipe.learning_rate) == (1.0, 1e-2)
    assert nmru.engine_model.layers[0].sign_retrieval
    unsigned = benchmark("nmru-unsigned", args)  # the same recipe, the default NMRU
    assert not unsigned.engine_model.layers[0].sign_retrieval
    assert (unsigned.recipe.clipnorm, unsigned.recipe.learning_rate) == (1.0, 1e-2)
    nau = benchmark("nau-centered", args)
    assert nau.engine_model.layers[0].centered_gradient
    assert nau.schedules == {0: (0.01, 20_000, 35_000)}
    for bench in (inalu, npu, nmru, nau):  # their Adam: PyTorch's epsilon
        assert bench.recipe.adam_epsilon == 1e-8
        assert bench.runs == [(op, 6, 0) for op in ("add", "sub", "mul", "div")]
    # Every recipe says what it is, and where it is not theirs.
    assert all(recipe.description for recipe in RECIPES.values())
    assert "their reinitialisation" in RECIPES["inalu"].description
    assert "Unlike theirs (unclipped)" in RECIPES["realnpu"].description


def _rows(wins, solved_at):
    """Rows of one cell per unit: `wins[unit]` of 4 seeds solved, at
    `solved_at[unit]`."""
    return [
        {"unit": unit, "operation": "div", "range": 2, "seed": seed,
         "success": {"1e-05": seed < wins[unit]},
         "solved_at": {"1e-05": solved_at[unit] if seed < wins[unit] else None}}
        for unit in wins for seed in range(4)
    ]  # fmt: skip


def test_the_best_unit_has_the_most_successes_then_the_earliest():
    units = ["nau", "nmu", "npu"]
    rows = _rows({"nau": 3, "nmu": 3, "npu": 1}, {"nau": 9000, "nmu": 4000, "npu": 0})
    assert best_units(rows, units, "div", 2, 1e-5) == {"nmu"}
    rows = _rows({"nau": 2, "nmu": 2, "npu": 0}, {"nau": 5000, "nmu": 5000, "npu": 0})
    assert best_units(rows, units, "div", 2, 1e-5) == {"nau", "nmu"}
    rows = _rows(dict.fromkeys(units, 0), dict.fromkeys(units, 0))
    assert best_units(rows, units, "div", 2, 1e-5) == set()  # none is best
    args = parse_args(["--units", "nau", "nmu", "npu", "--operations", "div",
                       "--ranges", "2"])  # fmt: skip
    rows = _rows({"nau": 3, "nmu": 1, "npu": 0}, {"nau": 1000, "nmu": 0, "npu": 0})
    line = [t for t in tables(rows, args) if t.startswith("| 2 |")]
    assert line == ["| 2 | U[-1.2, -1.1] | U[-6.1, -1.2] | **3/4** [0.30, 0.95] "
                    "| 1/4 [0.05, 0.70] | 0/4 [0.00, 0.49] |",
                    "| 2 | 1,000 | 0 | – |"]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--units", "nau", "nau"], "--units names a value twice"),
        (["--ranges", "9"], "invalid choice: 9"),
        (["--units", "gnalu"], "invalid choice: 'gnalu'"),
        (["--epsilon", "2"], "--epsilon takes numbers in (0, 1)"),
    ],
)
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


def test_a_tiny_grid_prints_its_tables_and_writes_its_record(tmp_path):
    result = run_in_process(
        "mistry_benchmark", "--units", "nau", "nmu", "--ranges", "0", "6",
        "--seeds", "2", "--iterations", "200", "--eval-every", "100",
        "--eval-size", "256", "--json", str(tmp_path / "m.json"),
        "--checkpoint-dir", str(tmp_path / "ck"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    header = "| range | interpolation | extrapolation | NAU | NMU |"
    assert out.count(header) == 4  # one table per operation
    for operation in ("a+b", "a-b", "a*b", "a/b"):
        assert f"{operation}: solved at epsilon 1e-05" in out
    cells = r"( \**\d/2\** \[\d\.\d\d, \d\.\d\d\] \|){2}"
    assert (
        len(re.findall(r"\| 0 \| U\[-20, -10\] \| U\[-40, -20\] \|" + cells, out)) == 4
    )
    assert len(re.findall(r"\| 6 \| U\[1, 2\] \| U\[2, 6\] \|" + cells, out)) == 4
    data = json.loads((tmp_path / "m.json").read_text())
    assert set(data) >= {"runs", "ms_per_run_iteration", "wall_seconds", "recipes",
                         "ranges", "arguments", "backend"}  # fmt: skip
    assert set(data["ms_per_run_iteration"]) == {"nau", "nmu"}
    assert len(data["runs"]) == 2 * 4 * 2  # cells: units x operations x ranges
    assert all(len(cell["seed"]) == 2 for cell in data["runs"])
    runs = mistry_benchmark.runs_of(data["runs"])
    assert mistry_benchmark.cells(runs) == data["runs"]
    assert len(runs) == 2 * 4 * 2 * 2  # units x operations x ranges x seeds
    assert set(runs[0]) == {
        "unit", "operation", "range", "seed", "success", "solved_at", "threshold",
        "iteration", "extrapolation_mse", "sparsity_error", "reinitializations",
    }  # fmt: skip
    assert set(runs[0]["success"]) == {"1e-05", "0.0001"}
    # Their thresholds: rows of their exp_setups.csv (tests/test_metrics.py),
    # at epsilon 1e-5 and, 100 times larger, at 1e-4.
    add = next(r for r in runs if (r["operation"], r["range"]) == ("add", 0))
    mul = next(r for r in runs if (r["operation"], r["range"]) == ("mul", 6))
    assert add["threshold"]["1e-05"] == pytest.approx(3.667e-07, rel=1e-3)
    assert mul["threshold"]["1e-05"] == pytest.approx(1.202e-07, rel=1e-3)
    assert add["threshold"]["0.0001"] == pytest.approx(3.667e-05, rel=1e-3)
    assert {r["iteration"] for r in runs} <= {0, 100, 200}
    assert (tmp_path / "m.png").stat().st_size > 1000
    assert not (tmp_path / "ck").exists()
    assert mistry_benchmark.RECIPES["nau"].model == data["recipes"]["nau"]["model"]


def test_nac_star_is_the_multiplicative_nac_with_their_nac_init():
    args = parse_args(["--ranges", "6", "--seeds", "1", "--eval-size", "16"])
    layer = benchmark("nacmul", args).engine_model.layers[0]
    assert isinstance(layer, NAC) and layer.multiplicative
    assert layer.epsilon == 1e-7  # theirs
    assert layer.get_config()["w_hat_initializer"]["config"]["maxval"] == nac_range()


def _fake(layer, **weights):
    runs = len(next(iter(weights.values())))
    return SimpleNamespace(runs=range(runs), effective_weights=lambda: weights,
                           engine_model=SimpleNamespace(layers=[layer]))  # fmt: skip


def test_their_sparsity_reads_every_w_of_the_unit():
    kernel = np.array([[[0.9], [0.0]], [[1.0], [-0.3]]])  # errors 0.1, 0.3
    imaginary = np.array([[[0.4], [0.0]], [[0.0], [0.0]]])  # 0.4, 0
    gate = np.array([[0.5], [0.5]])  # not a W: not read
    got = their_sparsity(_fake(NPU(1), kernel=kernel, imaginary_kernel=imaginary,
                               gate=gate))  # fmt: skip
    assert got == pytest.approx([0.4, 0.3])  # the largest of W_re and W_im
    mul = np.array([[[0.8], [1.0]], [[0.0], [-0.6]]])  # 0.2, 0.4
    got = their_sparsity(_fake(INALU(1), kernel=kernel, mul_kernel=mul, gate=gate))
    assert got == pytest.approx([0.15, 0.35])  # the iNALU's: the paths' mean


def test_solved_at_and_sparsity_are_medians_of_the_successes():
    runs = [{"success": {"1e-05": s}, "solved_at": {"1e-05": at},
             "sparsity_error": e}
            for s, at, e in [(True, 1000, 0.1), (True, 3000, 0.3),
                             (True, 8000, 0.2), (False, None, 0.5)]]  # fmt: skip
    assert successes(runs, "1e-05") == "3,000 / 0.2"
    assert successes(runs[3:], "1e-05") == "–"


def test_paper_cells_are_theirs_and_our_recipes():
    args = parse_args(["--paper-cells"])
    theirs = ["nac", "nacmul", "nalu", "inalu", "nau", "nmu", "npu", "realnpu"]
    # Their 23 cells but G-NALU's 4 (not in the package).
    assert sum(len(operations(unit, args)) for unit in theirs) == 19
    assert operations("nmu", args) == ["mul"]
    assert operations("nacmul", args) == ["mul", "div"]
    assert operations("nmru", args) == [] and "nmru" not in PAPER_OPS
    units = [run[0] for run in MistryBenchmark().runs(args)]
    assert "nmru" not in units and "nmu-center" in units
    assert benchmark("nmu", parse_args(["--paper-cells", "--ranges", "6", "--seeds",
                     "1", "--eval-size", "8"])).runs == [("mul", 6, 0)]  # fmt: skip
    assert operations("nmu", parse_args([])) == ["add", "sub", "mul", "div"]
    # A unit not trained on an operation shows "–" in its tables.
    args = parse_args(["--units", "nau", "nmu", "--operations", "div", "--ranges", "2",
                       "--paper-cells"])  # fmt: skip
    rows = [r for r in _rows({"nau": 1, "nmu": 0}, {"nau": 1000, "nmu": 0})
            if r["unit"] == "nau"]  # fmt: skip
    lines = [t for t in tables(rows, args) if t.startswith("| 2 |")]
    assert lines == ["| 2 | U[-1.2, -1.1] | U[-6.1, -1.2] | **1/4** [0.05, 0.70] | – |",
                     "| 2 | 1,000 | – |"]  # fmt: skip


def test_the_best_unit_per_operation_is_the_best_on_its_worst_range(tmp_path):
    """`records.mistry_benchmark.per_operation`: the README's table."""
    from nalu_research.records.mistry_benchmark import per_operation

    wins = {  # (unit, operation) -> successes on ranges 0 and 4, of 2 seeds
        ("nau", "add"): (2, 2), ("nalu", "add"): (1, 2), ("nmru", "add"): (2, 2),
        ("nau", "div"): (0, 0), ("nalu", "div"): (0, 1), ("nmru", "div"): (2, 1),
    }  # fmt: skip
    runs = [
        {"unit": unit, "operation": op, "range": index, "seed": seed,
         "success": {"1e-05": seed < wins[unit, op][i]}, "solved_at": {"1e-05": 1000},
         "threshold": {"1e-05": 1e-9}, "iteration": 1000, "extrapolation_mse": 0.0,
         "sparsity_error": 0.0, "reinitializations": 0}
        for (unit, op) in wins for i, index in enumerate((0, 4)) for seed in (0, 1)
    ]  # fmt: skip
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({
        "arguments": {"units": ["nau", "nalu", "nmru"], "operations": ["add", "div"],
                      "ranges": [0, 4], "seeds": 2, "epsilon": [1e-5]},
        "runs": mistry_benchmark.cells(runs),
    }))  # fmt: skip
    lines = per_operation(path=str(path)).splitlines()
    assert lines[2].split(" | ")[1:] == [
        "NAU, NMRU",
        "2/2 (every range)",
        "4/4",
        "3/4 |",
    ]  # a tie: both named
    assert lines[3].split(" | ")[1:] == ["NMRU", "1/2 (range 4)", "3/4", "1/4 |"]
