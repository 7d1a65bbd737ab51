"""What is written once stays true of the tree: every layer the package
exports has its API page and its navigation entry, and the layout on
docs/development.md names every module of the library and the harness, and
nothing that is not there."""

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

import keras_nalu

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOK = "docs/_hooks/layer_pages.py"


def _layer_pages_hook():
    spec = importlib.util.spec_from_file_location("layer_pages", ROOT / HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages_in(nav):
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        yield from _pages_in(value) if isinstance(value, list) else [value]


def test_every_layer_has_its_api_page_and_a_navigation_entry():
    """docs/api/layers/NAME.md for each name of `keras_nalu.layers.__all__`
    and no other; MkDocs lists them through the hook, which reads them."""
    hook = _layer_pages_hook()
    exported = set(keras_nalu.layers.__all__)
    pages = set(hook.layer_pages(DOCS))  # a page not in the hook's form raises
    assert not exported - pages, f"no docs/api/layers/NAME.md: {exported - pages}"
    assert not pages - exported, f"pages of no exported layer: {pages - exported}"
    mkdocs = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert HOOK in mkdocs["hooks"]
    config = hook.on_config({"nav": mkdocs["nav"], "docs_dir": str(DOCS)})
    listed = set(_pages_in(config["nav"]))
    assert {f"api/layers/{name}.md" for name in exported} <= listed


def test_a_layer_page_out_of_form_is_named(tmp_path):
    (tmp_path / "api" / "layers").mkdir(parents=True)
    page = tmp_path / "api" / "layers" / "Cube.md"
    page.write_text("# keras_nalu.Cube\n\n::: keras_nalu.Cube\n")
    with pytest.raises(ValueError, match="Cube.md: expected '# keras_nalu.Cube'"):
        _layer_pages_hook().layer_pages(tmp_path)


# The layout block of docs/development.md (its first ```text block after
# "## Layout") is a tree. A line indented by fewer than NAME_INDENT spaces names
# paths: the words before its first two spaces, separated by commas, each inside
# the nearest folder above it that is indented less (a folder's name ends in
# "/"). The rest of such a line, and the lines indented further, describe them.
NAME_INDENT = 16
FOLDERS = ("keras_nalu", "nalu_research")


def layout_paths(page):
    """The paths, relative to the repository's root, that `page`'s layout
    block names, in its order."""
    block = re.search(r"^## Layout\n.*?^```text\n(.*?)^```", page, re.M | re.S)
    folders, paths = [], []  # folders: (indent, path) of the folders above
    for line in block[1].splitlines():
        indent = len(line) - len(line.lstrip())
        if not line.strip() or indent >= NAME_INDENT:
            continue
        while folders and folders[-1][0] >= indent:
            folders.pop()
        parent = folders[-1][1] if folders else ""
        names = re.split(r" {2}", line.strip())[0].split(",")
        for name in filter(None, map(str.strip, names)):
            paths.append(parent + name)
            if name.endswith("/"):
                folders.append((indent, parent + name))
    return paths


def test_the_development_layout_names_every_module_and_only_what_exists():
    named = layout_paths((DOCS / "development.md").read_text())
    absent = [
        path
        for path, there in ((path, ROOT / path) for path in named)
        if not (there.is_dir() if path.endswith("/") else there.exists())
    ]
    modules = sorted(
        path.relative_to(ROOT).as_posix()
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )
    unnamed = [module for module in modules if module not in named]
    assert not absent and not unnamed, (
        "docs/development.md's layout block is out of date: update it "
        f"(the rule: tests/test_layout.py). Named but not in the tree: {absent}; "
        f"modules it does not name: {unnamed}"
    )
