"""An MkDocs hook: the navigation and the overview of the layers' API pages,
from the pages in docs/api/layers/.

Each layer of `keras_nalu` has one page, `docs/api/layers/NAME.md`:

    # keras_nalu.NAME

    What it computes, in one paragraph without links (a sentence's capital
    is lowered in the overview's table).

    A paragraph that links the page explaining it: [title](../../PAGE.md).

    ::: keras_nalu.NAME

`on_config` adds every page to the navigation, after the overview's entry
(`api/layers.md`), and `on_page_markdown` writes the overview's table, one
row per page, where the overview says `<!-- layer pages -->`. A new layer's
page is then the one documentation edit it needs; `tests/test_layout.py`
checks that every layer exported by `keras_nalu.layers` has its page.
"""

import re
from pathlib import Path

OVERVIEW = "api/layers.md"
FOLDER = "api/layers"
MARKER = "<!-- layer pages -->"
_LINK = re.compile(r"\[([^\]]+)\]\(\.\./\.\./([^)]+)\)")


def layer_pages(docs_dir):
    """`{NAME: (what it computes, link title, link target)}` of the pages in
    docs/api/layers/, in the order of their names; a `ValueError` names a
    page not in the form above."""
    pages = {}
    for path in sorted(Path(docs_dir, FOLDER).glob("*.md")):
        name = path.stem
        paragraphs = [p.strip() for p in path.read_text().split("\n\n") if p.strip()]
        link = _LINK.search("\n".join(paragraphs[2:-1]))
        if (
            len(paragraphs) < 4
            or paragraphs[0] != f"# keras_nalu.{name}"
            or "](" in paragraphs[1]
            or "|" in paragraphs[1]
            or link is None
            or not paragraphs[-1].startswith(f"::: keras_nalu.{name}")
        ):
            raise ValueError(
                f"{path}: expected '# keras_nalu.{name}', a paragraph of what it "
                "computes (no link, no '|'), a paragraph linking the page that "
                f"explains it ([title](../../PAGE.md)), then '::: keras_nalu.{name}'"
            )
        what = " ".join(paragraphs[1].split())
        if what[1:2].islower() or what[1:2] == " ":  # "An NMU ..." -> "an NMU ..."
            what = what[0].lower() + what[1:]
        pages[name] = (what, link[1], link[2])
    return pages


def _section_with(nav, page):
    """The list of `nav` (nested) holding the entry whose page is `page`."""
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if value == page:
            return nav
        if isinstance(value, list) and (found := _section_with(value, page)):
            return found
    return None


def on_config(config):
    section = _section_with(config["nav"], OVERVIEW)
    if section is None:
        raise ValueError(f"mkdocs.yml: the navigation has no entry for {OVERVIEW}")
    pages = layer_pages(config["docs_dir"])
    section.extend({name: f"{FOLDER}/{name}.md"} for name in pages)
    return config


def on_page_markdown(markdown, page, config, **kwargs):
    if page.file.src_uri != OVERVIEW:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{OVERVIEW} lacks the marker {MARKER} of its table")
    rows = [
        f"| [`keras_nalu.{name}`][keras_nalu.{name}] | {what} | [{title}](../{to}) |"
        for name, (what, title, to) in layer_pages(config["docs_dir"]).items()
    ]
    table = ["| name | what it computes | page |", "|---|---|---|", *rows]
    return markdown.replace(MARKER, "\n".join(table))
