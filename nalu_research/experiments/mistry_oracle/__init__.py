"""Mistry, Farrahi & Hare's own PyTorch code, run beside ours as an oracle.

Their benchmark's cells (their unit x operation) run unmodified
(`their_code`), a process per run, `--jobs` at a time, one thread each,
with the flags their script gives the cell; resumable (a run done is not
run again). Their runs, scored by their criterion, are set beside ours
(`compare`, with the record of `nalu_research.experiments.mistry_benchmark`)
cell by cell: success counts, Wilson 95% intervals, Fisher's exact p.
Their code is read from clones of their two repositories in `--peer-dir`
(default `$NALU_PEER_DIR`, else `~/.cache/nalu_research/peers`):

    git clone https://github.com/bmistry4/nalm-benchmark PEER_DIR/nalm-benchmark
    git clone https://github.com/bmistry4/nalm-division PEER_DIR/nalm-division
    python examples/mistry_oracle.py --cells nau/add nmu/mul --ranges 6 \\
        --seeds 1 --iterations 2000
    python examples/mistry_oracle.py --compare results/mistry_benchmark.json
"""

import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from nalu_research.arguments import Shared, positive_int
from nalu_research.experiment import Experiment
from nalu_research.experiments.mistry_benchmark import RANGES, _label, runs_of
from nalu_research.experiments.mistry_oracle import their_code as code
from nalu_research.experiments.mistry_oracle.their_code import CELLS, REPOSITORIES
from nalu_research.monitoring import input_file, markdown_table, output_folder
from nalu_research.tasks import wilson_interval

EPSILONS = (1e-5, 1e-4)
# Where the clones of their repositories are (`--peer-dir`), unless given.
PEER_VARIABLE = "NALU_PEER_DIR"
PEER_DIR = "~/.cache/nalu_research/peers"


def run_path(out, cell, range_index, seed):
    return Path(out) / "-".join(cell) / f"range{range_index}-seed{seed}.jsonl"


def runs_of_cells(cells, seeds):
    """The `(cell, range, seed)` runs of `cells` (`{cell: its ranges}`),
    seed by seed: a run stopped part way leaves every cell with about as
    many seeds."""
    return [(c, r, s) for s in seeds for c, ranges in cells.items() for r in ranges]


def parse_cell(text, default_ranges):
    """`unit/op` (on `default_ranges`) or `unit/op@r,r,...` -> (cell,
    ranges); raises ValueError naming the text and what was expected."""
    name, _, where = text.partition("@")
    cell = tuple(name.split("/"))
    if cell not in CELLS:
        known = " ".join(f"{u}/{o}" for u, o in CELLS)
        raise ValueError(f"cell {text!r}: expected unit/op[@ranges], one of {known}")
    try:
        ranges = [int(r) for r in where.split(",")] if where else list(default_ranges)
    except ValueError:
        ranges = []
    if not ranges or any(r not in RANGES for r in ranges):
        raise ValueError(
            f"cell {text!r}: expected ranges as indices {RANGES[0]} to "
            f"{RANGES[-1]} after '@', e.g. nau/add@0,4"
        )
    return cell, ranges


def run(cells, seeds, iterations, out, clones, jobs=2, python=sys.executable):
    """Runs their code (from `clones`: `their_code.find_repositories`) on
    every run of `cells` (`{cell: its ranges}`) x `seeds`, `jobs` at a time,
    each run's metrics in `out/<unit>-<op>/range<r>-seed<s>.jsonl` (its
    `.log` and `.seconds` beside it), a line printed per run. Resumable: a
    run whose metrics hold its last evaluation is skipped, an incomplete one
    started afresh. Returns the scored rows (`rows`)."""
    out = Path(out).resolve()  # their process runs in their code's folder
    queue, pending, done = runs_of_cells(cells, seeds), [], []
    for key in queue:
        if code.complete(run_path(out, *key), iterations):
            print(f"{_describe(key)}: done before, skipped", flush=True)
        else:
            pending.append(key)
    lock = threading.Lock()

    def one(key):
        path, here = run_path(out, *key), prepared[CELLS[key[0]][0]]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        start = time.monotonic()
        with open(path.with_suffix(".log"), "w") as log:
            exit_code = subprocess.run(
                code.command(*key, iterations, here["code"], python),
                cwd=here["code"],
                env=code.environment(here, path),
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        seconds = time.monotonic() - start
        path.with_suffix(".seconds").write_text(f"{seconds:.1f}\n")  # for `rows`
        status = f", exit {exit_code}" if exit_code else ""
        if not code.complete(path, iterations):
            status += f", incomplete (see {path.with_suffix('.log')})"
        else:
            result = code.score(path, code.threshold(key[0][1], key[1], EPSILONS[0]))
            solved = result["success"]
            status += f", solved at {result['solved_at']}" if solved else ", not solved"
        with lock:
            done.append(key)
            line = f"[{len(done)}/{len(pending)}] {_describe(key)}: {seconds:.1f} s"
            print(line + status, flush=True)

    with tempfile.TemporaryDirectory(prefix="mistry-oracle-") as temporary:
        prepared = {}
        for name in sorted({CELLS[c][0] for c in cells}):
            repo, folder = REPOSITORIES[name], Path(temporary) / name
            prepared[name] = code.prepare(clones[name], repo["commit"], folder)
            code.check_ranges((prepared[name]["code"] / repo["script"]).read_text())
        pool = concurrent.futures.ThreadPoolExecutor(jobs)
        try:
            list(pool.map(one, pending))
        finally:  # interrupted: no run waiting starts
            pool.shutdown(cancel_futures=True)
    return rows(queue, out, iterations)


def _describe(key):
    return "{} {} range {} seed {}".format(*key[0], *key[1:])


def rows(queue, out, iterations):
    """The scored row of each complete run of `queue` (`(cell, range,
    seed)`s) in `out`, in the shape of the division record's runs, with the
    success, solved-at and threshold at each epsilon and the run's wall
    seconds (None where none were kept)."""
    result = []
    for key in queue:
        (unit, operation), range_index, seed = key
        path = run_path(out, *key)
        if not code.complete(path, iterations):
            continue
        by = {}
        for epsilon in EPSILONS:
            limit = code.threshold(operation, range_index, epsilon)
            by[_label(epsilon)] = (limit, code.score(path, limit))
        first = next(iter(by.values()))[1]
        kept = path.with_suffix(".seconds")
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
                "seconds": float(kept.read_text()) if kept.exists() else None,
            }
        )
    return result


def _counts(runs, label):
    """`{(unit, operation, range): (solved, runs, solved-at iterations)}` of
    `runs` (rows of one run each) at the epsilon `label`."""
    cells = {}
    for r in runs:
        key = (r["unit"], r["operation"], r["range"])
        wins, total, at = cells.get(key, (0, 0, []))
        solved = bool(r["success"][label])
        if solved and r.get("solved_at", {}).get(label) is not None:
            at = [*at, r["solved_at"][label]]
        cells[key] = (wins + solved, total + 1, at)
    return cells


def compare(ours_record, theirs_record, epsilon=1e-5):
    """Per cell (unit, operation, range) of `theirs_record`: ours and their
    success counts at `epsilon`, each with its Wilson 95% interval, whether
    the intervals overlap, and Fisher's exact p. Records are dicts with
    `runs`: rows with unit, operation, range and success per epsilon label,
    one per run (theirs) or one per cell with a list per seed (ours,
    `mistry_benchmark.cells`). Returns the rows."""
    from scipy.stats import fisher_exact

    label = _label(epsilon)

    def counts(record):
        runs = record["runs"]
        if runs and isinstance(runs[0]["success"][label], list):
            runs = runs_of(runs)  # our record: a row per cell, lists per seed
        return _counts(runs, label)

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
            row["fisher_p"] = float(fisher_exact([[ok, on - ok], [tk, tn - tk]])[1])
        else:
            row["ours"], row["overlap"], row["fisher_p"] = None, None, None
        table.append(row)
    return table


def comparison_table(table):
    """Markdown lines of `compare`'s rows."""

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
    # fmt: off
    header = ["unit", "op", "range", "ours", "their code", "intervals overlap",
              "Fisher p", "median solved at, ours / theirs"]
    # fmt: on
    return markdown_table(header, body)


class MistryOracle(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "seeds": Shared(25, help="seeds per cell and range (default %(default)s)"),
        "first_seed": 0,
        "ranges": Shared(
            RANGES,
            help="indices of the ranges of a cell that names none "
            "(unit/op, not unit/op@0,4) (default %(default)s: all)",
            choices=RANGES,
        ),
        "iterations": 50_000,
    }
    record_path = "results/mistry_oracle.json"

    def add_arguments(self, parser):
        parser.add_argument(
            "--cells",
            nargs="+",
            default=["nau/add", "nmu/mul"],
            help="unit/operation cells, each on --ranges or on its own ranges "
            "(unit/op@0,4), of " + " ".join(f"{u}/{o}" for u, o in CELLS),
        )
        parser.add_argument(
            "--jobs",
            type=positive_int,
            default=2,
            help="runs of their code at a time, one thread each (default %(default)s)",
        )
        parser.add_argument(
            "--peer-dir",
            type=lambda text: Path(text).expanduser(),
            default=os.environ.get(PEER_VARIABLE) or PEER_DIR,
            help="the folder of the clones of their repositories, nalm-benchmark "
            f"and nalm-division (default ${PEER_VARIABLE}, else {PEER_DIR})",
        )
        parser.add_argument(
            "--out",
            type=output_folder,
            default=Path("results/mistry_oracle"),
            help="each run's metrics and output, kept: a run done is not run "
            "again (default %(default)s)",
        )
        parser.add_argument(
            "--record-only",
            action="store_true",
            help="start no run: write --json from the runs of these cells, ranges "
            "and seeds complete in --out (e.g. after runs started apart)",
        )
        parser.add_argument(
            "--compare",
            metavar="OURS_JSON",
            type=input_file,
            help="print the comparison of --json (theirs) with this record of "
            "ours (examples/mistry_benchmark.py's) and stop",
        )

    def check_arguments(self, args, parser):
        args.keep_diverged = True  # a run of theirs that diverged is a finding
        try:
            self.cells = dict(parse_cell(c, args.ranges) for c in args.cells)
        except ValueError as error:
            parser.error(f"argument --cells: {error}")
        if args.compare is not None and not args.json.is_file():
            parser.error(
                "argument --json: expected their record to compare with "
                f"--compare, got {str(args.json)!r} (no such file)"
            )
        if args.compare is not None or args.record_only:
            return  # no run of their code
        used = sorted({CELLS[c][0] for c in self.cells})
        try:
            self.clones = code.find_repositories(args.peer_dir, used)
        except FileNotFoundError as error:  # one line, as argparse says it
            print(
                f"{parser.prog}: error: argument --peer-dir: {error}", file=sys.stderr
            )
            raise SystemExit(2) from None

    def main(self, argv=None):
        """Runs the oracle, or with `--compare` prints the comparison."""
        args = self.parse_args(argv)
        if args.compare is None:
            return super().main(argv)
        ours, theirs = (json.loads(p.read_text()) for p in (args.compare, args.json))
        print("\n".join(comparison_table(compare(ours, theirs))))
        return 0

    def train(self, args, _, session):
        """Every run of the cells (`run`), or with `--record-only` the rows
        of those complete in `--out`: the rows of their runs."""
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        start, self.wall = time.monotonic(), None
        if args.record_only:
            queue = runs_of_cells(self.cells, seeds)
            return rows(queue, args.out.resolve(), args.iterations)
        found = run(
            self.cells, seeds, args.iterations, args.out, self.clones, args.jobs
        )
        self.wall = time.monotonic() - start
        return found

    def report(self, args, rows):
        label = _label(EPSILONS[0])
        for (unit, operation, r), (wins, total, _) in _counts(rows, label).items():
            print(
                f"{unit} {operation} range {r}: {wins}/{total} solved (epsilon {label})"
            )

    def record(self, args, rows):
        """What the record adds: their code, the flags, how it ran, the
        criterion, and the runs' wall time (None with --record-only)."""
        used = sorted({CELLS[c][0] for c in self.cells})
        return {
            "code": {
                n: {k: REPOSITORIES[n][k] for k in ("name", "commit", "script")}
                for n in used
            },
            "flags": {
                f"{u}/{o}": f"the script's block experiment_name='{CELLS[u, o][1]}'"
                for u, o in self.cells
            },
            "environment": "their flags but --interpolation-range, "
            "--extrapolation-range, --seed, --max-iterations (the run's); one "
            "thread per run (LSB_DJOB_NUMPROC=1); stand-ins for tensorboardX "
            "(metrics at full precision), torchvision, pandas, tensorflow",
            "criterion": "extrapolation MSE < their threshold "
            "(nalu_research.tasks.mistry_threshold, at each epsilon) at the "
            "evaluation of lowest interpolation MSE (every 1,000 iterations, "
            "10,000 examples); sparsity error at that evaluation",
            "wall_seconds": self.wall,
        }


def main(argv=None):
    return MistryOracle().main(argv)
