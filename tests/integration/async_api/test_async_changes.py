"""tests/integration/test_changes.py, run against the async API (see conftest.py)."""

from tests.integration.async_api.conftest import shared

globals().update(shared("test_changes"))
