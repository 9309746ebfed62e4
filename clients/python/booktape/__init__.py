"""booktape: historical order books of prediction markets, from Python.

    from booktape import Client
    c = Client()                      # BOOKTAPE_API_URL, BOOKTAPE_API_KEY
    df = c.raw("polymarket", "0x…", "2026-03-01", "2026-03-01").to_df()

Standard library only; pandas for ``to_df()``, pyarrow for Parquet exports.
"""
from .client import BookResult, Client, CoverageResult, ExportResult, RawResult, SummaryResult, venue_path
from .errors import AuthenticationError, BadRequestError, BooktapeError, NotFoundError, QuotaError, ServiceUnavailableError
from .times import date_text, time_ms
from .transport import RetryPolicy

__version__ = "0.1.0"

__all__ = [
    "Client", "RawResult", "SummaryResult", "BookResult", "CoverageResult", "ExportResult",
    "BooktapeError", "BadRequestError", "AuthenticationError", "NotFoundError", "QuotaError", "ServiceUnavailableError",
    "RetryPolicy", "time_ms", "date_text", "venue_path", "__version__",
]
