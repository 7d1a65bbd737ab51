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

Each part's workers are `gpu_check.workers`; the page, `gpu_check.page`.
It writes `docs/gpu.md` and `docs/gpu/gpu.json`. With `--dry-run` (what
`GPU_CHECK_DRY_RUN=1 make gpu-check` runs, and CI) every part runs on this
machine's CPU at tiny sizes, written under `results/gpu_check/`: it checks
the script, not the GPU.

    make gpu-check                          # on the GPU machine
    GPU_CHECK_DRY_RUN=1 make gpu-check      # here, under 5 minutes
"""

import concurrent.futures
import contextlib
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from nalu_research.arguments import positive_float
from nalu_research.experiment import Experiment
from nalu_research.experiments.gpu_check.page import (
    ENGINE_MODELS,
    failed_parts,
    report,
)
from nalu_research.monitoring import output_folder

ROOT = Path(__file__).resolve().parents[3]
# What a worker's result line starts with (`workers.worker_main`).
MARK = "gpu-check: "
# Madsen & Johansen's schedule of the NAU-NMU on a*b (units benchmark page).
ANCHOR_REGULARIZATION = (10.0, 1_000_000, 2_000_000)
ANCHOR_ITERATIONS = 2_000_000

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
    replays = "write gpu.md again from this gpu.json, running nothing"

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

    def check_arguments(self, args, parser):
        if args.output is None:
            args.output = ROOT / ("results/gpu_check" if args.dry_run else "docs")

    def train(self, args, run, session):
        self.results = run_check(args)
        return {
            "seconds": self.results["seconds"],
            "failed": failed_parts(self.results),
        }

    def replayed(self, args, records):
        self.results = records[-1]
        return []

    def failed(self, args, rows):
        return bool(failed_parts(self.results))

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
    command = [sys.executable, "-m", f"{__name__}.workers", part, json.dumps(settings)]
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
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-m", "backends and not slow and not research", f"--junitxml={report}"]
    command += ["--continue-on-collection-errors", *(sizes["tests"] or [])]
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
    gpu = "none"
    query = "--query-gpu=name,driver_version,memory.total --format=csv,noheader"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["nvidia-smi", *query.split()], capture_output=True, text=True, timeout=30
        )
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
    parts = {
        "precision": (readme_variants, {}),
        "readme": (readme_variants, {}),
        "demo": (demo_variants, demo),
    }

    def spawn(part, variant, settings):
        settings = {**settings, "tf32": VARIANTS[variant][2]}
        return _spawn(part, variant, settings, args.dry_run, args.phase_seconds)

    # Part 1 and 2 side by side: they measure outcomes and errors, not time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        tests = {
            v: pool.submit(_tests, v, sizes, args.dry_run, args.tests_seconds, scratch)
            for v in ("jax-gpu", "torch-gpu")
        }
        futures = {
            part: {v: pool.submit(spawn, part, v, settings) for v in variants}
            for part, (variants, settings) in parts.items()
        }
        results["tests"] = {v: f.result() for v, f in tests.items()}
        for part, running in futures.items():
            results[part] = {v: f.result() for v, f in running.items()}
    print(f"tests and extrapolation: {time.perf_counter() - start:.0f} s", flush=True)
    # Part 3 alone, one device at a time: it measures time.
    engine = {"runs": list(sizes["engine_runs"]), "steps": sizes["engine_steps"]}
    engine["models"] = list(ENGINE_MODELS)
    results["engine"] = {
        v: _spawn("engine", v, engine, args.dry_run, 300)
        for v in ("jax-gpu", "jax-cpu")
    }
    print(f"engine: {time.perf_counter() - start:.0f} s", flush=True)
    keys = ("seeds", "iterations", "every", "regularization", "eval_size")
    anchor = {**{k: sizes[f"anchor_{k}"] for k in keys}, "seconds": args.anchor_seconds}
    results["anchor"] = _spawn(
        "anchor", "jax-gpu", anchor, args.dry_run, args.anchor_seconds + 120
    )
    results["anchor"]["settings"] = anchor
    results["seconds"] = time.perf_counter() - start
    print(f"anchor: {results['seconds']:.0f} s", flush=True)
    return results


def main(argv=None):
    return GpuCheck().main(argv)
