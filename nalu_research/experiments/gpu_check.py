"""The package on a GPU, beside the same machine's CPU: `make gpu-check`.

Every part runs in processes of its own, since Keras fixes its backend and JAX
and PyTorch their device when they start:

1. tests: the library's backend tests (`pytest -m "backends and not slow and
   not research"`) on jax and on torch, on the GPU. Tests that need
   TensorFlow (SavedModel export, tf.distribute) are counted apart: the GPU
   machine has none.
2. extrapolation: the README's first example (NALU, the snapped NALU and the
   NMU learning `a * b` on [1, 10], tested on [100, 1000]) on jax and torch,
   on the GPU and on the CPU, and on the GPU with TensorFloat-32 allowed
   (JAX's default float32 product there, with `keras_nalu.ops.matmul`'s
   precision request removed; `torch.set_float32_matmul_precision("high")`);
   the demo's tasks (`a + b`, `a * b`: ReLU MLP, NALU, NAU or NMU) on jax, on
   the GPU, the CPU and the GPU with TensorFloat-32.
3. engine: milliseconds per run-iteration of the seed-batched engine,
   NALU-NALU and NAU-NMU on `a * b`, 25, 150 and 1,000 runs in one program,
   on the GPU and on the CPU (jax, whose compiled steps are the engine's
   fastest), one at a time, as ratios.
4. anchor: NAU-NMU on `a * b` with Madsen & Johansen's schedule (penalty from
   iteration 1,000,000, ramped to 10 by 2,000,000), 100 seeds in one program,
   trained for as many iterations as `--anchor-seconds` allows; solved seeds
   counted by the strict criterion, and seeds 0-49 compared seed for seed
   with the 2M-iteration CPU run of
   `docs/experiments/units-benchmark/units_anchor_nmu.json`.

It writes `docs/gpu.md` and `docs/gpu/gpu.json`. With `--dry-run` (what
`GPU_CHECK_DRY_RUN=1 make gpu-check` runs, and CI) every part runs on this
machine's CPU at tiny sizes, written under `results/gpu_check/`: it checks
the script, not the GPU.

    make gpu-check                          # on the GPU machine
    GPU_CHECK_DRY_RUN=1 make gpu-check      # here, under 5 minutes
"""

import concurrent.futures
import contextlib
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from nalu_research.arguments import positive_float
from nalu_research.experiment import Experiment
from nalu_research.monitoring import input_file, markdown_table, output_folder

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CPU_ANCHOR = ROOT / "docs/experiments/units-benchmark/units_anchor_nmu.json"
MARK = "gpu-check: "
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
ERROR = re.compile(r"^(\w+): .*relative error .*: median (\S+), max (\S+)$", re.M)
# Madsen & Johansen's schedule of the NAU-NMU on a*b (units benchmark page).
ANCHOR_REGULARIZATION = (10.0, 1_000_000, 2_000_000)
ANCHOR_ITERATIONS = 2_000_000
ENGINE_MODELS = {"nalu": "NALU-NALU", "nmu": "NAU-NMU"}

# The sizes of a real run and of a dry run.
SIZES = {
    False: {
        "tests": None,  # every backend test
        "workers": 6,
        "demo_seeds": 3,
        "demo_epochs": 20,
        "engine_runs": (25, 150, 1000),
        "engine_steps": 100,
        "anchor_seeds": 100,
        "anchor_iterations": ANCHOR_ITERATIONS,
        "anchor_every": 5000,
        "anchor_regularization": ANCHOR_REGULARIZATION,
        "anchor_eval_size": 10_000,
    },
    True: {
        "tests": ["tests/test_ops.py"],
        "workers": 1,
        "demo_seeds": 1,
        "demo_epochs": 1,
        "engine_runs": (2, 4),
        "engine_steps": 20,
        "anchor_seeds": 3,
        "anchor_iterations": 600,
        "anchor_every": 200,
        "anchor_regularization": (10.0, 200, 400),
        "anchor_eval_size": 256,
    },
}

# Where each worker runs: the backend, the device, whether TensorFloat-32 is
# allowed (the package's full-precision request removed on jax).
VARIANTS = {
    "jax-gpu": ("jax", "gpu", False),
    "jax-cpu": ("jax", "cpu", False),
    "jax-gpu-tf32": ("jax", "gpu", True),
    "torch-gpu": ("torch", "gpu", False),
    "torch-cpu": ("torch", "cpu", False),
    "torch-gpu-tf32": ("torch", "gpu", True),
}
DEMO_VARIANTS = ("jax-gpu", "jax-cpu", "jax-gpu-tf32")


class GpuCheck(Experiment):
    """The package on a GPU, beside the same machine's CPU: `make gpu-check`.

    One run, `run_check`'s parts in processes of their own; the record is
    `--output`/gpu/gpu.json and the page `--output`/gpu.md (`report`)."""

    record_path = "{output}/gpu/gpu.json"

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run",
            action="store_true",
            default=os.environ.get("GPU_CHECK_DRY_RUN") == "1",
            help="run every part on this machine's CPU at tiny sizes "
            "(default: set by GPU_CHECK_DRY_RUN=1)",
        )
        parser.add_argument(
            "--output",
            type=output_folder,
            default=None,
            help="folder of gpu.md and gpu/gpu.json (default docs/, or "
            "results/gpu_check/ for a dry run)",
        )
        parser.add_argument(
            "--phase-seconds",
            type=positive_float,
            default=150.0,
            help="time limit of each README and demo worker (default %(default)s)",
        )
        parser.add_argument(
            "--tests-seconds",
            type=positive_float,
            default=240.0,
            help="time limit of each backend's tests (default %(default)s)",
        )
        parser.add_argument(
            "--anchor-seconds",
            type=positive_float,
            default=120.0,
            help="training time of the anchor run (default %(default)s)",
        )
        parser.add_argument(
            "--from-json",
            type=input_file,
            default=None,
            help="write gpu.md again from this gpu.json, running nothing",
        )

    def check_arguments(self, args, parser):
        if args.output is None:
            args.output = ROOT / ("results/gpu_check" if args.dry_run else "docs")

    def train(self, args, run, session):
        self.results = run_check(args)
        return {
            "seconds": self.results["seconds"],
            "failed": failed_parts(self.results),
        }

    def report(self, args, rows):
        self.page = report(self.results)
        print(self.page)

    def record(self, args, rows):
        return self.results

    def finish(self, args, rows):
        args.output.mkdir(parents=True, exist_ok=True)
        partial = args.output / "gpu.md.partial"
        partial.write_text(self.page)
        partial.replace(args.output / "gpu.md")
        print(f"Wrote {args.output / 'gpu.md'}.")
        failed = failed_parts(self.results)
        if failed:
            print("Parts that failed: " + ", ".join(failed), file=sys.stderr)


# --- workers: each runs in a process of its own -----------------------------


def _environment(variant, dry_run):
    """The environment of a worker of `variant` (a key of `VARIANTS`)."""
    backend, device, _ = VARIANTS[variant]
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        # Several processes share the GPU: JAX takes memory as it needs it.
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    if device == "cpu" or dry_run:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _device_name():
    """The device Keras computes on in this worker, in words."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return f"{device.platform}: {device.device_kind}"
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return "cpu"


def _allow_tf32():
    """Allows TensorFloat-32 where the backend would by default (jax) or can
    be told to (torch), to see what it does to the units."""
    import keras

    if keras.backend.backend() == "jax":
        from keras_nalu import ops as nalu_ops

        nalu_ops.matmul = keras.ops.matmul  # JAX's default precision
    else:
        import torch

        torch.set_float32_matmul_precision("high")


def readme_worker(settings):
    """Runs the README's Python blocks; returns each unit's errors."""
    if settings["tf32"]:
        _allow_tf32()
    code = "\n\n".join(BLOCK.findall(README.read_text(encoding="utf-8")))
    printed = io.StringIO()
    start = time.perf_counter()
    # In a folder of its own: the README's example saves its model where it
    # runs (`nmu.keras`), which is not the checkout.
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, str(README), "exec"), {"__name__": "readme"})
        finally:
            os.chdir(here)
    errors = {
        name: {"median": float(median), "max": float(high)}
        for name, median, high in ERROR.findall(printed.getvalue())
    }
    return {
        "device": _device_name(),
        "errors": errors,
        "seconds": time.perf_counter() - start,
    }


def precision_worker(settings):
    """The largest relative error of two wide products against float64: the
    NAC's `x @ W` (an exact sum of inputs) and the NALU's log-space product
    `exp(log|x| @ W)`, `x` of `(4096, 256)` in [1, 10], `W` of `(256, 16)` in
    {-1, 0, 1} with 2 nonzeros per column, through `keras_nalu.ops`."""
    import keras
    import numpy as np

    if settings["tf32"]:
        _allow_tf32()
    from keras_nalu import ops as nalu_ops

    rng = np.random.default_rng(0)
    x = rng.uniform(1, 10, (4096, 256)).astype("float32")
    w = np.zeros((256, 16), "float32")
    for column in range(16):
        rows = rng.choice(256, 2, replace=False)
        w[rows, column] = rng.choice([-1.0, 1.0], 2)
    closed = np.full((256, 16), -30.0, "float32")  # the multiplicative path
    x64, w64 = x.astype("float64"), w.astype("float64")
    exact = {"NAC sum": x64 @ w64, "NALU product": np.exp(np.log(x64) @ w64)}
    got = {
        "NAC sum": nalu_ops.nac(x, w),
        "NALU product": nalu_ops.nalu(x, w, closed, epsilon=0.0),
    }
    errors = {}
    for name, value in got.items():
        value = keras.ops.convert_to_numpy(value).astype("float64")
        scale = np.maximum(np.abs(exact[name]), 1.0)
        errors[name] = float(np.max(np.abs(value - exact[name]) / scale))
    return {"device": _device_name(), "errors": errors}


def demo_worker(settings):
    """The demo's tasks (`nalu_research.experiments.demo`), without export;
    returns each row's extrapolation errors over the seeds."""
    from nalu_research.experiments import demo

    if settings["tf32"]:
        _allow_tf32()
    folder = Path(tempfile.mkdtemp())
    argv = [
        "--seeds", str(settings["seeds"]), "--epochs", str(settings["epochs"]),
        "--json", str(folder / "demo.json"),
        "--checkpoint-dir", str(folder / "checkpoints"),
        "--no-export",
    ]  # fmt: skip
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        demo.main(argv)
    results = json.loads((folder / "demo.json").read_text())
    return {
        "device": _device_name(),
        "rows": [
            {
                "task": row["task"],
                "model": row["model"],
                "extrapolation": row["extrapolation"],
                "interpolation": row["interpolation"],
            }
            for row in results["errors"]
        ],
        "solved_below": demo.SOLVED,
        "seconds": time.perf_counter() - start,
    }


def engine_worker(settings):
    """Milliseconds per run-iteration of the seed-batched engine: for each
    model and number of runs, the median of 3 timed chunks of `steps`
    iterations after one untimed (compiling) chunk."""
    import keras

    from nalu_research.seed_batched import StaticBenchmark

    timings = []
    for model in ENGINE_MODELS:
        for runs in settings["runs"]:
            keras.utils.set_random_seed(0)
            bench = StaticBenchmark(model, "mul", range(runs), eval_size=16)
            bench._train_chunk(settings["steps"])  # compiles
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                bench._train_chunk(settings["steps"])
                seconds.append(time.perf_counter() - start)
            seconds.sort()
            timings.append(
                {
                    "model": model,
                    "runs": runs,
                    "ms_per_run_iteration": 1000
                    * seconds[1]
                    / settings["steps"]
                    / runs,
                }
            )
    return {"device": _device_name(), "timings": timings}


class _TimeUp(Exception):
    pass


def anchor_worker(settings):
    """The anchor run for `seconds` of training at most: returns how far it
    got and the strict results of each seed there."""
    import keras

    from nalu_research.seed_batched import StaticBenchmark, initial_splits

    keras.utils.set_random_seed(0)
    bench = StaticBenchmark(
        "nmu",
        "mul",
        range(settings["seeds"]),
        regularization=tuple(settings["regularization"]),
        eval_size=settings["eval_size"],
    )
    splits = initial_splits(bench)
    history, start = [], time.perf_counter()

    def collect(entry):
        history.append(entry)
        if time.perf_counter() - start > settings["seconds"]:
            raise _TimeUp

    try:
        bench.run(settings["iterations"], settings["every"], on_eval=collect)
    except _TimeUp:
        pass
    seconds = time.perf_counter() - start
    runs = bench.summarize(history)
    return {
        "device": _device_name(),
        "iterations": history[-1]["iteration"],
        "seconds": seconds,
        "runs": [
            {
                **{k: run[k] for k in ("seed", "success", "solved_at")},
                "extrapolation_mse": run["extrapolation_mse"],
                "initial_split": split,
            }
            for run, split in zip(runs, splits, strict=True)
        ],
    }


WORKERS = {
    "precision": precision_worker,
    "readme": readme_worker,
    "demo": demo_worker,
    "engine": engine_worker,
    "anchor": anchor_worker,
}


def worker_main(part, settings):
    result = WORKERS[part](json.loads(settings))
    print(MARK + json.dumps(result, default=float), flush=True)


# --- the orchestrator -------------------------------------------------------


def _run(command, variant, dry_run, timeout):
    """Runs `command` in `variant`'s environment: `(completed process,
    seconds)`, or `(None, error)` when it ran past `timeout`."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            env=_environment(variant, dry_run),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, {"error": f"stopped at the time limit, {timeout:.0f} s"}
    return done, time.perf_counter() - start


def _failed(done):
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {done.returncode}: " + " / ".join(tail)}


def _spawn(part, variant, settings, dry_run, timeout):
    """Runs worker `part` in `variant`'s environment; returns its result, or
    `{"error": ...}` saying why there is none."""
    command = [sys.executable, "-m", "nalu_research.experiments.gpu_check",
               "--worker", part, json.dumps(settings)]  # fmt: skip
    done, seconds = _run(command, variant, dry_run, timeout)
    if done is None:
        return seconds
    lines = [l for l in done.stdout.splitlines() if l.startswith(MARK)]  # noqa: E741
    if done.returncode or not lines:
        return _failed(done)
    return {**json.loads(lines[-1][len(MARK) :]), "wall_seconds": seconds}


def _tests(variant, sizes, dry_run, timeout, folder):
    """Runs the backend tests of `variant`; counts its outcomes from JUnit XML."""
    report = folder / f"tests-{variant}.xml"
    report.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-m", "backends and not slow and not research",
               "--continue-on-collection-errors", f"--junitxml={report}",
               *(sizes["tests"] or [])]  # fmt: skip
    if sizes["workers"] > 1:
        command += ["-n", str(sizes["workers"]), "--dist", "loadfile"]
    done, seconds = _run(command, variant, dry_run, timeout)
    if done is None:
        return seconds
    if not report.exists():
        return _failed(done)
    counts = count_outcomes(report.read_text())
    return {**counts, "wall_seconds": seconds, "returncode": done.returncode}


_NEEDS_TENSORFLOW = re.compile(
    r"No module named '?tensorflow|needs TensorFlow|needs the tensorflow backend"
)


def count_outcomes(junit_xml):
    """`{passed, failed, skipped, needs_tensorflow, failures}` of a pytest
    JUnit report: a failure or collection error for want of TensorFlow is
    counted apart from the others, which `failures` names."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "needs_tensorflow": 0}
    failures = []
    for case in ElementTree.fromstring(junit_xml).iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if case.find("skipped") is not None:
            counts["skipped"] += 1
        elif bad is None:
            counts["passed"] += 1
        elif _NEEDS_TENSORFLOW.search((bad.get("message") or "") + (bad.text or "")):
            counts["needs_tensorflow"] += 1
        else:
            counts["failed"] += 1
            name = f"{case.get('classname')}::{case.get('name')}"
            failures.append(f"{name}: {(bad.get('message') or '')[:200]}")
    counts["failures"] = failures
    return counts


def _machine():
    """The machine in words: GPU, CPUs, versions."""
    import importlib.metadata

    gpu = "none"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
             "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if done.returncode == 0 and done.stdout.strip():
            gpu = done.stdout.strip()
    versions = {}
    for name in ("keras", "jax", "jaxlib", "torch", "numpy", "tensorflow"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "gpu": gpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "versions": versions,
    }


def run_check(args):
    sizes = SIZES[args.dry_run]
    args.output.mkdir(parents=True, exist_ok=True)
    scratch = ROOT / "results" / "gpu_check" / "scratch"  # the tests' reports
    scratch.mkdir(parents=True, exist_ok=True)
    results = {"dry_run": args.dry_run, "machine": _machine(), "sizes": sizes}
    start = time.perf_counter()
    readme_variants = VARIANTS if not args.dry_run else ("jax-cpu", "torch-cpu")
    demo_variants = DEMO_VARIANTS if not args.dry_run else ("jax-cpu",)
    demo = {"seeds": sizes["demo_seeds"], "epochs": sizes["demo_epochs"]}
    limit = args.phase_seconds
    # Part 1 and 2 side by side: they measure outcomes and errors, not time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        tests = {
            v: pool.submit(_tests, v, sizes, args.dry_run, args.tests_seconds, scratch)
            for v in ("jax-gpu", "torch-gpu")
        }
        precision = {
            v: pool.submit(
                _spawn, "precision", v, {"tf32": VARIANTS[v][2]}, args.dry_run, limit
            )
            for v in readme_variants
        }
        readme = {
            v: pool.submit(
                _spawn, "readme", v, {"tf32": VARIANTS[v][2]}, args.dry_run, limit
            )
            for v in readme_variants
        }
        demos = {
            v: pool.submit(
                _spawn, "demo", v, {**demo, "tf32": VARIANTS[v][2]}, args.dry_run, limit
            )
            for v in demo_variants
        }
        results["tests"] = {v: f.result() for v, f in tests.items()}
        results["precision"] = {v: f.result() for v, f in precision.items()}
        results["readme"] = {v: f.result() for v, f in readme.items()}
        results["demo"] = {v: f.result() for v, f in demos.items()}
    print(f"tests and extrapolation: {time.perf_counter() - start:.0f} s", flush=True)
    # Part 3 alone, one device at a time: it measures time.
    engine = {"runs": list(sizes["engine_runs"]), "steps": sizes["engine_steps"]}
    results["engine"] = {
        v: _spawn("engine", v, engine, args.dry_run, 300)
        for v in ("jax-gpu", "jax-cpu")
    }
    print(f"engine: {time.perf_counter() - start:.0f} s", flush=True)
    anchor = {
        "seeds": sizes["anchor_seeds"],
        "iterations": sizes["anchor_iterations"],
        "every": sizes["anchor_every"],
        "regularization": list(sizes["anchor_regularization"]),
        "eval_size": sizes["anchor_eval_size"],
        "seconds": args.anchor_seconds,
    }
    results["anchor"] = _spawn(
        "anchor", "jax-gpu", anchor, args.dry_run, args.anchor_seconds + 120
    )
    results["anchor"]["settings"] = anchor
    results["seconds"] = time.perf_counter() - start
    print(f"anchor: {results['seconds']:.0f} s", flush=True)
    return results


# --- the report -------------------------------------------------------------


def _cell(result, key):
    if "error" in result:
        return result["error"]
    return result[key]


def _sci(value):
    return f"{value:.1e}"


def report(results):
    """`docs/gpu.md`'s text from the results of `run_check`."""
    machine = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    lines = [
        "# On a GPU",
        "",
        "Written by `make gpu-check` (`nalu_research.experiments.gpu_check`; its "
        "docstring says what each part runs). "
        + (
            "**Dry run: every part ran on the CPU at tiny sizes; these are no GPU "
            "figures.**"
            if results["dry_run"]
            else ""
        ),
        *[f"*{note}*\n" for note in results.get("notes", [])],
        "",
        f"Machine: GPU {machine['gpu']}; {machine['cpus']} CPUs; Python "
        f"{machine['python']}; {versions}. Whole check: "
        f"{results['seconds']:.0f} s.",
        "",
        "## The backend tests on the GPU",
        "",
    ]
    tests = []
    for variant, counts in results["tests"].items():
        if "error" in counts:
            tests.append([variant, counts["error"], "", "", "", ""])
            continue
        numbers = [counts[k] for k in ("passed", "failed", "skipped")]
        numbers += [counts["needs_tensorflow"], f"{counts['wall_seconds']:.0f} s"]
        tests.append([variant, *numbers])
    lines += markdown_table(
        [
            "backend",
            "passed",
            "failed",
            "skipped",
            "need TensorFlow (not on the machine)",
            "wall time",
        ],
        tests,
    )
    failures = [f for c in results["tests"].values() for f in c.get("failures", [])]
    if failures:
        lines += ["", "Failures:", ""] + [f"- `{f}`" for f in failures]
    lines += [
        "",
        "TF32: TensorFloat-32 allowed (on jax, JAX's default float32 product on "
        "the GPU, with the package's full-precision request removed; on torch, "
        '`torch.set_float32_matmul_precision("high")`).',
    ]
    if "precision" in results:
        lines += [
            "",
            "## Wide products: largest relative error against float64",
            "",
            "`keras_nalu.ops.nac` and `nalu` (closed gate) on `x` of (4096, 256) in "
            "[1, 10], `W` of (256, 16) in {-1, 0, 1} (`precision_worker`).",
            "",
            *_error_table(results["precision"], lambda errors, unit: errors[unit]),
        ]
    lines += [
        "",
        "## The README's first example: largest relative error on [100, 1000]",
        "",
        *_error_table(results["readme"], lambda errors, unit: errors[unit]["max"]),
    ]
    demo = results["demo"]
    lines += [
        "",
        "## The demo's tasks: mean relative extrapolation error, median over "
        "the seeds [min, max]",
        "",
    ]
    rows = next((r["rows"] for r in demo.values() if "rows" in r), [])
    table = []
    for i, row in enumerate(rows):
        cells = []
        for result in demo.values():
            if "error" in result:
                cells.append(result["error"])
                continue
            values = sorted(result["rows"][i]["extrapolation"])
            median = values[len(values) // 2]
            cells.append(f"{_sci(median)} [{_sci(values[0])}, {_sci(values[-1])}]")
        table.append([row["task"], row["model"], *cells])
    lines += markdown_table(["task", "model", *demo], table)
    engine = results["engine"]
    lines += [
        "",
        "## The seed-batched engine: ms per run-iteration (jax)",
        "",
    ]
    gpu, cpu = engine.get("jax-gpu", {}), engine.get("jax-cpu", {})
    if "timings" in gpu and "timings" in cpu:
        timings = []
        for g, c in zip(gpu["timings"], cpu["timings"], strict=True):
            ms = g["ms_per_run_iteration"], c["ms_per_run_iteration"]
            timings.append(
                [ENGINE_MODELS[g["model"]], g["runs"], *(f"{t:.2e}" for t in ms)]
                + [f"{ms[1] / ms[0]:.1f}"]
            )
    else:
        timings = [[f"{gpu.get('error', '')} {cpu.get('error', '')}", "", "", "", ""]]
    lines += markdown_table(["model", "runs", "GPU", "CPU", "CPU / GPU"], timings)
    lines += ["", *anchor_report(results["anchor"])]
    return "\n".join(lines) + "\n"


def _error_table(parts, value):
    """A table of `{variant: {"errors": {unit: ...}, "device": ...}}`, one
    column per variant, `value(errors, unit)` in each cell."""
    units = sorted({u for r in parts.values() for u in r.get("errors", {})})
    rows = []
    for unit in units:
        cells = [
            r["error"] if "error" in r else _sci(value(r["errors"], unit))
            if unit in r["errors"] else "-"
            for r in parts.values()
        ]  # fmt: skip
        rows.append([unit, *cells])
    devices = [_cell(r, "device") for r in parts.values()]
    return markdown_table(["", *parts], [*rows, ["device", *devices]])


def anchor_report(anchor):
    """The anchor section: how far it got, the seeds solved, the agreement
    with the CPU run of the same seeds."""
    from nalu_research.tasks import wilson_interval

    settings = anchor["settings"]
    lines = [
        "## The anchor: NAU-NMU on a*b, Madsen & Johansen's schedule, "
        f"{settings['seeds']} seeds",
        "",
    ]
    if "error" in anchor:
        return lines + [f"No result: {anchor['error']}."]
    runs, reached = anchor["runs"], anchor["iterations"]
    solved = sum(r["success"] for r in runs)
    low, high = wilson_interval(solved, len(runs))
    lines += [
        f"{reached:,} iterations of {settings['iterations']:,} in "
        f"{anchor['seconds']:.0f} s ({1e6 * anchor['seconds'] / max(reached, 1):.0f} "
        f"us per iteration of all {len(runs)} seeds), evaluated every "
        f"{settings['every']:,}: **{solved}/{len(runs)}** solved by the strict "
        f"criterion [{low:.2f}, {high:.2f}].",
    ]
    from nalu_research.seed_batched import SMALL_SPLIT

    small = [r for r in runs if abs(r.get("initial_split", 1.0)) < SMALL_SPLIT]
    if "initial_split" in runs[0]:
        unsolved = [r["seed"] for r in runs if not r["success"]]
        small_seeds = [r["seed"] for r in small]
        lines += [
            "",
            f"Initial splits below {SMALL_SPLIT} (`seed_batched.initial_splits`): "
            f"{len(small)} of {len(runs)} seeds ({', '.join(map(str, small_seeds))}); "
            f"{sum(not r['success'] for r in small)} of them unsolved. Unsolved "
            f"seeds: {', '.join(map(str, unsolved)) or 'none'}.",
        ]
    if CPU_ANCHOR.exists() and settings["iterations"] == ANCHOR_ITERATIONS:
        cpu = json.loads(CPU_ANCHOR.read_text())
        backend = cpu["arguments"]["backend"]
        solved_cpu = sum(r["success"] for r in cpu["runs"])
        lines += [
            "",
            f"The CPU run of `units_anchor_nmu.json` ({backend} backend, seeds "
            f"0-{len(cpu['runs']) - 1}, 2,000,000 iterations): {solved_cpu}/"
            f"{len(cpu['runs'])}. Its seeds are not these runs: Keras's random "
            f"streams differ between backends, so a seed gives other initial "
            f"weights on {backend} than on jax (the batches, drawn by "
            "`counter_uniform`, are the same).",
        ]
    return lines


def failed_parts(results):
    """The names of the parts of `results` that failed or found failures."""
    return [
        name
        for name, part in (
            *(("tests " + v, r) for v, r in results["tests"].items()),
            *(("precision " + v, r) for v, r in results.get("precision", {}).items()),
            *(("readme " + v, r) for v, r in results["readme"].items()),
            *(("demo " + v, r) for v, r in results["demo"].items()),
            *(("engine " + v, r) for v, r in results["engine"].items()),
            ("anchor", results["anchor"]),
        )
        if "error" in part or part.get("failed")
    ]


def main(argv=None):
    check = GpuCheck()
    args = check.parse_args(argv)
    if args.from_json is None:
        check.main(argv)
    else:  # the page again from a record: runs nothing, writes no record
        check.results = json.loads(args.from_json.read_text())
        check.report(args, [])
        check.finish(args, [])
    return 1 if failed_parts(check.results) else 0


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--worker":
    worker_main(sys.argv[2], sys.argv[3])
