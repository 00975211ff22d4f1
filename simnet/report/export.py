"""Results as files other tools read: JSON, CSV and a pandas DataFrame.

The JSON is strict: ``allow_nan=False`` refuses ``NaN``/``Infinity`` (JSON has neither);
quantities that do not exist (the bandwidth of a one-GPU AllReduce) are ``null``.
"""

from __future__ import annotations

import csv
import io
import json

from simnet.results.result import Results

__all__ = ["results_json", "results_csv", "results_dataframe"]


def results_json(results: Results) -> str:
    """The result JSON document (version, scenario, runs, training steps)."""
    return json.dumps(results.to_dict(), indent=1, allow_nan=False)


def results_csv(results: Results) -> str:
    """The flat results table (one row per run) as CSV."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=Results.FLAT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(results.rows())
    return buffer.getvalue()


def results_dataframe(results: Results):
    """The flat results table as a pandas DataFrame (needs pandas)."""
    import pandas as pd

    return pd.DataFrame(results.rows(), columns=list(Results.FLAT_COLUMNS))

