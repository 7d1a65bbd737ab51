"""Collection rules for the whole repository (tests and doctests).

The grid world needs Gymnasium, which only the research extra installs: its
modules and tests are collected where it is installed (`make test` runs them
in .venv-research), and skipped from collection elsewhere.
"""

import importlib.util

GYMNASIUM_MODULES = [
    "nalu_research/tasks/grid_world.py",
    "nalu_research/experiments/grid_world.py",
    "nalu_research/models/grid_world.py",
    "nalu_research/records/grid_world.py",
    "tests/test_grid_world.py",
]

collect_ignore = [] if importlib.util.find_spec("gymnasium") else GYMNASIUM_MODULES
