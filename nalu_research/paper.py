"""The paper's figures, as data: `paper.json` beside this module.

Every table of Trask et al. (2018) that an experiment prints beside its own is
read from that one file (its "source" names the paper, each table's "about"
says what its numbers are), so no figure of the paper is typed twice.
"""

import json
from importlib import resources
from typing import Any

_TABLES = json.loads(resources.files(__package__).joinpath("paper.json").read_text())
SOURCE: str = _TABLES["source"]


def _tuples(rows: Any) -> Any:
    """The JSON's lists as tuples (a row of the paper is fixed)."""
    if isinstance(rows, dict):
        return {key: _tuples(value) for key, value in rows.items()}
    if isinstance(rows, list):
        return tuple(rows)
    return rows


def table(name: str) -> dict[str, Any]:
    """The rows of the paper's table `name` (e.g. "table_1_static")."""
    if name not in _TABLES or name == "source":
        known = sorted(key for key in _TABLES if key != "source")
        raise ValueError(f"table={name!r}: the paper has no such table; known: {known}")
    return _tuples(_TABLES[name]["rows"])
