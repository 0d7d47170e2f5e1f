"""Evidence for agents: passages and retrieval that filters before it ranks, the answer
object, provenance of derived artifacts with invalidation, and what changed.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of these files. pgvector is not
# needed here: bitemporal.enable_vector() creates what it needs on demand.
FILES = (
    "formatting.v1.sql",
    "changes.v1.sql",
    "evidence.v1.sql",
    "provenance.v1.sql",
    "explain.v1.sql",
)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    # Everything the files created, dependents first, plus the embeddings
    # table bitemporal.enable_vector() may have created. The schema stays; so
    # does the vector extension, if enable_vector created it: other schemas
    # may use it.
    op.execute(
        """
        DROP FUNCTION bitemporal.explain_sentence(jsonb);
        DROP FUNCTION bitemporal.explain(text, text, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.value_run(text, text, jsonb, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.answer_corrected(text, text, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.answer_since(text, text, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.knowledge_edges(text, text, timestamptz);
        DROP FUNCTION bitemporal.explain_version(bitemporal.versions);

        DROP TRIGGER fact_version_notify_closed ON bitemporal.fact_version;
        DROP FUNCTION bitemporal.fact_version_notify_closed();
        DROP FUNCTION bitemporal.invalidation_channel();
        DROP FUNCTION bitemporal.dependents(bigint[], bigint[]);
        DROP FUNCTION bitemporal.stale(timestamptz);
        DROP TYPE bitemporal.stale_input;
        DROP FUNCTION bitemporal.retire_artifact(bigint, timestamptz);
        DROP FUNCTION bitemporal.record_artifact(text, text, bigint[], bigint[], jsonb, timestamptz, text);
        DROP FUNCTION bitemporal.check_artifact_time(text, timestamptz);
        DROP TABLE bitemporal.artifact_input;
        DROP TABLE bitemporal.artifact;
        DROP TYPE bitemporal.stale_cause;

        DROP FUNCTION bitemporal.nearest_evidence(real[], timestamptz, timestamptz, integer, text, text);
        DROP FUNCTION bitemporal.add_evidence(bigint, text, text, text, real[], text);
        DROP FUNCTION bitemporal.set_embedding(bigint, real[]);
        DROP FUNCTION bitemporal.enable_vector(integer);
        DROP FUNCTION bitemporal.check_embedding(real[], integer);
        DROP FUNCTION bitemporal.require_vector();
        DROP FUNCTION bitemporal.vector_dimensions();
        DROP FUNCTION bitemporal.vector_available();
        DROP FUNCTION bitemporal.rank_versions(bigint[], double precision[], timestamptz, timestamptz, integer, text, text);
        DROP FUNCTION bitemporal.search_evidence(text, timestamptz, timestamptz, integer, text, text, text);
        DROP FUNCTION bitemporal.eligible(timestamptz, timestamptz, text, text);
        DROP FUNCTION bitemporal.check_limit(integer);
        DROP FUNCTION bitemporal.check_question(timestamptz, timestamptz);
        DROP FUNCTION bitemporal.text_search_config(text, text);
        DROP TYPE bitemporal.evidence_hit;
        DROP TABLE IF EXISTS bitemporal.evidence_embedding;
        DROP TABLE bitemporal.evidence;

        DROP FUNCTION bitemporal.changes(timestamptz, timestamptz, text, text);
        DROP TYPE bitemporal.change;
        DROP FUNCTION bitemporal.superseding_versions(text, text, text, tstzrange, timestamptz);
        DROP INDEX bitemporal.fact_version_known_to_idx;
        DROP INDEX bitemporal.fact_version_known_from_idx;
        DROP TYPE bitemporal.change_kind;

        DROP FUNCTION bitemporal.human_period(tstzrange);
        DROP FUNCTION bitemporal.human_values(jsonb);
        DROP FUNCTION bitemporal.human_value(jsonb);
        DROP FUNCTION bitemporal.human_time(timestamptz);
        DROP FUNCTION bitemporal.iso_time(timestamptz);
        """
    )
