"""tests/integration/test_decay.py, run against the async API (see conftest.py)."""

from tests.integration.async_api.conftest import shared

globals().update(shared("test_decay"))
