"""The page of `make gpu-check`, `docs/gpu.md`, written from its record
(`report`); `nalu_research.records.gpu` checks the page against it."""

import json
from pathlib import Path

from nalu_research.experiments.anchor_split import SMALL_SPLIT
from nalu_research.monitoring import markdown_table
from nalu_research.tasks import wilson_interval

CPU_ANCHOR = (
    Path(__file__).resolve().parents[3]
    / "docs/experiments/units-benchmark/units_anchor_nmu.json"
)
# The models of the engine's timings, as the page names them.
ENGINE_MODELS = {"nalu": "NALU-NALU", "nmu": "NAU-NMU"}


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

    def cell(result, unit):
        if "error" in result or unit not in result["errors"]:
            return result.get("error", "-")
        return _sci(value(result["errors"], unit))

    rows = [[unit, *(cell(r, unit) for r in parts.values())] for unit in units]
    devices = [_cell(r, "device") for r in parts.values()]
    return markdown_table(["", *parts], [*rows, ["device", *devices]])


def anchor_report(anchor):
    """The anchor section: how far it got, the seeds solved, the agreement
    with the CPU run of the same seeds."""
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
    small = [r for r in runs if abs(r.get("initial_split", 1.0)) < SMALL_SPLIT]
    if "initial_split" in runs[0]:
        unsolved = [r["seed"] for r in runs if not r["success"]]
        small_seeds = [r["seed"] for r in small]
        lines += [
            "",
            f"Initial splits below {SMALL_SPLIT} (`anchor_split.initial_splits`): "
            f"{len(small)} of {len(runs)} seeds ({', '.join(map(str, small_seeds))}); "
            f"{sum(not r['success'] for r in small)} of them unsolved. Unsolved "
            f"seeds: {', '.join(map(str, unsolved)) or 'none'}.",
        ]
    cpu = json.loads(CPU_ANCHOR.read_text()) if CPU_ANCHOR.exists() else None
    if cpu and settings["iterations"] == cpu["arguments"]["iterations"]:
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
