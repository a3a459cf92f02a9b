"""What ``inspect_variable`` shows of one variable, by kind.

A table (pandas, polars): its head, dtypes, null counts and ``describe`` of the numeric
columns; an array (numpy): shape, dtype and stats; a function or class: signature and
docstring; any other object: its attributes (the instance's own, each previewed; the
class's methods and properties by name, never evaluated); a matplotlib figure: its axes in
words and a PNG. Every library or person's call runs through a
:class:`~agent_kernel.tools.looking.Looker` (longer looks than ``list_variables``', one
budget per call), and the result is trimmed to about ``RESULT_CHARS`` characters, with a
``note`` naming what was cut.

A figure's PNG comes as ``image.data_url`` (``data:image/png;base64,...``), at most
``IMAGE_CHARS`` characters and outside the text bound: the engine has no path yet that
hands a tool's image to the run view or to a model that reads images, so this is where
one would pick it up.
"""

from __future__ import annotations

import datetime
import json
import math
import sys
from collections.abc import Callable
from itertools import islice
from typing import TypedDict, cast

from agent_kernel.tools.looking import Failed, Looker, clip, short_repr
from agent_kernel.tools.variable_rows import (
    _CALLABLES,
    RESULT_CHARS,
    VariableSummary,
    is_a,
    summarise,
    type_name,
)

PER_LOOK = 2.0
LOOK_BUDGET = 5.0
COLUMNS = 30
"""Columns shown in a table's head, dtypes, nulls and describe."""
IMAGE_CHARS = 24_000
IMAGE_PIXELS = 400
"""A figure's image is drawn with its longer side at most this many pixels."""
CELL_CHARS = 80
_TRIM_ORDER = ("describe", "head", "attributes", "methods", "items", "nulls", "dtypes",
               "columns", "axes", "text")


class TableHead(TypedDict):
    """A table's first rows: column names, then each row's cells (numbers or short text)."""

    columns: list[str]
    rows: list[list[object]]


class AxesWords(TypedDict):
    """One plot of a figure, in words."""

    title: str
    xlabel: str
    ylabel: str
    lines: int
    labels: list[str]


class FigureImage(TypedDict):
    """A figure drawn as PNG, in a data URL."""

    mime_type: str
    width: int
    height: int
    data_url: str


class Attribute(TypedDict):
    """One of an object's own attributes: name, type and a short preview."""

    name: str
    type: str
    preview: str


class Details(TypedDict, total=False):
    """What ``inspect_variable`` adds to a variable's line, by kind."""

    head: TableHead | list[object] | str
    dtypes: dict[str, str]
    nulls: dict[str, int] | int
    describe: dict[str, object]
    stats: dict[str, object]
    signature: str | None
    doc: str
    module: str
    methods: list[str]
    bases: list[str]
    attributes: list[Attribute]
    items: list[str]
    text: str
    axes: list[AxesWords]
    image: FigureImage
    image_left_out: str
    details_left_out: str


class Inspection(VariableSummary, Details, total=False):
    """What ``inspect_variable`` returns; ``note`` says what was cut to fit."""

    ok: bool
    note: str


def _cell(value: object) -> object:
    """A table cell as JSON: numbers stay numbers, the rest is bounded text."""
    kind = type(value)
    if kind is bool or value is None:
        return value
    if kind.__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()  # type: ignore[attr-defined]
        kind = type(value)
    if kind is int:
        return value if value.bit_length() <= 63 else short_repr(value, CELL_CHARS)  # type: ignore[attr-defined]
    if kind is float:
        return value if math.isfinite(value) else str(value)  # type: ignore[arg-type]
    if kind is str:
        return clip(value, CELL_CHARS)  # type: ignore[arg-type]
    if _date_like(kind):  # a date as people write it, not Timestamp('2025-01-01 00:00:00')
        return clip(str(value).removesuffix(" 00:00:00"), CELL_CHARS)
    return short_repr(value, CELL_CHARS)


def _date_like(kind: type) -> bool:
    """A standard-library date or time, or a subclass from pandas (its Timestamp): their
    ``str`` is library code, never the person's."""
    return (kind.__module__.split(".")[0] in ("datetime", "pandas")
            and any(base in (datetime.date, datetime.time, datetime.timedelta)
                    for base in kind.__mro__))


def _number(value: object) -> object:
    """A statistic, rounded to 6 significant digits."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return _cell(value)
    if not math.isfinite(number):
        return str(number)
    return int(number) if number.is_integer() and abs(number) < 2**53 else float(f"{number:.6g}")


def _pandas_frame(frame: object, rows: int) -> Details:
    part = frame.iloc[:, :COLUMNS]  # type: ignore[attr-defined]
    head = part.head(rows)
    names = [clip(str(col), 60) for col in part.columns]
    total = len(part)
    numeric = part.select_dtypes("number")
    described = numeric.describe() if numeric.shape[1] else None
    return {
        "head": {"columns": names, "rows": [[_cell(v) for v in row] for row in
                                            head.itertuples(index=False, name=None)]},
        "dtypes": {clip(str(c), 60): str(t) for c, t in part.dtypes.items()},
        "nulls": {clip(str(c), 60): int(total - n) for c, n in part.count().items()},
        "describe": {} if described is None else {
            clip(str(col), 60): {str(stat): _number(v) for stat, v in described[col].items()}
            for col in described.columns},
    }


def _pandas_series(series: object, rows: int) -> Details:
    numeric = series.dtype.kind in "biufc"  # type: ignore[attr-defined]
    return {"head": [_cell(v) for v in series.iloc[:rows].tolist()],  # type: ignore[attr-defined]
            "nulls": int(series.isna().sum()),  # type: ignore[attr-defined]
            "describe": {str(k): _number(v) for k, v in series.describe().items()}  # type: ignore[attr-defined]
            if numeric else {}}


def _polars_frame(frame: object, rows: int) -> Details:
    names = list(islice(frame.schema, COLUMNS))  # type: ignore[attr-defined]
    part = frame.select(names)  # type: ignore[attr-defined]
    numeric = [name for name, kind in part.schema.items() if kind.is_numeric()]
    described: dict[str, object] = {}
    if numeric and part.height:
        table = part.select(numeric).describe()
        stats = table.get_column("statistic").to_list()
        for name in numeric:
            described[clip(str(name), 60)] = {
                str(stat): _number(v) for stat, v in zip(stats, table.get_column(name).to_list(),
                                                          strict=False)}
    return {
        "head": {"columns": [clip(str(n), 60) for n in names],
                 "rows": [[_cell(v) for v in row] for row in part.head(rows).rows()]},
        "dtypes": {clip(str(n), 60): str(k) for n, k in part.schema.items()},
        "nulls": {clip(str(n), 60): int(v) for n, v in
                  zip(names, part.null_count().row(0), strict=False)},
        "describe": described,
    }


def _polars_series(series: object, rows: int) -> Details:
    numeric = series.dtype.is_numeric()  # type: ignore[attr-defined]
    described: dict[str, object] = {}
    if numeric and series.len():  # type: ignore[attr-defined]
        table = series.describe()  # type: ignore[attr-defined]
        described = {str(stat): _number(v) for stat, v in table.rows()}
    return {"head": [_cell(v) for v in series.head(rows).to_list()],  # type: ignore[attr-defined]
            "nulls": int(series.null_count()), "describe": described}  # type: ignore[attr-defined]


def _numpy_array(array: object, rows: int) -> Details:
    numpy = sys.modules["numpy"]
    found: Details = {}
    if array.ndim:  # type: ignore[attr-defined]
        found["head"] = short_repr(array[:rows].tolist(), 600)  # type: ignore[index]
    if array.size and array.dtype.kind in "biuf":  # type: ignore[attr-defined]
        values = array.astype("float64", copy=False) if array.dtype.kind == "b" else array  # type: ignore[attr-defined]
        stats: dict[str, object] = {}
        if array.dtype.kind == "f":  # type: ignore[attr-defined]
            nans = int(numpy.isnan(values).sum())
            stats["nan_count"] = nans
            if nans == array.size:  # type: ignore[attr-defined]
                return {**found, "stats": stats}
        stats.update(min=_number(numpy.nanmin(values)), max=_number(numpy.nanmax(values)),
                     mean=_number(numpy.nanmean(values)), std=_number(numpy.nanstd(values)))
        found["stats"] = stats
    return found


def _figure(figure: object, _rows: int) -> Details:
    import base64
    import io

    axes: list[AxesWords] = []
    for ax in list(figure.axes)[:8]:  # type: ignore[attr-defined]
        legend = ax.get_legend_handles_labels()[1]
        axes.append({"title": clip(str(ax.get_title()), 80),
                     "xlabel": clip(str(ax.get_xlabel()), 80),
                     "ylabel": clip(str(ax.get_ylabel()), 80),
                     "lines": len(ax.lines), "labels": [clip(str(t), 40) for t in legend[:8]]})
    width, height = figure.get_size_inches()  # type: ignore[attr-defined]
    dpi = min(float(figure.dpi), IMAGE_PIXELS / max(width, height, 0.1))  # type: ignore[attr-defined]
    found: Details = {"axes": axes}
    for _attempt in range(3):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)  # type: ignore[attr-defined]
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(data) + 22 <= IMAGE_CHARS:
            found["image"] = {"mime_type": "image/png", "width": round(width * dpi),
                              "height": round(height * dpi),
                              "data_url": f"data:image/png;base64,{data}"}
            return found
        dpi /= 1.6
    found["image_left_out"] = f"its PNG is larger than {IMAGE_CHARS:,} characters even small"
    return found


def _function(value: object, _rows: int) -> Details:
    import inspect

    try:
        signature = str(inspect.signature(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        signature = None
    found: Details = {"signature": clip(signature, 300) if signature else None,
                         "doc": clip(inspect.getdoc(value) or "", 600),
                         "module": str(getattr(value, "__module__", "") or "")}
    if isinstance(value, type):
        found["methods"] = _methods(value)
        found["bases"] = [type_name(base) for base in value.__bases__]
    return found


def _methods(kind: type) -> list[str]:
    """The class's public methods and properties, by name, read from the class dicts (a
    property is named, never evaluated)."""
    names: dict[str, str] = {}
    for klass in kind.__mro__:
        if klass is object:
            continue
        for name, member in klass.__dict__.items():
            if name.startswith("_") or name in names:
                continue
            if isinstance(member, property):
                names[name] = f"{name} (property)"
            elif callable(member) or isinstance(member, (staticmethod, classmethod)):
                names[name] = f"{name}()"
    return list(names.values())[:60]


def _attributes(value: object, _rows: int) -> Details:
    try:
        own = object.__getattribute__(value, "__dict__")
    except AttributeError:  # slots or a builtin: nothing of its own to list
        return {"attributes": []}
    if not isinstance(own, dict):
        return {"attributes": []}
    attributes: list[Attribute] = [{"name": clip(str(name), 60), "type": type_name(type(item)),
                   "preview": short_repr(item, 80)}
                  for name, item in islice(own.items(), 40) if not str(name).startswith("_")]
    return {"attributes": attributes}


def _items(value: object, rows: int) -> Details:
    if isinstance(value, dict):
        return {"items": [f"{short_repr(k, 60)}: {short_repr(v, 100)}"
                          for k, v in islice(value.items(), rows)]}
    return {"items": [short_repr(item, 100) for item in islice(value, rows)]}  # type: ignore[call-overload]


Detail = Callable[[object, int], Details]
_LIBRARY: tuple[tuple[str, str, Detail], ...] = (
    ("pandas", "DataFrame", _pandas_frame), ("pandas", "Series", _pandas_series),
    ("polars", "DataFrame", _polars_frame), ("polars", "Series", _polars_series),
    ("numpy", "ndarray", _numpy_array), ("matplotlib.figure", "Figure", _figure),
)


def _detail_of(kind: type) -> tuple[str, Detail] | None:
    for module, attribute, detail in _LIBRARY:
        if is_a(kind, module, attribute):
            return ("its image and axes" if detail is _figure else "its head and statistics",
                    detail)
    if kind in _CALLABLES or issubclass(kind, type):
        return "its signature", _function
    if kind in (list, tuple, set, frozenset, dict):
        return "its items", _items
    if kind in (str, bytes, bytearray, int, float, complex, bool, type(None)):
        return None
    return "its attributes", _attributes


def inspect_value(name: str, value: object, rows: int) -> Inspection:
    """``inspect_variable``'s result for one value (``rows`` already clamped)."""
    kind = type(value)
    with Looker(PER_LOOK, LOOK_BUDGET) as looker:
        result: Inspection = {"ok": True, **summarise(name, value, looker)}
        if kind is str:
            result["text"] = clip(value, 2000)  # type: ignore[arg-type]
        detail = _detail_of(kind)
        if detail is not None:
            what, describe = detail
            found = looker.look(what, lambda: describe(value, rows), about=value)
            if isinstance(found, Failed):
                result["details_left_out"] = found.words
            else:
                result.update(found)
        if detail is not None and detail[1] is _attributes:
            result["methods"] = _methods(kind)
            doc = kind.__dict__.get("__doc__")
            result["doc"] = clip(doc.strip(), 600) if isinstance(doc, str) else ""
    return fit(result)


def _chars(result: dict[str, object]) -> int:
    image = result.get("image")
    shown = {k: v for k, v in result.items() if k != "image"}
    extra = 0 if not isinstance(image, dict) else 120
    return len(json.dumps(shown, ensure_ascii=False, default=str)) + extra


def _halve(value: object) -> object | None:
    """``value`` with half its entries (a head: half its rows), or None if nothing is left."""
    if isinstance(value, dict) and set(value) == {"columns", "rows"}:
        rows = value["rows"]
        return {**value, "rows": rows[: len(rows) // 2]} if rows else None
    if isinstance(value, dict):
        return dict(islice(value.items(), len(value) // 2)) if value else None
    if isinstance(value, list):
        return value[: len(value) // 2] if value else None
    if isinstance(value, str) and len(value) > 100:
        return clip(value, len(value) // 2)
    return None


def fit(result: Inspection, limit: int = RESULT_CHARS) -> Inspection:
    """Cut ``result`` to about ``limit`` characters of JSON (the image aside), the largest
    parts first, and say in ``note`` what was cut."""
    data = cast(dict[str, object], result)  # trimmed by key, whatever the kind
    cut: list[str] = []
    for key in _TRIM_ORDER:
        while key in data and _chars(data) > limit:
            smaller = _halve(data[key])
            if smaller is None:
                del data[key]
                break
            data[key] = smaller
            if key not in cut:
                cut.append(key)
    if cut:
        result["note"] = (f"Shortened to stay under {limit:,} characters: part of "
                          f"{', '.join(cut)} was left out.")
    return result
