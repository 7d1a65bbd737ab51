"""Division as Mistry, Farrahi & Hare (2021) test it: one unit, a/b among 10 inputs.

Their single-layer task with input redundancy ("Learning Division with Neural
Arithmetic Logic Modules", the NMRU's published 91.6%; their code,
bmistry4/nalm-division, lfs_batch_jobs/single_layer_task/neurips_2021/
sltr-in10.sh): `x` has 10 inputs, `a = x[o]` and `b = x[o + 1]` at an offset
`o` drawn from the seed (`StaticArithmetic` with `input_size=10,
subset_ratio=0.1, overlap_ratio=0`), the other 8 irrelevant; the target is
`a / b`. Nine (interpolation -> extrapolation) ranges, 25 seeds each: 225
runs. Evaluated every 1,000 iterations on 10,000 examples per split; a run is
solved when its extrapolation MSE at the evaluation with the lowest
interpolation MSE is below 1e-5 (their fixed threshold, not Madsen &
Johansen's simulated one).

`--unit` picks the unit, each trained by the recipe of their script for it
(`UNITS`), 100,000 iterations of batches of 128:

- `nmru` (default): one `keras_nalu.NMRU(1, sign_retrieval=True)`, 20 weights
  on the 10 inputs and their reciprocals, their published "SignNMRU" (it
  multiplies magnitudes and restores the sign with `cos(pi * k @ W)`;
  `--no-sign-retrieval` trains the package's default NMRU, which multiplies
  the signed values). Adam lr 1e-2, each run's gradient norm clipped to 1,
  the sparsity penalty 10 ramped in from iteration 50,000 to 75,000. Their
  reciprocal is `1 / (x + 1.2e-7)` in training and `1 / x` in evaluation;
  ours bounds `|x|` below by `epsilon = 1e-7` in both.
- `realnpu`: one `keras_nalu.RealNPU(1)` with its relevance gate (`--no-gated`
  without), their "Real NPU (modified)": exponents and gate clipped, the
  exponents started by the NAU's initializer, the gate at 0.5, a penalty of
  1 on both ramped in from 50,000 to 75,000; Adam lr 5e-3, no gradient
  clipping. Theirs also adds an L1 penalty of weight 1e-9 to 1e-7 (Heim et
  al.'s) and penalizes exponents toward -1 and 1 only; ours is the NAU's
  penalty toward -1, 0 and 1.

All runs of a range train in one program (`nalu_research.seed_batched`),
checkpointed after every evaluation: run the same command again after an
interruption and it resumes. The snapped model (`keras_nalu.snap_weights`,
verified) of the first solved run on U[1, 2] (else of the first range with
one) is exported as a SavedModel.

    python examples/division_benchmark.py                 # 9 ranges x 25 seeds
    python examples/division_benchmark.py --unit realnpu  # a RealNPU, its recipe
    python examples/division_benchmark.py --ranges 6 --seeds 5 --iterations 20000
"""

import argparse
from pathlib import Path

import numpy as np

from nalu_research.arguments import Shared, positive_float
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.recipe import Recipe
from nalu_research.serving import Export
from nalu_research.tasks import wilson_bars, wilson_interval
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, describe_range

TASK = {"input_size": 10, "subset_ratio": 0.1, "overlap_ratio": 0.0}
PUBLISHED = 0.916  # the NMRU's success over the 225 runs (Mistry et al.)
# Each unit with the recipe of Mistry et al.'s script for it: the engine's
# model, Adam's learning rate, each run's gradient-norm bound, the penalty.
UNITS = {
    "nmru": {
        "model": "single-nmru",
        "name": "NMRU",
        "learning_rate": 1e-2,
        "clipnorm": 1.0,
        "regularization": [10.0, 50_000, 75_000],
    },
    "realnpu": {
        "model": "single-realnpu",
        "name": "RealNPU",
        "learning_rate": 5e-3,
        "clipnorm": None,
        "regularization": [1.0, 50_000, 75_000],
    },
}
EXPORTED_RANGE = 6  # U[1, 2] -> U[2, 6], exported when solved


def layer_options(args):
    """The constructor arguments of the unit's layer (`--sign-retrieval`,
    `--gated`; the NMRU's sign retrieval is on unless turned off)."""
    if args.unit == "nmru":
        return {"nmru": {"sign_retrieval": args.sign_retrieval is not False}}
    return {"realnpu": {"gated": args.gated is not False}}


def tables(results, args):
    lines = [
        "",
        "Success by range (extrapolation MSE below "
        f"{args.threshold:g} at the best interpolation evaluation; Wilson "
        "95% interval), the median iteration first solved, and the runs "
        "that snapped to exact weights:",
        "",
    ]
    rows = []
    for index in args.ranges:
        runs = [r for r in results if r["range"] == index]
        wins = sum(r["success"] for r in runs)
        low, high = wilson_interval(wins, len(runs))
        at = [r["solved_at"] for r in runs if r["solved_at"] is not None]
        median = f"{int(np.median(at)):,}" if at else "-"
        snapped = sum(r["formula"] is not None for r in runs)
        interpolation, extrapolation = MISTRY_RANGES[index]
        rows.append(
            [
                index,
                describe_range(interpolation),
                describe_range(extrapolation),
                f"{wins}/{len(runs)} [{low:.2f}, {high:.2f}]",
                median,
                f"{snapped}/{len(runs)}",
            ]
        )
    header = ["range", "interpolation", "extrapolation", "solved"]
    lines += markdown_table([*header, "median solved at", "snapped"], rows)
    wins = sum(r["success"] for r in results)
    low, high = wilson_interval(wins, len(results))
    lines += [
        "",
        f"All ranges, one {UNITS[args.unit]['name']}: {wins}/"
        f"{len(results)} solved = {wins / len(results):.1%} [{low:.3f}, "
        f"{high:.3f}]; Mistry et al. published {PUBLISHED:.1%} for the "
        "NMRU over 9 ranges x 25 seeds.",
    ]
    example = next((r for r in results if r["formula"]), None)
    if example:
        lines.append(
            f"A snapped run (range {example['range']}, seed {example['seed']}): "
            f"`{example['formula']}`"
        )
    return lines


def plot(results, args, plt):
    """The success rate per range, with Mistry et al.'s over all ranges."""
    fig, ax = plt.subplots(figsize=(9, 3.5))
    rates, errors = wilson_bars(
        [r for r in results if r["range"] == index] for index in args.ranges
    )
    name = UNITS[args.unit]["name"]
    ax.bar(range(len(rates)), rates, yerr=errors, capsize=3, label=f"{name} here")
    ax.axhline(
        PUBLISHED,
        color="k",
        linestyle="--",
        linewidth=1,
        label=f"NMRU, Mistry et al., all ranges ({PUBLISHED:.1%})",
    )
    ax.set_xticks(range(len(rates)))
    ax.set_xticklabels(
        [describe_range(MISTRY_RANGES[i][0]) for i in args.ranges], fontsize=7
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate")
    ax.set_title(
        f"a/b, one {name}, 10 inputs: {args.seeds} seeds per range, "
        f"{args.iterations} iterations (Wilson 95%)",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


# `--ranges`: indices of `MISTRY_RANGES`.
RANGES = list(range(len(MISTRY_RANGES)))


class DivisionBenchmark(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "seeds": Shared(25, help="seeds 0..N-1 per range (default %(default)s)"),
        "ranges": Shared(RANGES, choices=RANGES),
        "iterations": 100_000,
        "eval_every": 1000,
        "eval_size": 10_000,
        "learning_rate": Shared(None, help="Adam's (default 1e-2 NMRU, 5e-3 RealNPU)"),
        "clipnorm": Shared(
            None,
            help="each run's gradient norm bound (default: 1 for the NMRU, none "
            "for the RealNPU)",
        ),
        "regularization": Shared(
            None,
            help="the penalty schedule (default: the unit's, 10 (NMRU) or 1 "
            "(RealNPU) from 50,000 to 75,000)",
        ),
    }
    # The NMRU's results keep their first name; another unit's get its own
    # (`check_arguments` sets --json's default).
    record_path = "results/division_benchmark{_UNIT}.json"
    checkpoints = True
    export_path = "saved_models/division_{unit}"
    run_unit = "range"

    def add_arguments(self, parser):
        parser.add_argument(
            "--unit",
            choices=tuple(UNITS),
            default="nmru",
            help="the unit, trained by its recipe (default nmru)",
        )
        parser.add_argument("--threshold", type=positive_float, default=1e-5)
        parser.add_argument(
            "--sign-retrieval",
            action=argparse.BooleanOptionalAction,
            help="NMRU: the sign by Mistry et al.'s cosine (their published "
            "unit; default), or signed products (--no-sign-retrieval)",
        )
        parser.add_argument(
            "--gated",
            action=argparse.BooleanOptionalAction,
            help="RealNPU: with Heim et al.'s relevance gate (default) or without",
        )

    def check_arguments(self, args, parser):
        # The other unit's option, refused.
        other = {"nmru": ("gated", "realnpu"), "realnpu": ("sign_retrieval", "nmru")}
        option, unit = other[args.unit]
        if getattr(args, option) is not None:
            parser.error(
                f"--{option.replace('_', '-')} is an option of --unit {unit}, "
                f"not of --unit {args.unit}"
            )
        for name in ("learning_rate", "clipnorm", "regularization"):
            if getattr(args, name) is None:
                setattr(args, name, UNITS[args.unit][name])
        if args.json is None:
            suffix = "" if args.unit == "nmru" else f"_{args.unit}"
            args.json = Path(f"results/division_benchmark{suffix}.json")

    def prepare(self, args, session):
        self.snapped = {}

    def runs(self, args):
        return [(index,) for index in args.ranges]

    def train(self, args, run, session):
        """Trains the seeds of the range `run`; returns its runs' rows, and
        keeps the first solved run that snapped to exact weights."""
        from nalu_research.seed_batched import StaticBenchmark

        (index,) = run
        interpolation, extrapolation = MISTRY_RANGES[index]
        recipe = Recipe(
            learning_rate=args.learning_rate,
            regularization=args.regularization,
            clipnorm=args.clipnorm,
            layer_options=layer_options(args),
        )
        bench = StaticBenchmark(
            UNITS[args.unit]["model"],
            "div",
            range(args.seeds),
            recipe,
            eval_size=args.eval_size,
            threshold=args.threshold,
            interpolation_range=interpolation,
            extrapolation_range=extrapolation,
            **TASK,
        )
        label = f"{describe_range(interpolation)} -> {describe_range(extrapolation)}"
        print(f"range {index}: {label}, {args.seeds} seeds", flush=True)
        result = session.run_engine(bench, index, f"range{index}")
        rows = bench.summarize(result["history"])
        for row, formula in zip(rows, bench.exact_formulas(), strict=True):
            row.update(range=index, formula=formula)
            if index not in self.snapped and formula is not None and row["success"]:
                self.snapped[index] = (row["seed"], bench)
        self.last = rows
        return rows

    def run_name(self, run, row):
        return f"range {run[0]}"

    def progress(self, row):
        return {"solved": f"{sum(r['success'] for r in self.last)}/{len(self.last)}"}

    def report(self, args, rows):
        print("\n".join(tables(rows, args)))
        print(f"Wall time: {self.elapsed():.0f} s.")

    def plot(self, args, rows, plt):
        return plot(rows, args, plt)

    def exports(self, args, rows):
        """The snapped model of the first solved run on U[1, 2], else of the
        first range with one (none when no run solved)."""
        from keras_nalu import snap_weights

        if not self.snapped:
            return []
        seed, bench = self.snapped.get(EXPORTED_RANGE) or next(
            iter(self.snapped.values())
        )
        task = bench.tasks[seed]
        x, _ = task.sample(256, "extrapolation", seed=(seed, 2**31 - 3))
        model, _ = snap_weights(bench.keras_model(seed), (x, task.targets(x)))
        return [Export("", model, x[:3], sample=x[:8])]

    def served(self, args, served):
        name = UNITS[args.unit]["name"]
        print(f"Exported a solved run's snapped {name} to {served['']['path']}.")
        return served


def main(argv=None):
    return DivisionBenchmark().main(argv)


if __name__ == "__main__":
    main()
