"""The sales data set shipped in the package: the committed file is the generator's, and
it loads offline with the shape the data notebook and the demo model's story expect."""

from __future__ import annotations

import subprocess
import sys

import pytest

import agent_kernel
from agent_kernel.core.sample_data import make_sales, sample_data_path


def test_the_shipped_file_is_what_the_generator_writes() -> None:
    assert sample_data_path("sales").read_text() == make_sales()
    assert make_sales(seed=1) != make_sales()  # the seed is what makes it fixed


def test_sales_loads_as_a_dataframe_with_dates_and_gaps() -> None:
    df = agent_kernel.sample_data("sales")
    assert list(df.columns) == ["date", "region", "product", "units", "price"]
    assert len(df) == 181 and str(df["date"].dtype).startswith("datetime64")
    assert df.isna().sum().to_dict() == {"date": 0, "region": 0, "product": 0, "units": 3,
                                         "price": 0}
    months = df["date"].dt.month.unique().tolist()
    assert months == [1, 2, 3, 4, 5, 6]
    assert set(df["region"]) == {"north", "south", "east", "west"}


def test_an_unknown_set_is_named_with_the_ones_there_are() -> None:
    with pytest.raises(ValueError, match="there is: sales"):
        agent_kernel.sample_data("weather")


def test_importing_agent_kernel_does_not_import_pandas() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, agent_kernel\n"
                          "agent_kernel.sample_data\nprint('pandas' in sys.modules)"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
