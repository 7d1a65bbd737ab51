"""The tables of the docs and the README, generated from the records they show.

A run writes one record (a JSON file). A page keeps the records it shows in
the folder named after it, beside it: `docs/experiments/mnist-parity.md`
keeps its records and plots in `docs/experiments/mnist-parity/`, `docs/gpu.md`
in `docs/gpu/`. A record that several pages show lives with the page of the
experiment that produced it; the others link to it there.

A table generated from records sits in its page between two markers:

    <!-- table: first_contact.errors a+b -->
    | unit | after 20 epochs | ... |
    <!-- /table -->

`first_contact.errors` names a function of this package (the function
`errors` of `nalu_research/records/first_contact.py`; a module per page, named
after it), and the words after it are the function's arguments, as strings (split as a
shell splits them: `"signed a*b"` is one).
The function reads the page's records by path and returns the table's
markdown; what sits between the markers is replaced by it:

    python -m nalu_research.records           # rewrite every generated table
    python -m nalu_research.records --check   # exit 1, naming each table that differs

A page that an experiment writes whole from its record is checked whole:
`docs/gpu.md`, `make gpu-check`'s report of `docs/gpu/gpu.json` (`WHOLE`).

A figure typed into a page is a claim no record backs: where one disagreed
with its record, the record won when its table became generated.
"""

import argparse
import difflib
import functools
import importlib
import json
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# `<!-- table: NAME ARG ... -->`, the generated lines, `<!-- /table -->`.
MARKERS = re.compile(
    r"^(?P<open><!-- table: (?P<call>[^>]*?) -->\n)"
    r"(?P<body>.*?)"
    r"^(?P<close><!-- /table -->)$",
    re.MULTILINE | re.DOTALL,
)


# Pages generated whole: the page, relative to the root, and its function.
WHOLE = {"docs/gpu.md": "gpu.page"}


def pages(root=ROOT):
    """The files whose tables may be generated: the README and every page."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


@functools.cache
def record(path):
    """The record at `path` (relative to `docs/`), read once."""
    return json.loads((DOCS / path).read_text())


def function_named(name):
    """The table function `MODULE.FUNCTION` of this package."""
    module, _, function = name.rpartition(".")
    if not module or not re.fullmatch(r"[a-z_][a-z0-9_]*", module):
        raise ValueError(
            f"Received an invalid table name, expected MODULE.FUNCTION of "
            f"nalu_research.records. Received: {name!r}"
        )
    found = getattr(importlib.import_module(f"{__name__}.{module}"), function, None)
    if found is None:
        raise ValueError(
            f"Received an unknown table name, expected a function of "
            f"nalu_research.records.{module}. Received: {name!r}"
        )
    return found


def generated(call, find=None):
    """The markdown of the table `call` (`NAME ARG ...`, split as a shell
    splits words: `"signed a*b"` is one argument), ending in a newline;
    `find` maps a name to its function (default `function_named`)."""
    name, *args = shlex.split(call)
    text = (find or function_named)(name)(*args)
    return text.rstrip("\n") + "\n"


def regenerate(text, find=None):
    """`text` with every generated table rewritten: `(new_text, calls)`,
    where `calls` lists each table's call with whether it changed."""
    calls = []

    def replace(match):
        body = generated(match["call"], find)
        calls.append((match["call"], body != match["body"]))
        return match["open"] + body + match["close"]

    return MARKERS.sub(replace, text), calls


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nalu_research.records",
        description="Rewrite the tables of the docs pages and the README from "
        "their records (between <!-- table: NAME ARG ... --> and <!-- /table -->).",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="rewrite nothing; exit 1 listing each table that differs from "
        "its records, with the difference",
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="the pages (default: README.md and docs/)"
    )
    args = parser.parse_args(argv)
    differ = tables = 0
    whole = {ROOT / page: name for page, name in WHOLE.items()}
    for page in args.files or pages():
        text = page.read_text()
        if page.resolve() in whole:
            name = whole[page.resolve()]
            new = function_named(name)()
            calls = [(name, new != text)]
        else:
            new, calls = regenerate(text)
        tables += len(calls)
        changed = [call for call, change in calls if change]
        differ += len(changed)
        if not changed:
            continue
        shown = page.resolve()
        shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else page
        for call in changed:
            print(f"{shown}: table {call!r} differs from its records")
        if args.check:
            sys.stdout.writelines(
                difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), str(shown), str(shown)
                )
            )
        else:
            page.write_text(new)
    verb = "differ from" if args.check else "rewritten from"
    print(f"{differ} of {tables} generated tables {verb} their records.")
    return 1 if args.check and differ else 0
