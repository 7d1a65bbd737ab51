"""A griffe extension: render Keras-style doctest examples as code.

Our docstrings follow Keras's layout, where the doctests sit flush under an
`Example:` line after a blank line. Google style (what griffe parses) wants a
section's body indented under its title, so without this extension the `>>>`
lines render as nested Markdown block quotes. This extension rewrites, before
parsing, an `Example:` or `Examples:` title followed by a blank line into an
indented `Examples:` section (rendered with syntax highlighting), and fences
any other run of `>>>` lines as a `pycon` code block. The docstrings
themselves, and the doctests pytest runs from them, are unchanged.
"""

import re

import griffe

_TITLE = re.compile(r"^Examples?:\s*$")
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")  # e.g. "Reference:"


def _examples_section(lines, start):
    """Indents the body after the title at `start`; returns (lines, end)."""
    end = start + 1
    while end < len(lines) and not _SECTION.match(lines[end]):
        end += 1
    body = lines[start + 1 : end]
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    indented = ["    " + line if line.strip() else "" for line in body]
    return ["Examples:", *indented, ""], end


def _fenced(lines, start):
    """Fences the doctest run at `start`; returns (lines, end)."""
    end = start
    while end < len(lines) and lines[end].strip():
        end += 1
    return ["```pycon", *lines[start:end], "```"], end


def rewrite(text):
    """Returns the docstring `text` with its doctests made renderable."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        rest = [other for other in lines[i + 1 :] if other.strip()]
        if _TITLE.match(line) and rest and rest[0].startswith(">>>"):
            block, i = _examples_section(lines, i)
        elif line.startswith(">>>"):
            block, i = _fenced(lines, i)
        else:
            block, i = [line], i + 1
        out.extend(block)
    return "\n".join(out)


class DoctestSections(griffe.Extension):
    """Rewrites every docstring's doctests when its object is loaded."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = rewrite(obj.docstring.value)
