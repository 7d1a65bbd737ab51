"""A griffe extension: show a default that names a constant as its value.

The signatures read defaults from the source, so `epsilon=DEFAULT_EPSILON`
renders as `nalu_ops.DEFAULT_EPSILON` and a schedule's start as
`DEFAULT_SCHEDULE['regularization_start']`, which tells a reader nothing.
This extension evaluates such a default in its module (imported; where it
cannot be, as a harness module without the research extra, its defaults stay
as written) and shows the
number, string or boolean it is: `1e-07`, `20000`. Defaults that are not a
plain value (an initializer's config dict) stay as written.
"""

import ast
import importlib

import griffe

_PLAIN = (bool, int, float, str, type(None))


class ConstantDefaults(griffe.Extension):
    """Replaces each parameter default that names a constant by its value."""

    def on_function_instance(self, *, func, **kwargs):
        module = None
        for parameter in func.parameters:
            default = parameter.default
            if default is None or not isinstance(default, griffe.Expr):
                continue
            text = str(default)
            try:
                ast.literal_eval(text)
                continue  # already a value
            except (ValueError, SyntaxError):
                pass
            if module is None:
                try:
                    module = importlib.import_module(func.module.path)
                except Exception:  # noqa: BLE001 (e.g. a research dependency)
                    return  # the defaults stay as written
            try:
                value = eval(text, vars(module))  # noqa: S307 (our own source)
            except Exception:  # noqa: BLE001 (keep what is written)
                continue
            if isinstance(value, _PLAIN):
                parameter.default = repr(value)
