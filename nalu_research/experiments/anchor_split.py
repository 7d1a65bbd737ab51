"""The anchor's stuck runs, controlled: does the NAU's initial split decide them?

Madsen & Johansen's anchor (NAU-NMU on `a * b`, their schedule: no penalty
until iteration 1,000,000, then ramped to 10 by 2,000,000) leaves some runs
stuck. Their initial NAU weights predict which: the runs whose split
(`nalu_research.seed_batched.initial_splits`) starts below `SMALL_SPLIT` are,
in both codes, the stuck and the late ones. This tests it by intervention, in
one program of the seed-batched engine (each run its own seed's batches):

- `moved`: the `--stuck` seeds with their split moved away from 0, to
  `--target` (of the sign it had; `seed_batched.set_initial_splits`, about
  0.02 added to one unit's weights on the inputs of `a` alone);
- `projected`: the `--solved` seeds with their split moved to 0.

Everything else as drawn. The prediction: the moved runs solve, the projected
ones stick. The as-drawn outcomes of the same seeds are those of
`docs/experiments/units-benchmark/units_anchor_nmu.json` (the engine repeats
them seed for seed).

    python examples/anchor_split.py                    # 16 runs, 2M iterations
"""

import math

import keras

from keras_nalu.training import Progress
from nalu_research.arguments import Shared, non_negative_int, positive_float
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.seed_batched import (
    SMALL_SPLIT,
    StaticBenchmark,
    initial_splits,
    set_initial_splits,
)
from nalu_research.tasks import wilson_interval

# Seeds 0-49 on the tensorflow backend
# (docs/experiments/units-benchmark/units_anchor_nmu.json): the 8 that
# stay stuck to 5M iterations, all with |split| < SMALL_SPLIT, and the first 8
# solved by 2M, all with |split| > 0.4.
STUCK = (1, 11, 21, 23, 32, 35, 39, 47)
SOLVED = (0, 2, 3, 4, 5, 6, 7, 8)
# The median |split| of seeds 0-49 on tensorflow.
TARGET = 0.63
REGULARIZATION = [10.0, 1_000_000, 2_000_000]  # Madsen & Johansen's


def report(runs):
    """The table of the two arms, printed; returns its lines."""
    arms = []
    for arm in ("moved", "projected"):
        mine = [r for r in runs if r["arm"] == arm]
        solved = sum(r["success"] for r in mine)
        low, high = wilson_interval(solved, len(mine))
        at = sorted(r["solved_at"] for r in mine if r["solved_at"] is not None)
        median = f"{at[len(at) // 2]:,}" if at else "-"
        interval = f"[{low:.2f}, {high:.2f}]"
        arms.append([arm, len(mine), f"{solved}/{len(mine)}", interval, median])
    seeds = []
    for r in runs:
        at = "-" if r["solved_at"] is None else f"{r['solved_at']:,}"
        drawn, moved = f"{r['split_drawn']:+.3f}", f"{r['split_moved']:+.3f}"
        seeds.append([r["seed"], r["arm"], drawn, moved, r["success"], at])
    lines = markdown_table(
        ["arm", "runs", "solved (strict)", "Wilson 95%", "solved at, median"], arms
    )
    lines.append("")
    lines += markdown_table(
        ["seed", "arm", "split drawn", "split moved", "solved", "solved at"], seeds
    )
    print("\n".join(lines))
    return lines


class AnchorSplit(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "iterations": 2_000_000,
        "eval_every": 5000,
        "eval_size": 10_000,
        "regularization": Shared(
            REGULARIZATION,
            help="the penalty: STRENGTH ramped in from START to END (default "
            "%(default)s, Madsen & Johansen's)",
        ),
    }
    record_path = "results/anchor_split.json"
    checkpoints = True
    run_unit = "program"

    def add_arguments(self, parser):
        parser.add_argument(
            "--stuck", type=non_negative_int, nargs="+", default=list(STUCK)
        )
        parser.add_argument(
            "--solved", type=non_negative_int, nargs="+", default=list(SOLVED)
        )
        parser.add_argument(
            "--target",
            type=positive_float,
            default=TARGET,
            help="|split| the stuck seeds are moved to (default %(default)s)",
        )

    def check_arguments(self, args, parser):
        if set(args.stuck) & set(args.solved):
            parser.error("a seed is in both --stuck and --solved")

    def prepare(self, args, session):
        print(
            f"NAU-NMU on a*b: seeds {args.stuck} with their split moved to "
            f"+-{args.target:g}, seeds {args.solved} with theirs moved to 0 "
            f"(small: |split| < {SMALL_SPLIT}); {args.iterations:,} iterations on "
            f"{keras.backend.backend()}."
        )

    def train(self, args, run, session):
        """Both arms in one program: the per-seed rows."""
        keras.utils.set_random_seed(0)
        bench = StaticBenchmark(
            "nmu",
            "mul",
            [*args.stuck, *args.solved],
            eval_size=args.eval_size,
            regularization=args.regularization,
        )
        drawn = initial_splits(bench)
        targets = [
            math.copysign(args.target, split) for split in drawn[: len(args.stuck)]
        ]
        moved = set_initial_splits(bench, targets + [0.0] * len(args.solved))
        result = bench.run(
            args.iterations,
            eval_every=args.eval_every,
            # The checkpoint folder itself, as before the skeleton: it resumes.
            checkpoint=session.checkpoint(),
            progress=Progress(
                args.iterations, unit="iteration", label="  anchor split"
            ),
        )
        if result["resumed_at"] is not None:
            print(f"  resumed from its checkpoint at iteration {result['resumed_at']}")
        self.train_seconds = result["seconds"]
        rows = bench.summarize(result["history"])
        arms = ["moved"] * len(args.stuck) + ["projected"] * len(args.solved)
        for row, arm, before, after in zip(rows, arms, drawn, moved, strict=True):
            row.update(arm=arm, split_drawn=before, split_moved=after)
        return rows

    def report(self, args, rows):
        report(rows)

    def record(self, args, rows):
        return {"train_seconds": self.train_seconds, "wall_seconds": self.elapsed()}


def main(argv=None):
    return AnchorSplit().main(argv)
