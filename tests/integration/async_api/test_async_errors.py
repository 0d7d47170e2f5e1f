"""tests/integration/test_errors.py, run against the async API (see conftest.py)."""

from tests.integration.async_api.conftest import shared

globals().update(shared("test_errors"))
