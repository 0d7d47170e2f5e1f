"""tests/integration/test_erasure.py, run against the async API (see conftest.py): the
store-level tests; the CLI, the roles, the concurrency and the property test are the sync
API's."""

from tests.integration.async_api.conftest import shared

globals().update(
    shared(
        "test_erasure",
        sync_only=(
            "test_cli_erases_and_shows_erased_values",
            "test_only_the_eraser_role_may_erase",
            "test_erasure_serialises_with_a_concurrent_write",
            "test_erasure_changes_only_the_answers_it_covers",
        ),
    )
)
