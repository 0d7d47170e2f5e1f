"""tests/integration/test_application_tables.py, run against the async API (see conftest.py)."""

from tests.integration.async_api.conftest import shared

# Store.tables (deprecated) has no async twin; the other runs its own SQL on
# store.connection inside store.transaction(), a sync connection.
globals().update(
    shared(
        "test_application_tables",
        sync_only=(
            "test_store_tables_is_a_deprecated_name_of_app_tables",
            "test_append_only_holds_for_the_owner_through_the_store",
        ),
    )
)
