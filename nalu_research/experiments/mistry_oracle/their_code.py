"""Mistry, Farrahi & Hare's own PyTorch code, as it is: where it lives, how
a run of it starts, what it logs and how their criterion scores it.

Their benchmark (bmistry4/nalm-benchmark, `lfs_batch_jobs/single_layer_task/
benchmarking/single_layer_benchmark.sh`; for the NMRU bmistry4/
nalm-division, `lfs_batch_jobs/single_layer_task/neurips_2021/sltr-in2.sh`)
runs unmodified: `prepare` extracts the commit studied of a clone
(`find_repositories`) into a temporary folder, `command` reads a cell's
flags from that commit's script, `environment` gives a run one thread
(`LSB_DJOB_NUMPROC=1`: `torch.set_num_threads(1)` in their script),
`score` applies their criterion to what the run logged.

Their stdout prints the errors with 5 decimals, too coarse for thresholds
of 1e-9, so their metrics are read from stand-ins (`STUBS`) put first on
`PYTHONPATH`: `tensorboardX`, whose `SummaryWriter` appends each
`add_scalar` (`{"tag", "value", "step"}`, at full precision) and `add_text`
(`{"tag", "text", "step"}`: the iNALU's reinitialisations) to the JSONL
file named by `$MISTRY_ORACLE_JSONL` and drops histograms (written only
with `--verbose`, which the script never passes); and empty `torchvision`,
`pandas`, `tensorflow`, which `import stable_nalu` imports but the
single-layer task never uses (the empty tensorflow saves seconds a run).
"""

import ast
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from nalu_research.tasks import StaticArithmetic, mistry_threshold
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, TWO_INPUTS_TASK

# The two repositories (github.com/NAME), at the commits studied (issue 67's
# design study): `find_repositories` looks for a clone of each, bare or not.
REPOSITORIES = {
    "nalm-benchmark": {
        "name": "bmistry4/nalm-benchmark",
        "commit": "120ec8e7614c8bf496302230bd0ffa95e8c571a4",
        "script": "lfs_batch_jobs/single_layer_task/benchmarking/"
        "single_layer_benchmark.sh",
    },
    "nalm-division": {
        "name": "bmistry4/nalm-division",
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
        for unit, name, ops in (
            ("nac", "NAC", "add sub"),
            ("nau", "NAU", "add sub"),
            ("nacmul", "MNAC", "mul div"),
            ("npu", "NPU", "mul div"),
            ("realnpu", "RealNPU", "mul div"),
            ("nalu", "NALU", "add sub mul div"),
            ("inalu", "iNALU", "add sub mul div"),
        )
        for op in ops.split()
    },
    ("nmu", "mul"): ("nalm-benchmark", "benchmark/sltr-in2/NMU"),
    ("nmru", "div"): ("nalm-division", "sltr-in2/sign-nmru"),
}
JSONL_VARIABLE = "MISTRY_ORACLE_JSONL"
INTERPOLATION = "metric/valid/interpolation"
EXTRAPOLATION = "metric/test/extrapolation"

_TENSORBOARDX = '''"""A stand-in for tensorboardX (examples/mistry_oracle.py).

Each scalar as a line {"tag", "value", "step"} of the file named by $@VARIABLE@.
"""
import json
import os


class SummaryWriter:
    def __init__(self, log_dir=None, *args, **kwargs):
        self.log_dir = log_dir
        self._path = os.environ.get("@VARIABLE@")

    def _write(self, row):
        if self._path:
            with open(self._path, "a") as file:
                file.write(json.dumps(row) + "\\n")

    def add_scalar(self, tag, scalar_value, global_step=None, *args, **kwargs):
        value = getattr(scalar_value, "item", lambda: scalar_value)()
        self._write({"tag": tag, "value": float(value), "step": global_step})

    def add_text(self, tag, text_string, global_step=None, *args, **kwargs):
        self._write({"tag": tag, "text": str(text_string), "step": global_step})

    def add_histogram(self, *args, **kwargs):
        pass

    flush = close = add_histogram
'''.replace("@VARIABLE@", JSONL_VARIABLE)
_EMPTY = '"""Empty stand-in (examples/mistry_oracle.py): imported, unused."""\n'
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
# the batch scripts (a clone may lack its large files, e.g. notebooks).
CODE_PATHS = ("experiments", "lfs_batch_jobs", "misc", "stable_nalu")


def find_repositories(folder, names):
    """`{name: folder/name}` for `names` (keys of `REPOSITORIES`): clones of
    their repositories holding the commits studied. Raises
    `FileNotFoundError` saying, in one line, what to clone or fetch where."""
    found, problems = {}, []
    for name in names:
        repo, path = REPOSITORIES[name], Path(folder).expanduser() / name
        url, commit = f"https://github.com/{repo['name']}", repo["commit"]
        check = ["git", "-C", str(path), "cat-file", "-e", f"{commit}^{{commit}}"]
        try:
            result = subprocess.run(check, capture_output=True, check=False)
        except OSError:
            raise FileNotFoundError(
                "git is not installed (it reads their code)"
            ) from None
        if result.returncode == 0:
            found[name] = path
        elif (path / ".git").exists() or (path / "HEAD").is_file():  # a clone
            problems.append(f"{path} lacks commit {commit}: git -C {path} fetch {url}")
        else:
            problems.append(
                f"no clone of {url} (commit {commit}) in {path}: git clone {url} {path}"
            )
    if problems:
        raise FileNotFoundError("; ".join(problems))
    return found


def prepare(repository, commit, folder):
    """Extracts `CODE_PATHS` of `commit` of the git repository `repository`
    into `folder/code` (`git archive | tar -x`, their files as they are) and
    writes the stand-ins into `folder/stubs`. Returns `{"code": path,
    "stubs": path}`.
    """
    code = Path(folder) / "code"
    code.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(repository), "archive", commit, *CODE_PATHS],
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
    name = re.compile(rf"""experiment_name=['"]{re.escape(experiment_name)}['"]\s*$""")
    starts = [i for i, line in enumerate(lines) if name.match(line.strip())]
    if not starts:
        raise KeyError(f"no block experiment_name='{experiment_name}' in the script")
    i = next(
        i
        for i in range(starts[0], len(lines))
        if lines[i].lstrip().startswith("python")
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
    flags = script_command(script, experiment_name, range_index, seed, iterations)
    return [python, "-u", *flags]


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
    best = min(finite)[1] if finite else None
    at = steps.get(best, {})
    extrapolation = at.get("extrapolation")
    solved = [
        s
        for s, e in steps.items()
        if e["extrapolation"] is not None and e["extrapolation"] < threshold
    ]
    return {
        "success": bool(extrapolation is not None and extrapolation < threshold),
        "iteration": best,
        "interpolation_mse": at.get("interpolation"),
        "extrapolation_mse": extrapolation,
        "solved_at": min(solved) if solved and finite else None,
        "sparsity_error": at.get("sparsity"),
        "evaluations": len(steps),
    }


def threshold(operation, range_index, epsilon):
    """Their threshold for the cell's task, as ours computes it
    (`nalu_research.tasks.mistry_threshold`, on `MISTRY_RANGES`)."""
    interpolation, extrapolation = MISTRY_RANGES[range_index]
    task = StaticArithmetic(
        operation,
        interpolation_range=interpolation,
        extrapolation_range=extrapolation,
        **TWO_INPUTS_TASK,
    )
    return mistry_threshold(task, epsilon)


def check_ranges(script):
    """Raises unless the script's nine ranges are `MISTRY_RANGES`."""
    theirs = [[ast.literal_eval(t) for t in pair] for pair in script_ranges(script)]
    if theirs != json.loads(json.dumps(MISTRY_RANGES)):  # as nested lists
        raise ValueError(f"their ranges {theirs} are not MISTRY_RANGES")
