"""The oracle of Mistry et al.'s own code (examples/mistry_oracle.py): the
stand-in writer, their criterion, the flags read from their script, the
comparison with ours, the resumable runner, the command line and its
record. Fast, and without their repositories (CI has no clone of them):
the script is a literal snippet below."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from nalu_research.experiments import mistry_benchmark, mistry_oracle
from nalu_research.experiments.mistry_oracle import their_code

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
SCRIPT_PATH = their_code.REPOSITORIES["nalm-benchmark"]["script"]


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
    stubs = their_code.write_stubs(tmp_path / "stubs")
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
    env = {their_code.JSONL_VARIABLE: str(jsonl), "PYTHONPATH": str(stubs)}
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
    result = their_code.score(jsonl, 1e-9)
    assert result["iteration"] == 2000
    assert not result["success"]
    assert result["solved_at"] == 1000
    assert result["sparsity_error"] == 0.2  # W's, not the gate's
    assert result["extrapolation_mse"] == 5e-9
    assert their_code.score(jsonl, 1e-8)["success"]
    assert their_code.score(jsonl, 1e-13)["solved_at"] is None


def test_their_npu_sparsity_averages_real_and_imaginary(tmp_path):
    jsonl = tmp_path / "run.jsonl"
    rows = [
        {"tag": "/metric/valid/interpolation", "value": 1.0, "step": 0},
        {"tag": "/metric/test/extrapolation", "value": 1.0, "step": 0},
        {"tag": "/n/W_real/sparsity_error", "value": 0.4, "step": 0},
        {"tag": "/n/W_im/sparsity_error", "value": 0.2, "step": 0},
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert math.isclose(their_code.score(jsonl, 1.0)["sparsity_error"], 0.3)


def test_flags_are_read_from_the_script():
    nmu = their_code.script_command(SCRIPT, "benchmark/sltr-in2/NMU", 6, 3, 2000)
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
    npu = their_code.script_command(SCRIPT, "benchmark/sltr-in2/div/NPU", 4, 0, 50_000)
    flags = dict(zip(npu[1::2], npu[2::2], strict=False))
    assert npu[npu.index("--learning-rate") + 1] == "5e-3"
    assert npu[npu.index("--regualizer-beta-start") + 1] == "1e-9"
    assert "--regualizer-l1" in npu
    assert flags["--operation"] == "div"
    assert npu[npu.index("--extrapolation-range") + 1] == "[[-6,-2],[2,6]]"
    assert npu[npu.index("--max-iterations") + 1] == "50000"
    with pytest.raises(KeyError):
        their_code.script_command(SCRIPT, "benchmark/sltr-in2/add/NAU", 0, 0, 10)
    their_code.check_ranges(SCRIPT)  # their nine ranges are ours


def test_command_for_two_cells(tmp_path):
    (tmp_path / SCRIPT_PATH).parent.mkdir(parents=True)
    (tmp_path / SCRIPT_PATH).write_text(SCRIPT)
    nmu = their_code.command(("nmu", "mul"), 0, 1, 100, tmp_path, python="python3")
    assert nmu[:3] == ["python3", "-u", "experiments/single_layer_benchmark.py"]
    assert nmu[nmu.index("--interpolation-range") + 1] == "[-20,-10]"
    assert nmu[nmu.index("--layer-type") + 1] == "ReRegualizedLinearMNAC"
    npu = their_code.command(("npu", "div"), 8, 24, 100, tmp_path, python="python3")
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
        (r["unit"], r["operation"], r["range"]): r
        for r in mistry_oracle.compare(ours, theirs)
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
    lines = mistry_oracle.comparison_table(mistry_oracle.compare(ours, theirs))
    assert len(lines) == 2 + 3 and "**no**" in lines[-1]


def test_compare_reads_our_record_of_a_row_per_cell():
    ours = record({("nau", "add", 6): (25, 25), ("nmu", "mul", 6): (2, 25)})
    theirs = record({("nau", "add", 6): (24, 25), ("nmu", "mul", 6): (23, 25)})
    for run in ours["runs"]:  # the other figures of a run of the benchmark
        run.update(
            solved_at={"1e-05": None},
            iteration=0,
            extrapolation_mse=1.0,
            sparsity_error=0.1,
            reinitializations=0,
            threshold={},
        )
    grouped = {"runs": mistry_benchmark.cells(ours["runs"])}
    assert len(grouped["runs"]) == 2
    compare = mistry_oracle.compare
    assert compare(grouped, theirs) == compare(ours, theirs)


def fake_their_code(monkeypatch, started):
    """Their code without their repositories: `prepare` writes the snippet
    (its NMU block as the NAU's on +), and their process writes a run's
    metrics at once, solved but for seed 1; `started` gets each command.
    git runs as it is."""
    real_run = subprocess.run

    def prepare(repository, commit, folder):
        (folder / "code" / SCRIPT_PATH).parent.mkdir(parents=True)
        (folder / "code" / SCRIPT_PATH).write_text(
            SCRIPT.replace("benchmark/sltr-in2/NMU", "benchmark/sltr-in2/add/NAU")
        )
        stubs = their_code.write_stubs(folder / "stubs")
        return {"code": folder / "code", "stubs": stubs}

    def run(argv, cwd=None, env=None, **kwargs):
        if argv[0] == "git":
            return real_run(argv, cwd=cwd, env=env, **kwargs)
        started.append(argv)
        assert env["LSB_DJOB_NUMPROC"] == "1"
        seed, last = (
            argv[argv.index(flag) + 1] for flag in ("--seed", "--max-iterations")
        )
        solved = 2.0 if seed == "1" else 1e-12
        metrics = [(0, 1.0, 1.0, 0.5), (int(last), 1e-3, solved, 0.1)]
        write_jsonl(env[their_code.JSONL_VARIABLE], metrics)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(their_code, "prepare", prepare)
    monkeypatch.setattr(mistry_oracle.subprocess, "run", run)


def clone(folder, monkeypatch):
    """A git repository at `folder` whose one commit stands for the commit
    studied of nalm-benchmark; returns the commit."""
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    commit = head.stdout.strip()
    monkeypatch.setitem(their_code.REPOSITORIES["nalm-benchmark"], "commit", commit)
    return commit


def test_the_runner_skips_runs_done(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    done = mistry_oracle.run_path(out, ("nau", "add"), 6, 0)
    done.parent.mkdir(parents=True)
    write_jsonl(done, [(0, 1.0, 1.0, 0.5), (1000, 1e-12, 1e-12, 0.0)])
    partial = mistry_oracle.run_path(out, ("nau", "add"), 6, 1)
    write_jsonl(partial, [(0, 1.0, 1.0, 0.5)])  # killed before its last
    assert their_code.complete(done, 1000) and not their_code.complete(partial, 1000)
    started = []
    fake_their_code(monkeypatch, started)
    clones = {"nalm-benchmark": None}
    cells = {("nau", "add"): [6]}
    rows = mistry_oracle.run(cells, range(3), 1000, out, clones, jobs=2)
    assert sorted(a[a.index("--seed") + 1] for a in started) == ["1", "2"]
    assert [(r["seed"], r["success"]["1e-05"]) for r in rows] == [
        (0, True),
        (1, False),
        (2, True),
    ]
    assert rows[0]["seconds"] is None and rows[1]["seconds"] >= 0  # kept beside
    text = capsys.readouterr().out
    assert "seed 0: done before, skipped" in text and "[2/2]" in text
    # Run again: everything is done, nothing starts.
    started.clear()
    mistry_oracle.run(cells, range(3), 1000, out, clones)
    assert started == []


def test_a_cell_may_name_its_own_ranges_and_runs_go_seed_by_seed():
    assert mistry_oracle.parse_cell("nau/add", [0, 1]) == (("nau", "add"), [0, 1])
    assert mistry_oracle.parse_cell("nmu/mul@2,8", [0]) == (("nmu", "mul"), [2, 8])
    for text, words in (
        ("nau/mul", "one of"),  # not a cell of their scripts
        ("nau/add@9", "indices 0 to 8"),
        ("nau/add@x", "indices 0 to 8"),
    ):
        with pytest.raises(ValueError, match=words) as error:
            mistry_oracle.parse_cell(text, [0])
        assert repr(text) in str(error.value)
    queue = mistry_oracle.runs_of_cells(
        {("nau", "add"): [0], ("nmu", "mul"): [2, 8]}, [0, 1]
    )
    # fmt: off
    assert queue == [
        (("nau", "add"), 0, 0), (("nmu", "mul"), 2, 0), (("nmu", "mul"), 8, 0),
        (("nau", "add"), 0, 1), (("nmu", "mul"), 2, 1), (("nmu", "mul"), 8, 1),
    ]
    # fmt: on


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cells", "nau/add@12"], "argument --cells: cell 'nau/add@12'"),
        (["--seeds", "-1"], "argument --seeds: expected a positive integer, got '-1'"),
        (
            ["--iterations", "0"],
            "argument --iterations: expected a positive integer, got '0'",
        ),
        (
            ["--first-seed", "-2"],
            "argument --first-seed: expected an integer >= 0, got '-2'",
        ),
        (["--jobs", "0"], "argument --jobs: expected a positive integer, got '0'"),
        (["--ranges", "9"], "argument --ranges: invalid choice: 9"),
        (["--ranges", "x"], "argument --ranges: invalid int value: 'x'"),
    ],
)
def test_the_command_line_refuses_a_bad_argument(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        mistry_oracle.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_peer_code_is_one_line_naming_what_to_clone_where(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(mistry_oracle.PEER_VARIABLE, str(tmp_path / "peers"))
    (tmp_path / "peers" / "nalm-benchmark").mkdir(parents=True)  # not a clone
    with pytest.raises(SystemExit) as exit_info:
        mistry_oracle.main(["--cells", "nau/add", "nmru/div", "--seeds", "1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "error: argument --peer-dir: " in err
    for name, commit in (("nalm-benchmark", "120ec8e7"), ("nalm-division", "61fa9738")):
        where = tmp_path / "peers" / name
        assert f"git clone https://github.com/bmistry4/{name} {where}" in err
        assert commit in err
    # --peer-dir wins over the variable; only the cells' repositories count.
    with pytest.raises(SystemExit):
        mistry_oracle.main(["--cells", "nau/add", "--peer-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert str(tmp_path / "nalm-benchmark") in err and "nalm-division" not in err
    # A clone without the commit studied: fetch it.
    clone(tmp_path / "nalm-benchmark", monkeypatch)
    monkeypatch.setitem(their_code.REPOSITORIES["nalm-benchmark"], "commit", "0" * 40)
    with pytest.raises(SystemExit):
        mistry_oracle.main(["--cells", "nau/add", "--peer-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert f"lacks commit {'0' * 40}: git -C {tmp_path / 'nalm-benchmark'} fetch" in err


def test_the_record_is_the_skeletons_with_their_runs(tmp_path, monkeypatch, capsys):
    peers, out, path = tmp_path / "peers", tmp_path / "out", tmp_path / "theirs.json"
    commit = clone(peers / "nalm-benchmark", monkeypatch)
    started = []
    fake_their_code(monkeypatch, started)
    argv = "--cells nau/add@6 --seeds 2 --iterations 1000".split()
    argv += ["--peer-dir", str(peers), "--out", str(out), "--json", str(path)]
    assert mistry_oracle.main(argv) == 0
    assert len(started) == 2
    assert "nau add range 6: 1/2 solved (epsilon 1e-05)" in capsys.readouterr().out
    written = json.loads(path.read_text())
    assert written["experiment"] == "mistry_oracle"
    assert written["command"][0] == "examples/mistry_oracle.py"
    assert "commit" in written and written["versions"]["python"]
    assert written["arguments"]["peer_dir"] == str(peers)
    assert written["budget"] == {"iterations": 1000}
    assert written["code"]["nalm-benchmark"]["commit"] == commit
    assert set(written["flags"]) == {"nau/add"}
    assert [(r["seed"], r["success"]["1e-05"]) for r in written["runs"]] == [
        (0, True),
        (1, False),
    ]
    assert written["wall_seconds"] >= 0


def test_record_only_writes_the_record_of_the_runs_done_and_starts_none(
    tmp_path, monkeypatch
):
    out, record_path = tmp_path / "out", tmp_path / "theirs.json"
    for seed in (0, 2):  # seed 1 never ran
        path = mistry_oracle.run_path(out, ("nau", "add"), 6, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, [(0, 1.0, 1.0, 0.5), (1000, 1e-12, 1e-12, 0.0)])
    path.with_suffix(".seconds").write_text("12.5\n")  # kept by the runner

    real_run = subprocess.run

    def refuse(argv, **kwargs):  # but the record's own `git rev-parse HEAD`
        assert argv[:2] == ["git", "rev-parse"] or argv[:2] == ["git", "status"]
        return real_run(argv, **kwargs)

    monkeypatch.setattr(mistry_oracle.subprocess, "run", refuse)
    monkeypatch.setenv(mistry_oracle.PEER_VARIABLE, str(tmp_path / "none"))
    argv = "--cells nau/add@6 --seeds 3 --iterations 1000 --record-only".split()
    argv += ["--out", str(out), "--json", str(record_path)]
    assert mistry_oracle.main(argv) == 0
    written = json.loads(record_path.read_text())
    assert [(r["seed"], r["seconds"]) for r in written["runs"]] == [
        (0, None),
        (2, 12.5),
    ]
    assert written["wall_seconds"] is None and written["budget"]["iterations"] == 1000


def test_compare_prints_the_table_of_two_records(tmp_path, capsys):
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    ours.write_text(json.dumps(record({("nau", "add", 6): (25, 25)})))
    theirs.write_text(json.dumps(record({("nau", "add", 6): (24, 25)})))
    argv = ["--compare", str(ours), "--json", str(theirs)]
    assert mistry_oracle.main(argv) == 0
    assert "| nau | add | 6 | 25/25 [" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        mistry_oracle.main(["--compare", str(ours), "--json", str(tmp_path / "no")])
    assert exit_info.value.code == 2
    assert "argument --json: expected their record" in capsys.readouterr().err


def test_the_committed_record_still_compares():
    docs = Path(__file__).resolve().parents[1] / "docs/experiments/mistry-benchmark"
    ours, theirs = (
        json.loads((docs / f"mistry_{name}.json").read_text())
        for name in ("benchmark", "oracle")
    )
    table = mistry_oracle.compare(ours, theirs)
    cells = {(r["unit"], r["operation"], r["range"]) for r in theirs["runs"]}
    assert len(table) == len(cells)
    assert all(row["ours"] is not None for row in table)
