"""Mistry, Farrahi & Hare's own PyTorch code, run beside ours as an oracle.

Their benchmark (bmistry4/nalm-benchmark, `lfs_batch_jobs/single_layer_task/
benchmarking/single_layer_benchmark.sh`, and for the NMRU bmistry4/
nalm-division, `lfs_batch_jobs/single_layer_task/neurips_2021/sltr-in2.sh`)
is run here as it is, unmodified: `prepare` extracts a commit of a mirrored
repository (`git archive`) into a temporary folder; `command` reads, from
that commit's script itself, the flags of a cell (their unit x operation)
and the nine ranges; `run` starts one process per run, two at a time, one
thread each (`LSB_DJOB_NUMPROC=1`, which their script turns into
`torch.set_num_threads(1)`); `score` applies their criterion to what the
run logged; `compare` sets their success counts beside ours
(`nalu_research.experiments.mistry_benchmark`) cell by cell.

Their metrics are read from a stand-in for `tensorboardX`: their stdout
prints the errors with 5 decimals (`%.5f`), too coarse for thresholds of
1e-9. The stand-ins, in a folder put first on `PYTHONPATH`:

- `tensorboardX`: its `SummaryWriter` appends `{"tag", "value", "step"}`
  (the value as a float64, at full precision) of every `add_scalar`, and
  `{"tag", "text", "step"}` of every `add_text` (the iNALU's
  reinitialisations), to the JSONL file named by the environment variable
  `MISTRY_ORACLE_JSONL` (`JSONL_VARIABLE`); histograms are dropped (their
  code writes them only with `--verbose`, which the script never passes).
  The real package is not installed here.
- `torchvision`, `pandas`, `tensorflow`: empty modules. `import stable_nalu`
  imports them at module level (its MNIST / SVHN datasets and networks, its
  tensorboard readers) but uses them only inside functions the
  single-layer task never calls. torchvision and pandas are not installed
  here; tensorflow is, and the empty one also saves its import (seconds per
  run).

    python -m nalu_research.oracle --cells nau/add nmu/mul --ranges 6 \\
        --seeds 1 --iterations 2000
    python -m nalu_research.oracle --compare results/mistry_benchmark.json
"""

import ast
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRRORS = Path("/work/.mirror")
# The two repositories, at the commits studied (issue 67's design study).
REPOSITORIES = {
    "nalm-benchmark": {
        "name": "bmistry4/nalm-benchmark",
        "mirror": MIRRORS / "bmistry4+nalm-benchmark" / "repo",
        "commit": "120ec8e7614c8bf496302230bd0ffa95e8c571a4",
        "script": "lfs_batch_jobs/single_layer_task/benchmarking/"
        "single_layer_benchmark.sh",
    },
    "nalm-division": {
        "name": "bmistry4/nalm-division",
        "mirror": MIRRORS / "bmistry4+nalm-division" / "repo",
        "commit": "61fa973820e2bc065769c4c4140b60ca94de3573",
        "script": "lfs_batch_jobs/single_layer_task/neurips_2021/sltr-in2.sh",
    },
}
# (unit, operation) -> (repository, the script's `experiment_name` of its
# block). The units are `mistry_benchmark.RECIPES`' keys; their figures'
# 19 cells without G-NALU, and the NMRU on division (nalm-division).
CELLS = {
    **{
        (unit, op): ("nalm-benchmark", f"benchmark/sltr-in2/{op}/{name}")
        for unit, name in (("nac", "NAC"), ("nau", "NAU"))
        for op in ("add", "sub")
    },
    ("nmu", "mul"): ("nalm-benchmark", "benchmark/sltr-in2/NMU"),
    **{
        (unit, op): ("nalm-benchmark", f"benchmark/sltr-in2/{op}/{name}")
        for unit, name, ops in (
            ("nacmul", "MNAC", ("mul", "div")),
            ("npu", "NPU", ("mul", "div")),
            ("realnpu", "RealNPU", ("mul", "div")),
            ("nalu", "NALU", ("add", "sub", "mul", "div")),
            ("inalu", "iNALU", ("add", "sub", "mul", "div")),
        )
        for op in ops
    },
    ("nmru", "div"): ("nalm-division", "sltr-in2/sign-nmru"),
}
JSONL_VARIABLE = "MISTRY_ORACLE_JSONL"
INTERPOLATION = "metric/valid/interpolation"
EXTRAPOLATION = "metric/test/extrapolation"
EPSILONS = (1e-5, 1e-4)
RECORD = "results/mistry_oracle.json"

_TENSORBOARDX = '''"""A stand-in for tensorboardX (nalu_research.oracle).

Each scalar as a line {"tag", "value", "step"} of the file named by $@VARIABLE@.
"""
import json
import os


def _number(value):
    value = value.item() if hasattr(value, "item") else value
    return float(value)


class SummaryWriter:
    def __init__(self, log_dir=None, *args, **kwargs):
        self.log_dir = log_dir
        self._path = os.environ.get("@VARIABLE@")

    def _write(self, row):
        if self._path:
            with open(self._path, "a") as file:
                file.write(json.dumps(row) + "\\n")

    def add_scalar(self, tag, scalar_value, global_step=None, *args, **kwargs):
        self._write({"tag": tag, "value": _number(scalar_value), "step": global_step})

    def add_text(self, tag, text_string, global_step=None, *args, **kwargs):
        self._write({"tag": tag, "text": str(text_string), "step": global_step})

    def add_histogram(self, *args, **kwargs):
        pass

    def flush(self):
        pass

    def close(self):
        pass
'''.replace("@VARIABLE@", JSONL_VARIABLE)
_EMPTY = '"""Empty stand-in (nalu_research.oracle): imported, never used."""\n'
STUBS = {
    "tensorboardX/__init__.py": _TENSORBOARDX,
    "torchvision/__init__.py": _EMPTY,
    "pandas/__init__.py": _EMPTY,
    "tensorflow/__init__.py": _EMPTY,
}


def write_stubs(folder):
    """Writes the stand-in modules (`STUBS`) under `folder`; returns it."""
    folder = Path(folder)
    for name, text in STUBS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


# What a run of their code reads: the package, the experiment scripts and
# the batch scripts (a mirror may lack its large files, e.g. notebooks).
CODE_PATHS = ("experiments", "lfs_batch_jobs", "misc", "stable_nalu")


def prepare(mirror, commit, folder):
    """Extracts `CODE_PATHS` of `commit` of the git directory `mirror` into
    `folder/code` (`git archive | tar -x`, their files as they are) and
    writes the stand-ins into `folder/stubs`. Returns `{"code": path,
    "stubs": path}`.
    """
    code = Path(folder) / "code"
    code.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(mirror), "archive", commit, *CODE_PATHS],
        check=True,
        capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(code)], input=archive.stdout, check=True)
    return {"code": code, "stubs": write_stubs(Path(folder) / "stubs")}


def _assignments(script):
    """The script's simple variables (`name='value'`) and arrays
    (`name=( 'a' 'b' )`)."""
    values = {}
    for line in script.splitlines():
        match = re.match(r"^\s*([A-Za-z_]\w*)=\((.*)\)\s*$", line)
        if match:
            values[match[1]] = shlex.split(match[2])
            continue
        match = re.match(r"^\s*([A-Za-z_]\w*)=('[^']*'|\"[^\"]*\"|\S*)\s*$", line)
        if match:
            values[match[1]] = shlex.split(match[2])[0] if match[2] else ""
    return values


def script_ranges(script):
    """The script's `(interpolation, extrapolation)` range strings, as it
    passes them (`'[1,2]'`, `'[[-6,-2],[2,6]]'`)."""
    values = _assignments(script)
    return list(
        zip(values["interpolation_ranges"], values["extrapolation_ranges"], strict=True)
    )


def script_block(script, experiment_name):
    """The tokens of the `python3 ...` command of the script's block
    `experiment_name='...'`, commented out or not, up to its redirections."""
    lines = [re.sub(r"^\s*#?", "", line) for line in script.splitlines()]
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if re.match(
                rf"""experiment_name=['"]{re.escape(experiment_name)}['"]\s*$""",
                line.strip(),
            )
        ),
        None,
    )
    if start is None:
        raise KeyError(f"no block experiment_name='{experiment_name}' in the script")
    i = next(
        i for i in range(start, len(lines)) if lines[i].lstrip().startswith("python")
    )
    text = []
    while True:
        line = lines[i].rstrip()
        text.append(line.removesuffix("\\"))
        if not line.endswith("\\"):
            break
        i += 1
    tokens = shlex.split(" ".join(text))
    for stop in (">", "2>", "&"):
        if stop in tokens:
            tokens = tokens[: tokens.index(stop)]
    return tokens


def _variable(values, name):
    if name not in values or isinstance(values[name], list):
        raise KeyError(f"the script does not set ${{{name}}}")
    return values[name]


def script_command(script, experiment_name, range_index, seed, iterations):
    """`[script.py, flags...]` for the block `experiment_name` of `script`
    (the text of their shell script): its flags as it gives them, with its
    own `range_index`-th ranges, the `seed` and `iterations` in place of its
    loop's, and its other variables (`${log_interval}`, `${no_save_flag}`,
    ...) as it sets them."""
    values = _assignments(script)
    interpolation, extrapolation = script_ranges(script)[range_index]
    ours = {
        "--interpolation-range": interpolation,
        "--extrapolation-range": extrapolation,
        "--seed": str(seed),
        "--max-iterations": str(iterations),
    }
    values["experiment_name"] = experiment_name
    tokens = script_block(script, experiment_name)
    program = next(i for i, t in enumerate(tokens) if t.endswith(".py"))
    out = [tokens[program]]
    rest = tokens[program + 1 :]
    for k, token in enumerate(rest):
        if k > 0 and rest[k - 1] in ours:
            out.append(ours[rest[k - 1]])
            continue

        token = re.sub(r"\$\{(\w+)\}", lambda m: _variable(values, m[1]), token)
        out += token.split()  # `${verbose_flag}` is empty, `${no_save_flag}` a flag
    return out


def command(cell, range_index, seed, iterations, code, python=sys.executable):
    """The command line of their run of `cell` (`(unit, operation)`) on
    their `range_index`-th range, `seed`, `iterations`, as their script
    gives it (`script_command`), the script read from `code`, the folder
    `prepare` extracted the cell's repository into."""
    repository, experiment_name = CELLS[tuple(cell)]
    script = (Path(code) / REPOSITORIES[repository]["script"]).read_text()
    return [
        python,
        "-u",
        *script_command(script, experiment_name, range_index, seed, iterations),
    ]


def environment(prepared, jsonl):
    """Their process's environment: their `PYTHONPATH=./` after the
    stand-ins, one thread, the metrics to `jsonl`, tensorboard and saves
    inside the temporary folder."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(prepared["stubs"]), str(prepared["code"])]),
        LSB_DJOB_NUMPROC="1",
        OMP_NUM_THREADS="1",
        TENSORBOARD_DIR=str(Path(prepared["code"]).parent / "tensorboard"),
        SAVE_DIR=str(Path(prepared["code"]).parent / "saves"),
        **{JSONL_VARIABLE: str(jsonl)},
    )
    return env


def read_jsonl(jsonl):
    """`{step: {"interpolation", "extrapolation", "sparsity"}}` of a run's
    JSONL: the last value of each tag at a step; the sparsity error as their
    reader takes it (the largest of the tags ending in `W/sparsity_error`
    and `W_real/sparsity_error`, averaged with `W_im/sparsity_error` where
    there is one: the NPU's)."""
    tags = {}
    for line in Path(jsonl).read_text().splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a killed process
            continue
        if "value" in row:
            tags.setdefault(row["step"], {})[row["tag"]] = row["value"]
    steps = {}
    for step, values in sorted(tags.items()):
        entry = {"interpolation": None, "extrapolation": None, "sparsity": None}
        weights, imaginary = [], None
        for tag, value in values.items():
            if tag.endswith(INTERPOLATION):
                entry["interpolation"] = value
            elif tag.endswith(EXTRAPOLATION):
                entry["extrapolation"] = value
            elif tag.endswith(("W/sparsity_error", "W_real/sparsity_error")):
                weights.append(value)
            elif tag.endswith("W_im/sparsity_error"):
                imaginary = value
        if weights:
            entry["sparsity"] = max(weights)
            if imaginary is not None:
                entry["sparsity"] = (entry["sparsity"] + imaginary) / 2
        if entry["interpolation"] is not None:
            steps[step] = entry
    return steps


def complete(jsonl, iterations):
    """Whether the run's JSONL holds its last evaluation (their code
    evaluates at iteration `iterations`, before that step's update)."""
    if not Path(jsonl).exists():
        return False
    entry = read_jsonl(jsonl).get(iterations)
    return entry is not None and entry["extrapolation"] is not None


def score(jsonl, threshold):
    """Their criterion on a run's JSONL: the evaluation of lowest
    interpolation MSE (their `best.model.step`, over the whole run; the
    first of equal ones, NaNs skipped), solved when its extrapolation MSE
    is below `threshold`; `solved_at` the first evaluation whose
    extrapolation MSE is below it (None if none); the sparsity error at the
    best evaluation."""
    steps = read_jsonl(jsonl)
    finite = [
        (e["interpolation"], s)
        for s, e in steps.items()
        if not math.isnan(e["interpolation"])
    ]
    if not finite:
        return {
            "success": False,
            "iteration": None,
            "interpolation_mse": None,
            "extrapolation_mse": None,
            "solved_at": None,
            "sparsity_error": None,
            "evaluations": len(steps),
        }
    best = min(finite)[1]
    extrapolation = steps[best]["extrapolation"]
    solved = [
        s
        for s, e in steps.items()
        if e["extrapolation"] is not None and e["extrapolation"] < threshold
    ]
    return {
        "success": bool(extrapolation is not None and extrapolation < threshold),
        "iteration": best,
        "interpolation_mse": steps[best]["interpolation"],
        "extrapolation_mse": extrapolation,
        "solved_at": min(solved) if solved else None,
        "sparsity_error": steps[best]["sparsity"],
        "evaluations": len(steps),
    }


def threshold(operation, range_index, epsilon):
    """Their threshold for the cell's task, as ours computes it
    (`nalu_research.tasks.mistry_threshold`, on `MISTRY_RANGES`)."""
    from nalu_research.tasks import StaticArithmetic, mistry_threshold
    from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, TWO_INPUTS_TASK

    interpolation, extrapolation = MISTRY_RANGES[range_index]
    task = StaticArithmetic(
        operation,
        interpolation_range=interpolation,
        extrapolation_range=extrapolation,
        **TWO_INPUTS_TASK,
    )
    return mistry_threshold(task, epsilon)


def _parse_range(text):
    value = ast.literal_eval(text)
    if isinstance(value[0], list):
        return tuple(tuple(float(v) for v in part) for part in value)
    return tuple(float(v) for v in value)


def check_ranges(script):
    """Raises unless the script's nine ranges are `MISTRY_RANGES`."""
    from nalu_research.tasks.static_arithmetic import MISTRY_RANGES

    theirs = [tuple(_parse_range(t) for t in pair) for pair in script_ranges(script)]
    if theirs != [tuple(pair) for pair in MISTRY_RANGES]:
        raise ValueError(f"their ranges {theirs} are not MISTRY_RANGES")


def _label(epsilon):
    return f"{epsilon:g}"


def run_path(out, cell, range_index, seed):
    unit, operation = cell
    return Path(out) / f"{unit}-{operation}" / f"range{range_index}-seed{seed}.jsonl"


def runs_of_cells(cells, ranges, seeds):
    """The `(cell, range, seed)` runs of `cells` over `ranges` (a list for
    every cell, or a dict cell -> its ranges), seed by seed: a run stopped
    part way leaves every cell with about as many seeds."""
    if not isinstance(ranges, dict):
        ranges = {c: ranges for c in cells}
    return [(c, r, s) for s in seeds for c in cells for r in ranges[c]]


def parse_cell(text, default_ranges):
    """`unit/op` (on `default_ranges`) or `unit/op@r,r,...` -> (cell,
    ranges); raises ValueError naming the text and what was expected."""
    name, _, where = text.partition("@")
    cell = tuple(name.split("/"))
    if cell not in CELLS:
        known = " ".join(f"{u}/{o}" for u, o in CELLS)
        raise ValueError(f"cell {text!r}: expected unit/op[@ranges], one of {known}")
    if not where:
        return cell, list(default_ranges)
    try:
        ranges = [int(r) for r in where.split(",")]
    except ValueError:
        ranges = []
    if not ranges or any(not 0 <= r < 9 for r in ranges):
        raise ValueError(
            f"cell {text!r}: expected ranges as indices 0 to 8 after '@', "
            "e.g. nau/add@0,4"
        )
    return cell, ranges


def run(
    cells,
    ranges,
    seeds,
    iterations,
    out,
    jobs=2,
    epsilons=EPSILONS,
    repositories=None,
    python=sys.executable,
):
    """Runs their code on every cell x range x seed, `jobs` processes at a
    time, each run's metrics in `out/<unit>-<op>/range<r>-seed<s>.jsonl`
    (its output beside it, `.log`). Resumable: a run whose JSONL holds its
    last evaluation (`complete`) is not run again; an incomplete one is
    started afresh. Prints a line per run; returns the scored rows
    (`score`, at each of `epsilons`) with each run's wall seconds (None for
    one skipped)."""
    repositories = repositories or REPOSITORIES
    out = Path(out).resolve()  # their process runs in their code's folder
    cells = [tuple(c) for c in cells]
    queue = runs_of_cells(cells, ranges, seeds)
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="mistry-oracle-") as temporary:
        prepared = {}
        for name in sorted({CELLS[c][0] for c in cells}):
            repo = repositories[name]
            prepared[name] = prepare(
                repo["mirror"], repo["commit"], Path(temporary) / name
            )
            check_ranges((prepared[name]["code"] / repo["script"]).read_text())
        pending, running = [], []
        for key in queue:
            path = run_path(out, *key)
            if complete(path, iterations):
                print(f"{_describe(key)}: done before, skipped", flush=True)
                continue
            pending.append(key)
        total, done = len(pending), 0
        while pending or running:
            while pending and len(running) < jobs:
                key = pending.pop(0)
                path = run_path(out, *key)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.unlink(missing_ok=True)
                here = prepared[CELLS[key[0]][0]]
                argv = command(key[0], key[1], key[2], iterations, here["code"], python)
                log = open(path.with_suffix(".log"), "w")  # noqa: SIM115
                process = subprocess.Popen(
                    argv,
                    cwd=here["code"],
                    env=environment(here, path),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                running.append((key, process, log, time.monotonic()))
            time.sleep(0.2)
            for item in list(running):
                key, process, log, start = item
                if process.poll() is None:
                    continue
                running.remove(item)
                log.close()
                done += 1
                seconds[key] = time.monotonic() - start
                path = run_path(out, *key)
                # Kept beside the run, for a record written later (`rows`).
                path.with_suffix(".seconds").write_text(f"{seconds[key]:.1f}\n")
                status = (
                    "" if process.returncode == 0 else f", exit {process.returncode}"
                )
                if complete(path, iterations):
                    result = score(path, threshold(key[0][1], key[1], epsilons[0]))
                    status += (
                        f", solved at {result['solved_at']}"
                        if result["success"]
                        else ", not solved"
                    )
                else:
                    status += f", incomplete (see {path.with_suffix('.log')})"
                print(
                    f"[{done}/{total}] {_describe(key)}: {seconds[key]:.1f} s{status}",
                    flush=True,
                )
    return rows(queue, out, iterations, epsilons, seconds)


def _describe(key):
    (unit, operation), range_index, seed = key
    return f"{unit} {operation} range {range_index} seed {seed}"


def _seconds(path):
    kept = path.with_suffix(".seconds")
    return float(kept.read_text()) if kept.exists() else None


def rows(queue, out, iterations, epsilons=EPSILONS, seconds=None):
    """The scored row of each complete run of `queue` (`(cell, range,
    seed)`s) in `out`, in the shape of the division record's runs, with the
    success, solved-at and threshold at each epsilon."""
    result = []
    for key in queue:
        (unit, operation), range_index, seed = key
        path = run_path(out, *key)
        if not complete(path, iterations):
            continue
        by = {}
        for epsilon in epsilons:
            limit = threshold(operation, range_index, epsilon)
            by[_label(epsilon)] = (limit, score(path, limit))
        first = next(iter(by.values()))[1]
        result.append(
            {
                "unit": unit,
                "operation": operation,
                "range": range_index,
                "seed": seed,
                "success": {k: s["success"] for k, (_, s) in by.items()},
                "solved_at": {k: s["solved_at"] for k, (_, s) in by.items()},
                "threshold": {k: t for k, (t, _) in by.items()},
                "iteration": first["iteration"],
                "interpolation_mse": first["interpolation_mse"],
                "extrapolation_mse": first["extrapolation_mse"],
                "sparsity_error": first["sparsity_error"],
                "seconds": (seconds or {}).get(key, _seconds(path)),
            }
        )
    return result


def record(cells, iterations, runs, wall_seconds=None, repositories=None):
    """`results/mistry_oracle.json`'s content: the division record's shape
    (code, commit, arguments, environment, criterion, runs), per
    repository and cell."""
    import numpy
    import torch

    repositories = repositories or REPOSITORIES
    used = sorted({CELLS[tuple(c)][0] for c in cells})
    return {
        "code": {
            n: f"{repositories[n]['name']} {repositories[n]['commit']}, "
            f"{repositories[n]['script']}"
            for n in used
        },
        "commit": {n: repositories[n]["commit"] for n in used},
        "arguments": {
            f"{u}/{o}": "flags of the script's block "
            f"experiment_name='{CELLS[(u, o)][1]}', with --interpolation-range, "
            "--extrapolation-range, --seed of the run and "
            f"--max-iterations {iterations}"
            for u, o in (tuple(c) for c in cells)
        },
        "environment": f"torch {torch.__version__}, numpy {numpy.__version__}, one "
        "thread per run (LSB_DJOB_NUMPROC=1); stand-ins for tensorboardX (metrics "
        "at full precision), torchvision, pandas, tensorflow",
        "criterion": "extrapolation MSE < their threshold "
        "(nalu_research.tasks.mistry_threshold, at each epsilon) at the evaluation "
        "of lowest interpolation MSE (every 1,000 iterations, 10,000 examples); "
        "sparsity error at that evaluation",
        "iterations": iterations,
        "wall_seconds": wall_seconds,
        "runs": runs,
    }


def compare(ours_record, theirs_record, epsilon=1e-5):
    """Per cell (unit, operation, range) of `theirs_record`: ours and their
    success counts at `epsilon`, each with its Wilson 95% interval, whether
    the intervals overlap, and Fisher's exact p (scipy) where scipy is
    installed. Records are dicts with `runs`: rows with unit, operation,
    range and success per epsilon label, one per run (theirs) or one per
    cell with a list per seed (ours, `mistry_benchmark.cells`). Returns the
    rows."""
    try:
        from scipy.stats import fisher_exact
    except ImportError:  # pragma: no cover
        fisher_exact = None
    from nalu_research.experiments.mistry_benchmark import runs_of
    from nalu_research.tasks import wilson_interval

    label = _label(epsilon)

    def counts(record):
        rows = record["runs"]
        if rows and isinstance(rows[0]["success"][label], list):
            rows = runs_of(rows)  # our record: a row per cell, lists per seed
        cells = {}
        for r in rows:
            key = (r["unit"], r["operation"], r["range"])
            wins, total, at = cells.get(key, (0, 0, []))
            solved = bool(r["success"][label])
            if solved and r.get("solved_at", {}).get(label) is not None:
                at = [*at, r["solved_at"][label]]
            cells[key] = (wins + solved, total + 1, at)
        return cells

    def side(wins, total, at):
        return {
            "solved": wins,
            "runs": total,
            "interval": list(wilson_interval(wins, total)),
            # The successes' median first iteration below the threshold.
            "solved_at": float(statistics.median(at)) if at else None,
        }

    ours, theirs = counts(ours_record), counts(theirs_record)
    table = []
    for key in sorted(theirs):
        row = {"unit": key[0], "operation": key[1], "range": key[2]}
        tk, tn, _ = theirs[key]
        row["theirs"] = side(*theirs[key])
        if key in ours:
            ok, on, _ = ours[key]
            row["ours"] = side(*ours[key])
            (ol, oh), (tl, th) = row["ours"]["interval"], row["theirs"]["interval"]
            row["overlap"] = bool(ol <= th and tl <= oh)
            row["fisher_p"] = (
                float(fisher_exact([[ok, on - ok], [tk, tn - tk]])[1])
                if fisher_exact
                else None
            )
        else:
            row["ours"], row["overlap"], row["fisher_p"] = None, None, None
        table.append(row)
    return table


def comparison_table(table):
    """Markdown lines of `compare`'s rows."""
    from nalu_research.monitoring import markdown_table

    def text(side):
        if side is None:
            return "–"
        low, high = side["interval"]
        return f"{side['solved']}/{side['runs']} [{low:.2f}, {high:.2f}]"

    def at(side):
        if side is None or side["solved_at"] is None:
            return "–"
        return f"{side['solved_at']:,.0f}"

    body = [
        [
            r["unit"],
            r["operation"],
            r["range"],
            text(r["ours"]),
            text(r["theirs"]),
            "–" if r["overlap"] is None else ("yes" if r["overlap"] else "**no**"),
            "–" if r["fisher_p"] is None else f"{r['fisher_p']:.2g}",
            f"{at(r['ours'])} / {at(r['theirs'])}",
        ]
        for r in table
    ]
    header = ["unit", "op", "range", "ours", "their code", "intervals overlap",
              "Fisher p", "median solved at, ours / theirs"]  # fmt: skip
    return markdown_table(header, body)


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cells",
        nargs="+",
        default=["nau/add", "nmu/mul"],
        help="unit/operation cells, each on --ranges or on its own ranges "
        "(unit/op@0,4), of " + " ".join(f"{u}/{o}" for u, o in CELLS),
    )
    parser.add_argument("--ranges", type=int, nargs="+", default=list(range(9)))
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="results/mistry_oracle")
    parser.add_argument("--json", default=RECORD)
    parser.add_argument(
        "--record-only",
        action="store_true",
        help="start no run: write --json from the runs of these cells, ranges "
        "and seeds complete in --out (e.g. after runs started apart)",
    )
    parser.add_argument(
        "--compare",
        metavar="OURS_JSON",
        help="compare --json (theirs) with this record of ours and stop",
    )
    args = parser.parse_args(argv)
    if args.compare:
        ours = json.loads(Path(args.compare).read_text())
        theirs = json.loads(Path(args.json).read_text())
        print("\n".join(comparison_table(compare(ours, theirs))))
        return 0
    try:
        ranges = dict(parse_cell(c, args.ranges) for c in args.cells)
    except ValueError as error:
        parser.error(str(error))
    cells = list(ranges)
    start = time.monotonic()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.record_only:
        queue = runs_of_cells(cells, ranges, seeds)
        runs, wall = rows(queue, Path(args.out).resolve(), args.iterations), None
    else:
        runs = run(cells, ranges, seeds, args.iterations, args.out, args.jobs)
        wall = time.monotonic() - start
    content = record(cells, args.iterations, runs, wall)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(content, indent=1) + "\n")
    label = _label(EPSILONS[0])
    for cell in cells:
        for r in ranges[cell]:
            cell_runs = [
                x for x in runs if (x["unit"], x["operation"], x["range"]) == (*cell, r)
            ]
            if cell_runs:
                k = sum(x["success"][label] for x in cell_runs)
                print(
                    f"{cell[0]} {cell[1]} range {r}: {k}/{len(cell_runs)} solved "
                    f"(epsilon {label})"
                )
    print(f"Record: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
