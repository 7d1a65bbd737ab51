"""The library's modules import one another without a circle: each can be
imported first, alone, and none reaches into another's private names."""

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "keras_nalu"


def _module_name(path):
    parts = path.relative_to(LIBRARY.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules():
    return {_module_name(p): p for p in sorted(LIBRARY.rglob("*.py"))}


def _imports(path, modules):
    """`(module, names)` of each library module that `path` imports, at its
    top or inside a function (`from package import module` as `module`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            names = [alias.name for alias in node.names]
            for name in names:
                if f"{node.module}.{name}" in modules:
                    yield f"{node.module}.{name}", []
            others = [n for n in names if f"{node.module}.{n}" not in modules]
            if others:
                yield node.module, others


def _graph():
    modules = _modules()
    return {
        name: {imported for imported, _ in _imports(path, modules)} - {name}
        for name, path in modules.items()
    }


def _circle(graph):
    """A list of modules that import one another in a circle, or None."""
    state = {}

    def visit(module, trail):
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                return [*trail[trail.index(imported) :], imported]
            if imported not in state:
                found = visit(imported, [*trail, imported])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_the_circle_finder_finds_one():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


def test_the_library_has_no_import_circle():
    """Also counts imports inside functions (as `training` imports
    `distribute` only for a tf.distribute strategy)."""
    graph = _graph()
    assert "keras_nalu.distribute" in graph["keras_nalu.training"]
    assert _circle(graph) is None, " -> ".join(_circle(graph))


def _private_uses(path, modules):
    """`(module, name)` of each private name of another library module that
    `path` imports or reads as an attribute (`training._build`)."""
    tree = ast.parse(path.read_text())
    bound = {}  # a local name -> the library module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in modules:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif alias.name.startswith("_"):
                    yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            yield bound[node.value.id], node.attr


def test_no_module_uses_another_modules_private_names():
    """A private module (`keras_nalu._loops`) is the library's to share; a
    private name (`_build`) stays in its module."""
    modules = _modules()
    found = [
        f"{name} uses {imported}.{private}"
        for name, path in modules.items()
        for imported, private in _private_uses(path, modules)
        if imported != name
    ]
    assert not found, found
