"""The oracle of Mistry et al.'s own code (nalu_research.oracle): the
stand-in writer, their criterion, the flags read from their script, the
comparison with ours and the resumable runner. Fast, and without their
repositories (CI has no mirror): the script is a literal snippet below."""

import json
import math
import subprocess
import sys

import pytest

from nalu_research import oracle
from nalu_research.experiments import mistry_benchmark

pytestmark = pytest.mark.research

# A snippet in the shape of their single_layer_benchmark.sh: the ranges, a
# variable, one block live and one commented out, with redirections.
SCRIPT = r"""#!/bin/bash
verbose_flag=''
no_save_flag='--no-save'
log_interval='1000'

interpolation_ranges=( '[-20,-10]' '[-2,-1]' '[-1.2,-1.1]' '[-0.2,-0.1]' '[-2,2]'          '[0.1,0.2]' '[1,2]' '[1.1,1.2]' '[10,20]' )
extrapolation_ranges=( '[-40,-20]' '[-6,-2]' '[-6.1,-1.2]' '[-2,-0.2]'  '[[-6,-2],[2,6]]' '[0.2,2]'   '[2,6]' '[1.2,6]'  '[20,40]' )

for ((i=0;i<${#interpolation_ranges[@]};++i))
  do
  for seed in $(eval echo {$1..$2})
    do
    experiment_name='benchmark/sltr-in2/NMU'
    mkdir -p /data/nalms/logs/${experiment_name}/errors
    python3 -u experiments/single_layer_benchmark.py \
    --operation mul --layer-type ReRegualizedLinearMNAC --nac-mul mnac \
    --regualizer-scaling-start 20000 --regualizer-scaling-end 35000 \
    --interpolation-range ${interpolation_ranges[i]} --extrapolation-range ${extrapolation_ranges[i]} \
    --seed ${seed} --max-iterations 50000 ${verbose_flag} --log-interval ${log_interval} \
    --name-prefix ${experiment_name} --remove-existing-data --no-cuda ${no_save_flag} \
    > /data/nalms/logs/${experiment_name}/${interpolation_ranges[i]}-${seed}.out \
    2> /data/nalms/logs/${experiment_name}/errors/${interpolation_ranges[i]}-${seed}.err &

#    experiment_name='benchmark/sltr-in2/div/NPU'
#    mkdir -p /data/nalms/logs/${experiment_name}/errors
#    python3 -u experiments/single_layer_benchmark.py \
#    --operation div --layer-type NPU --nac-mul npu \
#    --learning-rate 5e-3 --regualizer-beta-start 1e-9 --regualizer-beta-end 1e-7 \
#    --regualizer-l1 --regualizer-shape none --regualizer 0 \
#    --interpolation-range ${interpolation_ranges[i]} --extrapolation-range ${extrapolation_ranges[i]} \
#    --seed ${seed} --max-iterations 50000 ${verbose_flag} --log-interval ${log_interval} \
#    --name-prefix ${experiment_name} --remove-existing-data --no-cuda ${no_save_flag} \
#    > /data/nalms/logs/${experiment_name}/${interpolation_ranges[i]}-${seed}.out \
#    2> /data/nalms/logs/${experiment_name}/errors/${interpolation_ranges[i]}-${seed}.err &
  done
  wait
done
"""  # noqa: E501
SCRIPT_PATH = oracle.REPOSITORIES["nalm-benchmark"]["script"]


def write_jsonl(path, evaluations, extra=()):
    """A run's JSONL as the stand-in writes it: `(step, interpolation,
    extrapolation, sparsity)` per evaluation, plus `extra` rows."""
    with open(path, "w") as file:
        for step, interpolation, extrapolation, sparsity in evaluations:
            for tag, value in (
                ("/metric/valid/interpolation", interpolation),
                ("/metric/test/extrapolation", extrapolation),
                ("/network/layer_1/W/sparsity_error", sparsity),
                ("/network/layer_1/gate/sparsity_error", 0.9),
            ):
                file.write(
                    json.dumps({"tag": tag, "value": value, "step": step}) + "\n"
                )
        for row in extra:
            file.write(json.dumps(row) + "\n")


def test_the_stand_in_writer_logs_scalars_at_full_precision(tmp_path):
    stubs = oracle.write_stubs(tmp_path / "stubs")
    jsonl = tmp_path / "run.jsonl"
    code = (
        "import torch, torchvision, pandas, tensorflow\n"
        "from tensorboardX import SummaryWriter\n"
        "w = SummaryWriter(log_dir='x')\n"
        "x = torch.tensor(1.234567891e-9)\n"
        "w.add_scalar('/metric/test/extrapolation', x, 1000)\n"
        "w.add_scalar('/metric/valid/interpolation', 0.1 + 0.2, 1000)\n"
        "w.add_text('reinit', 0, 2000)\n"
        "w.add_histogram('W', torch.zeros(2), 1000)\n"
        "w.close()\n"
    )
    env = {oracle.JSONL_VARIABLE: str(jsonl), "PYTHONPATH": str(stubs)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert rows[0] == {
        "tag": "/metric/test/extrapolation",
        "value": float(__import__("numpy").float32(1.234567891e-9)),
        "step": 1000,
    }
    assert rows[1]["value"] == 0.1 + 0.2  # not rounded to 5 decimals
    assert rows[2] == {"tag": "reinit", "text": "0", "step": 2000}
    assert len(rows) == 3


def test_score_is_their_criterion(tmp_path):
    jsonl = tmp_path / "run.jsonl"
    write_jsonl(
        jsonl,
        [
            (0, 10.0, 50.0, 0.5),
            (1000, 1e-3, 2e-10, 0.3),  # below the threshold first here
            (2000, 1e-6, 5e-9, 0.2),  # the best interpolation: not solved
            (3000, float("nan"), float("nan"), 0.1),
            (4000, 1e-6, 1e-12, 0.05),  # equal interpolation, later: not the best
        ],
    )
    result = oracle.score(jsonl, 1e-9)
    assert result["iteration"] == 2000
    assert not result["success"]
    assert result["solved_at"] == 1000
    assert result["sparsity_error"] == 0.2  # W's, not the gate's
    assert result["extrapolation_mse"] == 5e-9
    assert oracle.score(jsonl, 1e-8)["success"]
    assert oracle.score(jsonl, 1e-13)["solved_at"] is None


def test_their_npu_sparsity_averages_real_and_imaginary(tmp_path):
    jsonl = tmp_path / "run.jsonl"
    rows = [
        {"tag": "/metric/valid/interpolation", "value": 1.0, "step": 0},
        {"tag": "/metric/test/extrapolation", "value": 1.0, "step": 0},
        {"tag": "/n/W_real/sparsity_error", "value": 0.4, "step": 0},
        {"tag": "/n/W_im/sparsity_error", "value": 0.2, "step": 0},
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert math.isclose(oracle.score(jsonl, 1.0)["sparsity_error"], 0.3)


def test_flags_are_read_from_the_script():
    nmu = oracle.script_command(SCRIPT, "benchmark/sltr-in2/NMU", 6, 3, 2000)
    assert nmu == [
        "experiments/single_layer_benchmark.py",
        "--operation",
        "mul",
        "--layer-type",
        "ReRegualizedLinearMNAC",
        "--nac-mul",
        "mnac",
        "--regualizer-scaling-start",
        "20000",
        "--regualizer-scaling-end",
        "35000",
        "--interpolation-range",
        "[1,2]",
        "--extrapolation-range",
        "[2,6]",
        "--seed",
        "3",
        "--max-iterations",
        "2000",
        "--log-interval",
        "1000",
        "--name-prefix",
        "benchmark/sltr-in2/NMU",
        "--remove-existing-data",
        "--no-cuda",
        "--no-save",
    ]
    npu = oracle.script_command(SCRIPT, "benchmark/sltr-in2/div/NPU", 4, 0, 50_000)
    flags = dict(zip(npu[1::2], npu[2::2], strict=False))
    assert npu[npu.index("--learning-rate") + 1] == "5e-3"
    assert npu[npu.index("--regualizer-beta-start") + 1] == "1e-9"
    assert "--regualizer-l1" in npu
    assert flags["--operation"] == "div"
    assert npu[npu.index("--extrapolation-range") + 1] == "[[-6,-2],[2,6]]"
    assert npu[npu.index("--max-iterations") + 1] == "50000"
    with pytest.raises(KeyError):
        oracle.script_command(SCRIPT, "benchmark/sltr-in2/add/NAU", 0, 0, 10)
    oracle.check_ranges(SCRIPT)  # their nine ranges are ours


def test_command_for_two_cells(tmp_path):
    (tmp_path / SCRIPT_PATH).parent.mkdir(parents=True)
    (tmp_path / SCRIPT_PATH).write_text(SCRIPT)
    nmu = oracle.command(("nmu", "mul"), 0, 1, 100, tmp_path, python="python3")
    assert nmu[:3] == ["python3", "-u", "experiments/single_layer_benchmark.py"]
    assert nmu[nmu.index("--interpolation-range") + 1] == "[-20,-10]"
    assert nmu[nmu.index("--layer-type") + 1] == "ReRegualizedLinearMNAC"
    npu = oracle.command(("npu", "div"), 8, 24, 100, tmp_path, python="python3")
    assert npu[npu.index("--layer-type") + 1] == "NPU"
    assert npu[npu.index("--seed") + 1] == "24"
    assert npu[npu.index("--extrapolation-range") + 1] == "[20,40]"


def record(cells):
    """Synthetic runs: `{(unit, op, range): (solved, runs)}`."""
    runs = []
    for (unit, operation, index), (k, n) in cells.items():
        for seed in range(n):
            runs.append(
                {
                    "unit": unit,
                    "operation": operation,
                    "range": index,
                    "seed": seed,
                    "success": {"1e-05": seed < k},
                }
            )
    return {"runs": runs}


def test_compare_counts_intervals_and_overlap():
    ours = record({("nau", "add", 6): (25, 25), ("nmu", "mul", 6): (2, 25)})
    theirs = record(
        {
            ("nau", "add", 6): (24, 25),
            ("nmu", "mul", 6): (23, 25),
            ("nmu", "mul", 0): (5, 25),
        }
    )
    table = {
        (r["unit"], r["operation"], r["range"]): r for r in oracle.compare(ours, theirs)
    }
    same, apart, missing = (
        table["nau", "add", 6],
        table["nmu", "mul", 6],
        table["nmu", "mul", 0],
    )
    assert (same["ours"]["solved"], same["theirs"]["solved"]) == (25, 24)
    assert same["overlap"] and same["fisher_p"] == pytest.approx(1.0)
    assert not apart["overlap"] and apart["fisher_p"] < 1e-6
    assert apart["ours"]["interval"][1] < apart["theirs"]["interval"][0]
    assert missing["ours"] is None and missing["overlap"] is None
    lines = oracle.comparison_table(oracle.compare(ours, theirs))
    assert len(lines) == 2 + 3 and "**no**" in lines[-1]


def test_compare_reads_our_record_of_a_row_per_cell():
    ours = record({("nau", "add", 6): (25, 25), ("nmu", "mul", 6): (2, 25)})
    theirs = record({("nau", "add", 6): (24, 25), ("nmu", "mul", 6): (23, 25)})
    for run in ours["runs"]:  # the other figures of a run of the benchmark
        run.update(solved_at={"1e-05": None}, iteration=0, extrapolation_mse=1.0,
                   sparsity_error=0.1, reinitializations=0, threshold={})  # fmt: skip
    grouped = {"runs": mistry_benchmark.cells(ours["runs"])}
    assert len(grouped["runs"]) == 2
    assert oracle.compare(grouped, theirs) == oracle.compare(ours, theirs)


def test_the_runner_skips_runs_done(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    done = oracle.run_path(out, ("nau", "add"), 6, 0)
    done.parent.mkdir(parents=True)
    write_jsonl(done, [(0, 1.0, 1.0, 0.5), (1000, 1e-12, 1e-12, 0.0)])
    partial = oracle.run_path(out, ("nau", "add"), 6, 1)
    write_jsonl(partial, [(0, 1.0, 1.0, 0.5)])  # killed before its last
    assert oracle.complete(done, 1000) and not oracle.complete(partial, 1000)
    started = []

    def prepare(mirror, commit, folder):
        (folder / "code" / SCRIPT_PATH).parent.mkdir(parents=True)
        (folder / "code" / SCRIPT_PATH).write_text(
            SCRIPT.replace("benchmark/sltr-in2/NMU", "benchmark/sltr-in2/add/NAU")
        )
        return {"code": folder / "code", "stubs": oracle.write_stubs(folder / "stubs")}

    class Process:
        returncode = 0

        def __init__(self, argv, cwd, env, **kwargs):
            started.append(argv)
            seed = argv[argv.index("--seed") + 1]
            assert env["LSB_DJOB_NUMPROC"] == "1"
            write_jsonl(
                env[oracle.JSONL_VARIABLE],
                [(0, 1.0, 1.0, 0.5), (1000, 1e-3, 2.0 if seed == "1" else 1e-12, 0.1)],
            )

        def poll(self):
            return 0

    monkeypatch.setattr(oracle, "prepare", prepare)
    monkeypatch.setattr(oracle.subprocess, "Popen", Process)
    repositories = {
        "nalm-benchmark": {
            **oracle.REPOSITORIES["nalm-benchmark"],
            "mirror": None,
            "commit": None,
        }
    }
    rows = oracle.run(
        [("nau", "add")], [6], range(3), 1000, out, jobs=2, repositories=repositories
    )
    assert sorted(a[a.index("--seed") + 1] for a in started) == ["1", "2"]
    assert [(r["seed"], r["success"]["1e-05"]) for r in rows] == [
        (0, True),
        (1, False),
        (2, True),
    ]
    text = capsys.readouterr().out
    assert "seed 0: done before, skipped" in text and "[2/2]" in text
    # Run again: everything is done, nothing starts.
    started.clear()
    oracle.run([("nau", "add")], [6], range(3), 1000, out, repositories=repositories)
    assert started == []


def test_a_cell_may_name_its_own_ranges_and_runs_go_seed_by_seed():
    assert oracle.parse_cell("nau/add", [0, 1]) == (("nau", "add"), [0, 1])
    assert oracle.parse_cell("nmu/mul@2,8", [0]) == (("nmu", "mul"), [2, 8])
    for text, words in (
        ("nau/mul", "one of"),  # not a cell of their scripts
        ("nau/add@9", "indices 0 to 8"),
        ("nau/add@x", "indices 0 to 8"),
    ):
        with pytest.raises(ValueError, match=words) as error:
            oracle.parse_cell(text, [0])
        assert repr(text) in str(error.value)
    queue = oracle.runs_of_cells(
        [("nau", "add"), ("nmu", "mul")],
        {("nau", "add"): [0], ("nmu", "mul"): [2, 8]},
        [0, 1],
    )
    assert queue == [
        (("nau", "add"), 0, 0), (("nmu", "mul"), 2, 0), (("nmu", "mul"), 8, 0),
        (("nau", "add"), 0, 1), (("nmu", "mul"), 2, 1), (("nmu", "mul"), 8, 1),
    ]  # fmt: skip


def test_the_command_line_refuses_a_cell_by_name(capsys):
    with pytest.raises(SystemExit):
        oracle.main(["--cells", "nau/add@12", "--seeds", "1"])
    assert "'nau/add@12'" in capsys.readouterr().err


def test_record_only_writes_the_record_of_the_runs_done_and_starts_none(
    tmp_path, monkeypatch
):
    out, record_path = tmp_path / "out", tmp_path / "theirs.json"
    for seed in (0, 2):  # seed 1 never ran
        path = oracle.run_path(out, ("nau", "add"), 6, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, [(0, 1.0, 1.0, 0.5), (1000, 1e-12, 1e-12, 0.0)])
    path.with_suffix(".seconds").write_text("12.5\n")  # kept by the runner

    def refuse(*args, **kwargs):
        raise AssertionError("--record-only started a run")

    monkeypatch.setattr(oracle.subprocess, "Popen", refuse)
    argv = ["--cells", "nau/add@6", "--seeds", "3", "--iterations", "1000",
            "--out", str(out), "--json", str(record_path), "--record-only"]  # fmt: skip
    assert oracle.main(argv) == 0
    written = json.loads(record_path.read_text())
    assert [(r["seed"], r["seconds"]) for r in written["runs"]] == [
        (0, None),
        (2, 12.5),
    ]
    assert written["wall_seconds"] is None and written["iterations"] == 1000
