"""What a long experiment shows while it runs and leaves behind: metrics
evaluated after every epoch (`Evaluation`), TensorBoard scalars
(`TensorBoardScalars`, `--tensorboard DIR`), its tables (`markdown_table`)
and the PNG plot beside the JSON results (`png_path`, `save_png`).

The progress lines themselves are `keras_nalu.training.Progress`, which
`keras_nalu.training.fit` prints and the seed-batched engine updates.

Importing it imports no Keras: the two callbacks subclass Keras's, so they
live in `nalu_research.callbacks`, which their names here load on first use.
"""

import argparse
import importlib.util
import io
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

INSTALL_RESEARCH = (
    'install the research extra (pip install ".[research]" in a checkout of '
    "keras-neural-arithmetic; make test creates .venv-research with it)"
)


def add_output_arguments(
    parser, json_default, what="results", shown_default=None, plot=True
):
    """Adds `--json` and, with `plot`, `--png` (default: beside the JSON,
    with the suffix .png; `png_path`) to `parser`; either refuses an
    existing folder.

    `json_default` is the default path of `--json`, or `None` when the script
    computes it after parsing, which `shown_default` then names in `--help`
    (e.g. `"results/mnist_TASK_DATASET.json"`). `--tensorboard` comes with
    `nalu_research.arguments.add_training_arguments`.
    """
    parser.add_argument(
        "--json",
        type=output_file,
        default=None if json_default is None else Path(json_default),
        help=f"the {what} as JSON (default {shown_default or json_default})",
    )
    if not plot:
        return
    parser.add_argument(
        "--png",
        type=output_file,
        default=None,
        help="the plot (default: beside --json, with the suffix .png)",
    )


def output_file(text):
    """argparse type: the path of a file to write (not an existing folder),
    where it can be written (checked before any work)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"expected a file, got the folder {text!r}")
    _check_writable(path, text)
    return path


def output_folder(text):
    """argparse type: the path of a folder to write in (not an existing
    file), where it can be created or written (checked before any work)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"expected a folder, got the file {text!r}")
    _check_writable(path, text)
    return path


def output_folder_name(text):
    """`output_folder`, as the text given (for arguments kept as strings)."""
    output_folder(text)
    return text


def input_file(text):
    """argparse type: the path of an existing file to read (e.g. an earlier
    run's `--json`), checked before any work."""
    path = Path(text)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise argparse.ArgumentTypeError(
            f"expected a file to read, got {text!r} ({what})"
        )
    return path


def _check_writable(path, text):
    """Raises `argparse.ArgumentTypeError` unless `path` can be created: its
    nearest existing ancestor is a folder in which a file can be created.

    Tried, not asked: `os.access` says yes to everything for root, also in
    `/proc`; creating (and deleting) a file there is the only true answer.
    """
    ancestor = path.absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    if ancestor != path.absolute() and not ancestor.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: {str(ancestor)!r} is a file, not a folder"
        )
    folder = ancestor if ancestor.is_dir() else ancestor.parent
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: creating a file in {str(folder)!r} fails "
            f"({error.strerror or error})"
        ) from None


def save_json(data, path):
    """Writes `data` as indented JSON at `path`, creating its folder, through
    a `.partial` file renamed at the end: never a half-written result. A
    list of numbers (and other scalars) stays on one line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(compact_lists(json.dumps(data, indent=1, default=str)))
    partial.replace(path)


# An indented list whose items are scalars: no bracket or brace inside (a
# newline inside a JSON string is written as the two characters "\n").
_SCALAR_LIST = re.compile(r"\[\n\s*([^\[\]{}]*?)\n\s*\]")


def compact_lists(text):
    """Indented JSON `text` with each list of scalars on one line: the same
    data (`json.loads` reads both alike), a line per list, not per item."""
    return _SCALAR_LIST.sub(
        lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text
    )


def markdown_table(header, rows, align=None):
    """The lines of a markdown table: `header` (the column names), the
    separator, then each row of `rows` (each a sequence of cells, converted
    with str, as many as the header's; an empty cell prints as `| |`).

    With `align`, a string of `<` (left) or `>` (right) per column, every
    cell is padded to its column's widest, header included, for a terminal.

    >>> markdown_table(["a", "b"], [[1, 2]])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
    >>> for line in markdown_table(["", "x"], [["y", ""]]):
    ...     print(line)
    | | x |
    |---|---|
    | y | |
    >>> for line in markdown_table(["model", "error"], [["NAC", 0.5], ["NALU", 12]],
    ...                            align="<>"):
    ...     print(line)
    | model | error |
    |-------|-------|
    | NAC   |   0.5 |
    | NALU  |    12 |
    >>> try:
    ...     markdown_table(["a", "b"], [[1, 2], [3]])
    ... except ValueError as error:
    ...     error.name, error.expected
    ('rows[1]', '2 cells, as many as the header (it has 1)')
    >>> try:
    ...     markdown_table(["a", "b"], [[1, 2]], align="<")
    ... except ValueError as error:
    ...     error.name, error.expected
    ('align', "one of '<' or '>' per column (2)")
    """
    table = [[str(cell) for cell in header]]
    for index, row in enumerate(rows):
        cells = [str(cell) for cell in row]
        if len(cells) != len(table[0]):
            from keras_nalu.validation import invalid

            raise invalid(
                f"rows[{index}]",
                f"{len(table[0])} cells, as many as the header (it has {len(cells)})",
                row,
            )
        table.append(cells)
    if align is None:
        separator = "|" + "---|" * len(table[0])
        lines = [_markdown_row(cells) for cells in table]
        return [lines[0], separator, *lines[1:]]
    if len(align) != len(table[0]) or set(align) - set("<>"):
        from keras_nalu.validation import invalid

        raise invalid("align", f"one of '<' or '>' per column ({len(table[0])})", align)
    widths = [max(map(len, column)) for column in zip(*table, strict=True)]
    lines = [
        "| "
        + " | ".join(
            cell.ljust(w) if a == "<" else cell.rjust(w)
            for cell, w, a in zip(cells, widths, align, strict=True)
        )
        + " |"
        for cells in table
    ]
    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return [lines[0], separator, *lines[1:]]


def _markdown_row(cells):
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def add_tensorboard_argument(parser):
    """Adds `--tensorboard DIR` to `parser`."""
    parser.add_argument(
        "--tensorboard",
        type=_log_dir,
        default=None,
        metavar="DIR",
        help="write TensorBoard logs here, a folder per run: the loss and the "
        "experiment's metrics at every evaluation, against the training step "
        "(open them with `tensorboard --logdir DIR`)",
    )


def tensorboard(args, *run):
    """`[TensorBoardScalars(DIR/run...)]` with `--tensorboard DIR`, else `[]`:
    the callbacks to add, last, to a run named by the parts `run`."""
    if args.tensorboard is None:
        return []
    from nalu_research.callbacks import TensorBoardScalars

    return [TensorBoardScalars(Path(args.tensorboard).joinpath(*map(str, run)))]


def _log_dir(text):
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"expected a folder for the TensorBoard logs, got the file {text!r}"
        )
    _check_writable(path, text)
    if importlib.util.find_spec("tensorboard") is None:
        raise argparse.ArgumentTypeError(
            f"writing TensorBoard logs needs the tensorboard package, which is "
            f"not installed: {INSTALL_RESEARCH}"
        )
    return path


def png_path(args):
    """`--png`, or the path of `--json` with the suffix .png. Call it when
    parsing: without matplotlib, which draws the plot, it exits at once with
    status 2 and says so (not after the training)."""
    if importlib.util.find_spec("matplotlib") is None:
        print(
            f"{Path(sys.argv[0]).name}: error: the plot (--png) needs matplotlib, "
            f"which is not installed: {INSTALL_RESEARCH}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return Path(args.png) if args.png else Path(args.json).with_suffix(".png")


def save_png(fig, path):
    """Saves the matplotlib figure `fig` as a 256-colour PNG at `path` (small
    enough to commit for the docs), creating its folder, and closes it."""
    import matplotlib.pyplot as plt
    from PIL import Image  # matplotlib needs Pillow, so it is there

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    Image.open(buffer).convert("RGB").quantize(256).save(
        partial, format="png", optimize=True
    )
    partial.replace(path)  # never a half-written plot


def pyplot():
    """matplotlib's pyplot on the Agg backend (files, no screen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def spread_and_solved(values, below):
    """Two table cells of per-seed errors: `median [min, max]` (`1.2e-03
    [...]`) and how many are at most `below` (`7/10`)."""
    values = np.asarray(values, dtype=np.float64)
    return (
        f"{np.median(values):.1e} [{values.min():.1e}, {values.max():.1e}]",
        f"{int(np.sum(values <= below))}/{len(values)}",
    )


def __getattr__(name):
    if name in ("Evaluation", "TensorBoardScalars"):  # Keras's: on first use
        from nalu_research import callbacks

        return getattr(callbacks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
