"""The Feynman equations: formulas from data, beside a symbolic-regression library.

The 100 equations of Udrescu & Tegmark (2020), `nalu_research.tasks.feynman`,
each seed on its own data (`scoring`). One recipe for every equation (`search`)
finds a formula, a constant times a product of powers of the inputs and of
at most two sums, which `keras_nalu.expressions` writes off the units it is
loaded into (`formula`); beside it, gplearn and a ReLU network (`peers`).
The report's and the page's tables and figure are `tables`'.

    python examples/feynman.py --equation I.12.2        # one equation
    python examples/feynman.py --csv data.csv           # your data
    python examples/feynman.py \\
        --json docs/experiments/feynman/feynman.json    # the page's run
"""

from nalu_research.arguments import Shared, add_selection, non_negative_float
from nalu_research.experiment import Experiment
from nalu_research.experiments.feynman import formula, peers, scoring, search, tables
from nalu_research.monitoring import input_file, markdown_table
from nalu_research.tasks import feynman as task


class Feynman(Experiment):
    """The Feynman equations (Udrescu & Tegmark, 2020): formulas from data,
    beside gplearn."""

    arguments = {
        "seeds": 5,
        "examples": Shared(
            task.TRAIN_SIZE,
            help="training points per seed, a fifth of them held out "
            "(default %(default)s)",
        ),
    }
    record_path = "results/feynman.json"
    run_unit = "equation"

    def add_arguments(self, parser):
        parser.add_argument(
            "--equation",
            nargs="+",
            metavar="NAME",
            help="only these equations (e.g. I.12.2; default: every one of --forms)",
        )
        add_selection(parser, "--forms", task.FORMS, "the forms of the equations run")
        parser.add_argument(
            "--csv",
            type=input_file,
            metavar="PATH",
            help="your data instead: a CSV file with a header, columns the "
            "variables (positive), the last the target; the rows where a "
            "variable is above its 90th percentile are held back to check "
            "extrapolation",
        )
        parser.add_argument(
            "--noise",
            type=non_negative_float,
            default=0.0,
            help="Gaussian noise on the targets, times their RMS (e.g. 0.01; "
            "default %(default)s)",
        )
        add_selection(
            parser, "--peers", peers.PEERS, "the peers run beside ours", empty=True
        )

    def check_arguments(self, args, parser):
        known = {e.name for e in task.equations()}
        for name in args.equation or ():
            if name not in known:
                parser.error(
                    f"--equation: expected names of the Feynman table, e.g. "
                    f"I.12.2, got {name!r}"
                )

    def prepare(self, args, session):
        if args.csv is not None:
            self.chosen = []
            return
        self.chosen = [
            e
            for e in task.equations()
            if (e.name in args.equation if args.equation else e.form in args.forms)
        ]
        print(
            f"{len(self.chosen)} equations x {args.seeds} seeds, "
            f"{args.examples} training points each"
            + (f", noise {args.noise:g}" if args.noise else "")
        )

    def runs(self, args):
        if args.csv is not None:
            return [("csv",)]
        return [(e.name,) for e in self.chosen]

    def train(self, args, run, session):
        if args.csv is not None:
            return self.user_data(args)
        equation = task.equation(run[0])
        found = [
            scoring.run_equation(equation, seed, args.examples, args.noise, args.peers)
            for seed in range(args.seeds)
        ]
        row = {
            "equation": equation.name,
            "form": equation.form,
            "formula": str(equation.expression),
            "seeds": [result for result, _ in found],
        }
        if "dense" in args.peers:
            row["dense"] = scoring.dense([data for _, data in found])
        if args.equation is not None:
            self.describe(row)
        return row

    def describe(self, row):
        """Prints what one equation found, seed by seed."""
        print(f"\n{row['equation']} ({row['form']}): y = {row['formula']}")
        for result in row["seeds"]:
            found = result["ours"]
            print(
                f"  seed {result['seed']}: y = {found['formula']}  "
                f"({'recovered' if found['recovered'] else 'not recovered'}; "
                f"extrapolation error {found['extrapolation']:.1e}, "
                f"{found['seconds']:.1f} s)"
            )

    def user_data(self, args):
        names, x, y = scoring.read_csv(args.csv)
        far = scoring.far_rows(x)
        found = scoring.ours(x[~far], y[~far], names)
        y_hat = scoring.evaluate(found["expression"], task.symbols(names), x[far])
        error = scoring.median_relative_error(y_hat, y[far])
        print(f"\ny = {scoring.text(found['expression'])}")
        print(
            f"extrapolation check: median relative error {error:.1e} on the "
            f"{int(far.sum())} rows where a variable is above its 90th "
            f"percentile (fitted on the other {int((~far).sum())}, "
            f"{found['seconds']:.1f} s)"
        )
        return {
            "csv": str(args.csv),
            "formula": scoring.text(found["expression"]),
            "extrapolation": error,
            "seconds": found["seconds"],
        }

    def run_name(self, run, row):
        return run[0]

    def progress(self, row):
        if "seeds" not in row:
            return {}
        return {
            who: sum(s.get(who, {}).get("recovered", 0) for s in row["seeds"])
            for who in ("ours", "gplearn")
        }

    def report(self, args, rows):
        if args.csv is not None or not rows:
            return
        print()
        print("\n".join(markdown_table(*tables.counts_table(rows, args.seeds))))
        print(f"\nIn {self.elapsed():.0f} s.")

    def record(self, args, rows):
        if args.csv is not None:
            return {}
        return {
            "counts": tables.counts(rows, args.seeds),
            "recovered_yet_far": tables.recovered_yet_far(rows),
            "recipe": {
                "held_out": scoring.HELD_OUT,
                "screen_size": search.SCREEN_SIZE,
                "top": search.TOP,
                "extend": search.EXTEND,
                "betas": search.BETAS,
                "snap_rtol": formula.SNAP_RTOL,
                "recovery_rtol": task.RECOVERY_RTOL,
                "extrapolated_below": tables.EXTRAPOLATED,
            },
            "dense": peers.DENSE,
        }

    def plot(self, args, rows, plt):
        if args.csv is not None or not rows:
            return None
        return tables.figure(rows, plt)


def main(argv=None):
    return Feynman().main(argv)
