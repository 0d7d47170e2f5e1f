"""The shop's Alembic environment: bitemporal's own migrations first, then the shop's."""

from alembic import context
from sqlalchemy import create_engine, pool

import bitemporal

config = context.config

if context.is_offline_mode():
    # Offline scripts assume a database already at bitemporal's head
    # (`bitemporal db upgrade`, or `bitemporal db sql` for its own script).
    context.configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("the shop's migrations need sqlalchemy.url in the Alembic config")
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        # The operations of bitemporal.alembic_ops call functions of the bitemporal
        # schema: bring it to head first, in the same transaction.
        bitemporal.migrate(connection)
        context.configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
