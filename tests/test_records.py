"""The docs' and the README's generated tables equal what their records
produce (`python -m nalu_research.records --check`), and the mechanism that
rewrites them works on a page of its own."""

import json
import re

import pytest

from nalu_research import records

# Some tables need SciPy (a mean's t interval), which the research extra installs.
pytestmark = pytest.mark.research


def generated_pages():
    return [
        page for page in records.pages() if records.MARKERS.search(page.read_text())
    ]


@pytest.mark.parametrize(
    "page", generated_pages(), ids=lambda page: str(page.relative_to(records.ROOT))
)
def test_generated_tables_equal_their_records(page):
    text = page.read_text()
    new, calls = records.regenerate(text)
    differ = [call for call, changed in calls if changed]
    assert not differ, (
        f"{page.name}: {differ} differ from their records; run "
        "`python -m nalu_research.records` and read the difference"
    )
    assert new == text


@pytest.mark.parametrize("page", sorted(records.WHOLE))
def test_pages_generated_whole_equal_their_records(page):
    text = (records.ROOT / page).read_text()
    assert records.function_named(records.WHOLE[page])() == text


def test_every_table_call_names_a_function_of_the_package():
    for page in generated_pages():
        for match in records.MARKERS.finditer(page.read_text()):
            name = match["call"].split()[0]
            assert callable(records.function_named(name)), (page, name)


def test_docs_keep_no_record_beside_the_pages():
    """Records and plots live in their page's folder, not at the top of docs/."""
    assert not list(records.DOCS.glob("*.json"))
    assert not list(records.DOCS.glob("*.png"))


def test_every_record_a_page_links_exists():
    linked = re.compile(r"\]\(([^)#\s]+\.(?:json|png))\)")
    for page in records.pages():
        for target in linked.findall(page.read_text()):
            assert (page.parent / target).is_file(), (page, target)


def page_with_table(tmp_path, body):
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\nText.\n\n"
        "<!-- table: runs.solved a+b -->\n"
        f"{body}"
        "<!-- /table -->\n\nMore text: | not | a table |\n"
    )
    return page


def solved_table(tmp_path):
    """A table function over a record in `tmp_path`, as the package's read
    theirs: `solved(operation)`."""
    record = tmp_path / "runs.json"
    record.write_text(json.dumps({"runs": [
        {"operation": "a+b", "seed": 0, "success": True},
        {"operation": "a+b", "seed": 1, "success": False},
        {"operation": "a*b", "seed": 0, "success": True},
    ]}))  # fmt: skip

    def solved(operation):
        runs = [r for r in json.loads(record.read_text())["runs"]
                if r["operation"] == operation]  # fmt: skip
        wins = sum(r["success"] for r in runs)
        return f"| op | solved |\n|---|---|\n| {operation} | {wins}/{len(runs)} |"

    return record, {"runs.solved": solved}.__getitem__


def test_regenerate_rewrites_what_sits_between_the_markers(tmp_path):
    record, find = solved_table(tmp_path)
    page = page_with_table(tmp_path, "| op | solved |\n|---|---|\n| a+b | 2/2 |\n")
    new, calls = records.regenerate(page.read_text(), find)
    assert calls == [("runs.solved a+b", True)]
    assert "| a+b | 1/2 |\n<!-- /table -->" in new
    assert "| a+b | 2/2 |" not in new
    # Everything outside the markers stays as it was.
    assert new.startswith("# A page\n\nText.\n\n<!-- table: runs.solved a+b -->\n")
    assert new.endswith("<!-- /table -->\n\nMore text: | not | a table |\n")
    # Regenerated, the page equals its record; a changed record differs again.
    assert records.regenerate(new, find) == (new, [("runs.solved a+b", False)])
    record.write_text(json.dumps({"runs": [{"operation": "a+b", "success": True}]}))
    assert records.regenerate(new, find)[1] == [("runs.solved a+b", True)]


def test_regenerate_fills_empty_markers(tmp_path):
    _, find = solved_table(tmp_path)
    new, _ = records.regenerate(page_with_table(tmp_path, "").read_text(), find)
    assert "<!-- table: runs.solved a+b -->\n| op | solved |\n" in new


def test_arguments_are_split_as_a_shell_splits_them():
    seen = []
    text = '<!-- table: t.f "signed a*b" 19 -->\n<!-- /table -->\n'
    records.regenerate(text, lambda name: lambda *args: seen.append(args) or "x")
    assert seen == [("signed a*b", "19")]


@pytest.mark.parametrize(
    "name, message",
    [("solved", "MODULE.FUNCTION"), ("first_contact.nothing", "unknown table")],
)
def test_an_invalid_table_name_raises(name, message):
    with pytest.raises(ValueError, match=message):
        records.function_named(name)


def test_check_exits_1_and_shows_the_difference(tmp_path, capsys, monkeypatch):
    _, find = solved_table(tmp_path)
    monkeypatch.setattr(records, "function_named", find)
    page = page_with_table(tmp_path, "| op | solved |\n|---|---|\n| a+b | 2/2 |\n")
    before = page.read_text()
    assert records.main(["--check", str(page)]) == 1
    out = capsys.readouterr().out
    assert "table 'runs.solved a+b' differs from its records" in out
    assert "-| a+b | 2/2 |\n+| a+b | 1/2 |" in out
    assert page.read_text() == before  # --check rewrites nothing
    assert records.main([str(page)]) == 0
    assert "| a+b | 1/2 |" in page.read_text()
    assert records.main(["--check", str(page)]) == 0
