"""Small data sets shipped inside the package, so a notebook can explore data offline.

``sample_data("sales")`` is what notebooks/06-data.ipynb and the demo model's data story
use: 181 rows of daily sales (``date``, ``region``, ``product``, ``units``, ``price``)
for the first half of 2025, with three days whose ``units`` were not recorded (a real
file has gaps). The CSV in ``agent_kernel/data/`` was written once by :func:`make_sales`
(fixed seed: the same rows every time; a test checks the file still matches). Reading it
needs pandas, imported only when asked for: loading the extension never pays for it.
"""

from __future__ import annotations

import csv
import importlib
import io
import random
from datetime import date, timedelta
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data"
SETS = {"sales": "sales.csv"}
"""The shipped data sets: name -> file in ``agent_kernel/data/``."""


def sample_data_path(name: str = "sales") -> Path:
    """Where a shipped data set lies on disk."""
    if name not in SETS:
        known = ", ".join(sorted(SETS))
        raise ValueError(f"there is no sample data set called {name!r}; there is: {known}")
    return DATA / SETS[name]


def sample_data(name: str = "sales") -> Any:
    """A shipped data set as a pandas DataFrame (``date`` parsed as dates). Needs pandas."""
    path = sample_data_path(name)
    try:
        pd = importlib.import_module("pandas")  # the person's pandas, on first use only
    except ImportError as exc:
        raise ImportError(f"sample_data needs pandas (pip install pandas); the file itself "
                          f"is {path}") from exc
    return pd.read_csv(path, parse_dates=["date"])


_PRODUCTS = {"tea": 4.50, "coffee": 6.00, "cocoa": 5.25}
_REGIONS = ("north", "south", "east", "west")
_MISSING = {17, 88, 140}


def make_sales(seed: int = 24) -> str:
    """The sales CSV's text, from ``seed``: one row a day, January to June 2025, with a
    gentle rise month by month and three days' ``units`` left blank."""
    rng = random.Random(seed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["date", "region", "product", "units", "price"])
    day, end, number = date(2025, 1, 1), date(2025, 6, 30), 0
    while day <= end:
        product = rng.choice(sorted(_PRODUCTS))
        units = round(rng.gauss(20 + 3 * (day.month - 1), 5))
        price = round(_PRODUCTS[product] * rng.uniform(0.9, 1.1), 2)
        writer.writerow([day.isoformat(), rng.choice(_REGIONS), product,
                         "" if number in _MISSING else max(1, units), f"{price:.2f}"])
        day, number = day + timedelta(days=1), number + 1
    return out.getvalue()
