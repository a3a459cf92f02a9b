"""One variable in a line: what ``list_variables`` shows of each (type, size, memory,
preview; a table's columns, an array's shape and dtype).

Libraries are recognised through ``sys.modules`` only: if pandas is not imported, nothing
in the namespace is a pandas object, and nothing here imports it to find out. Exact
builtins (numbers, strings, containers' lengths) are read inline, since their methods are
not the person's code; everything else, a library's summary included, is one bounded look
(:class:`~agent_kernel.tools.looking.Looker`) whose failure is a word in the preview.
"""


from __future__ import annotations

import sys
import types
from collections.abc import Callable
from itertools import islice
from typing import TypedDict

from agent_kernel.tools.looking import PREVIEW_CHARS, Failed, Looker, clip, short_repr

RESULT_CHARS = 8000
"""A result's JSON stays about this long (a figure's image aside: see variable_details)."""
COLUMNS = 20
"""Columns listed per table in ``list_variables`` (``size`` says how many there are)."""
_SCALARS = (int, float, complex, bool, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset)
_SHORT_NAMES = ("pandas", "numpy", "polars", "matplotlib")
_CALLABLES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              types.BuiltinMethodType)


class Column(TypedDict):
    """One column of a table: its name and dtype, as the library words them."""

    name: str
    dtype: str


class _Summary(TypedDict):
    name: str
    type: str
    size: str | None
    """Words: "120 rows × 4 columns", "3 items", "12 characters"; None for a scalar."""
    memory_bytes: int | None
    """The object's own memory (a DataFrame: without ``deep``; a list: its slots only)."""
    preview: str


class VariableSummary(_Summary, total=False):
    """One row of ``list_variables`` (tables add columns and shape, arrays shape and dtype)."""

    columns: list[Column]
    shape: list[int]
    dtype: str


class Described(TypedDict, total=False):
    """What a describer found (the keys of :class:`VariableSummary` it knows)."""

    size: str | None
    memory_bytes: int | None
    preview: str
    columns: list[Column]
    shape: list[int]
    dtype: str


def library(name: str, attribute: str) -> type | None:
    """``sys.modules[name].attribute`` if the person has imported ``name``; never imports."""
    module = sys.modules.get(name)
    found = getattr(module, attribute, None) if module is not None else None
    return found if isinstance(found, type) else None


def is_a(kind: type, module: str, attribute: str) -> bool:
    """Is ``kind`` ``module.attribute`` or a subclass? (By the type only: an object's
    ``__class__`` may be a property, ``isinstance`` would call it.)"""
    base = library(module, attribute)
    return base is not None and issubclass(kind, base)


def type_name(kind: type) -> str:
    """``DataFrame`` as ``pandas.DataFrame``, builtins and ``__main__`` bare, else dotted."""
    try:
        module = type.__getattribute__(kind, "__module__")
        name = type.__getattribute__(kind, "__qualname__")
    except Exception:
        module, name = "", ""
    if not isinstance(module, str) or not isinstance(name, str):
        module, name = "", str(type.__getattribute__(type, "__name__"))
    if module in ("builtins", "__main__", ""):
        return name
    top = module.split(".")[0]
    return f"{top}.{name}" if top in _SHORT_NAMES else f"{module}.{name}"


def count(n: int, one: str, many: str | None = None) -> str:
    """``1 row``, ``1,200 rows``."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def table_size(rows: int, columns: int) -> str:
    """``120 rows × 4 columns``."""
    return f"{count(rows, 'row')} × {count(columns, 'column')}"


def array_size(shape: tuple[int, ...]) -> str:
    """``1,000 × 3 array`` (one dimension: ``1,000 items``)."""
    if len(shape) == 1:
        return count(shape[0], "item")
    if not shape:
        return "one value"
    return " × ".join(f"{n:,}" for n in shape) + " array"


def _defined_by_builtin(kind: type, method: str) -> bool:
    """Is ``kind.method`` a builtin type's (so calling it runs none of the person's code)?"""
    for klass in kind.__mro__:
        if method in klass.__dict__:
            return klass.__dict__.get("__module__", "builtins") == "builtins" \
                and klass in (object, *_SCALARS, str, bytes, bytearray, *_CONTAINERS)
    return False


def _has(kind: type, method: str) -> bool:
    return any(method in klass.__dict__ for klass in kind.__mro__)


def plain(value: object) -> object:
    """A numpy scalar as the Python number it holds (``1.5``, not ``np.float64(1.5)``)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        try:
            return value.item()
        except Exception:
            return value
    return value


def _row_preview(values: list[tuple[str, object]], more: bool) -> str:
    shown = ", ".join(f"{clip(name, 30)}={short_repr(plain(value), 40)}" for name, value in values)
    return clip(f"first row: {shown}{', …' if more else ''}")


# -- describers: each runs inside one look (it may run library or person's code) ----------
def _pandas_frame(frame: object) -> Described:
    rows, width = frame.shape  # type: ignore[attr-defined]
    dtypes = frame.dtypes  # type: ignore[attr-defined]
    columns: list[Column] = [{"name": clip(str(col), 60), "dtype": str(kind)}
                             for col, kind in islice(dtypes.items(), COLUMNS)]
    memory = int(frame.memory_usage(index=True, deep=False).sum())  # type: ignore[attr-defined]
    preview = "no rows"
    if rows:
        first = frame.iloc[0, :6]  # type: ignore[attr-defined]
        preview = _row_preview([(str(k), v) for k, v in first.items()], width > 6)
    return {"size": table_size(rows, width), "memory_bytes": memory, "preview": preview,
            "columns": columns, "shape": [int(rows), int(width)]}


def _pandas_series(series: object) -> Described:
    length = len(series)  # type: ignore[arg-type]
    head = [plain(v) for v in series.iloc[:6].tolist()]  # type: ignore[attr-defined]
    return {"size": count(length, "item"), "dtype": str(series.dtype),  # type: ignore[attr-defined]
            "memory_bytes": int(series.memory_usage(index=True, deep=False)),  # type: ignore[attr-defined]
            "shape": [length], "preview": short_repr(head)}


def _polars_frame(frame: object) -> Described:
    rows, width = frame.shape  # type: ignore[attr-defined]
    schema = frame.schema  # type: ignore[attr-defined]
    columns: list[Column] = [{"name": clip(str(col), 60), "dtype": str(kind)}
                             for col, kind in islice(schema.items(), COLUMNS)]
    preview = "no rows"
    if rows:
        names = list(islice(schema, 6))
        first = frame.select(names).row(0)  # type: ignore[attr-defined]
        preview = _row_preview(list(zip(names, first, strict=False)), width > 6)
    return {"size": table_size(rows, width), "preview": preview, "columns": columns,
            "memory_bytes": int(frame.estimated_size()),  # type: ignore[attr-defined]
            "shape": [int(rows), int(width)]}


def _polars_series(series: object) -> Described:
    length = int(series.len())  # type: ignore[attr-defined]
    return {"size": count(length, "item"), "dtype": str(series.dtype),  # type: ignore[attr-defined]
            "memory_bytes": int(series.estimated_size()),  # type: ignore[attr-defined]
            "shape": [length],
            "preview": short_repr([plain(v) for v in series.head(6).to_list()])}  # type: ignore[attr-defined]


def _polars_lazy(frame: object) -> Described:
    return {"preview": "a lazy query: not run, so its rows are unknown"}


def _numpy_array(array: object) -> Described:
    shape = tuple(int(n) for n in array.shape)  # type: ignore[attr-defined]
    first = array.flat[:6].tolist()  # type: ignore[attr-defined]
    size = int(array.size)  # type: ignore[attr-defined]
    return {"size": array_size(shape), "shape": list(shape),
            "dtype": str(array.dtype),  # type: ignore[attr-defined]
            "memory_bytes": int(array.nbytes),  # type: ignore[attr-defined]
            "preview": clip(short_repr(first)[:-1] + (", …]" if size > 6 else "]"))
            if isinstance(first, list) else short_repr(first)}


def _figure(figure: object) -> Described:
    axes = list(figure.axes)  # type: ignore[attr-defined]
    titles = [clip(str(ax.get_title()), 60) for ax in axes[:4]]
    named = ", ".join(repr(t) for t in titles if t)
    return {"size": count(len(axes), "plot"),
            "preview": f"a figure with {count(len(axes), 'plot')}"
                       + (f": {named}" if named else "")}


def _callable(value: object) -> Described:
    import inspect

    try:
        signature = str(inspect.signature(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        signature = "(…)"
    doc = inspect.getdoc(value) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    name = getattr(value, "__name__", "")
    what = "class " if isinstance(value, type) else ""
    return {"preview": clip(f"{what}{name}{signature}" + (f": {first}" if first else ""))}


_LIBRARY_KINDS: tuple[tuple[str, str, Callable[[object], Described]], ...] = (
    ("pandas", "DataFrame", _pandas_frame), ("pandas", "Series", _pandas_series),
    ("polars", "DataFrame", _polars_frame), ("polars", "Series", _polars_series),
    ("polars", "LazyFrame", _polars_lazy), ("numpy", "ndarray", _numpy_array),
    ("matplotlib.figure", "Figure", _figure),
)


def library_kind(kind: type) -> Callable[[object], Described] | None:
    """The describer of a library type the person has imported, or None."""
    for module, attribute, describe in _LIBRARY_KINDS:
        if is_a(kind, module, attribute):
            return describe
    return None


def summarise(name: str, value: object, looker: Looker) -> VariableSummary:
    """One variable as ``list_variables`` shows it; the person's code only through
    ``looker``."""
    kind = type(value)
    row: VariableSummary = {"name": clip(name, 100), "type": type_name(kind), "size": None,
                            "memory_bytes": None, "preview": ""}
    if kind in _SCALARS:
        row["memory_bytes"] = sys.getsizeof(value)
        row["preview"] = short_repr(value)
        return row
    if kind in (str, bytes, bytearray):
        text = value  # exact builtins: len, slicing and repr are theirs, not the person's
        row["size"] = count(len(text), "character" if kind is str else "byte")  # type: ignore[arg-type]
        row["memory_bytes"] = sys.getsizeof(value)
        row["preview"] = clip(repr(text[:PREVIEW_CHARS]))  # type: ignore[index]
        return row
    describe = library_kind(kind)
    if describe is None and (kind in _CALLABLES or issubclass(kind, type)):
        describe = _callable
    if describe is not None:
        found = looker.look("its description", lambda: describe(value), about=value)
        if isinstance(found, Failed):
            row["preview"] = found.words
        else:
            row.update(found)  # type: ignore[typeddict-item]
        return row
    if kind in _CONTAINERS:
        row["size"] = count(len(value), "item")  # type: ignore[arg-type]
    elif _has(kind, "__len__"):
        length = looker.look("its length", lambda: len(value), about=value)  # type: ignore[arg-type]
        row["size"] = length.words if isinstance(length, Failed) else count(length, "item")
    if _defined_by_builtin(kind, "__sizeof__"):
        row["memory_bytes"] = sys.getsizeof(value)
    preview = looker.look("its repr", lambda: short_repr(value), about=value)
    row["preview"] = preview.words if isinstance(preview, Failed) else preview
    return row
