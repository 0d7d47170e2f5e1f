"""tests/integration/test_record.py, run against the async API (see conftest.py)."""

from tests.integration.async_api.conftest import shared

globals().update(shared("test_record"))
