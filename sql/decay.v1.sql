-- bitemporal: working memory with decay (version 1).
--
-- A namespace is one agent session or memory space with its own turn clock
-- (starting at 1) and one eviction policy:
--   decay   retention = exp(-(turn - last_touched) / S), 1.0 when nothing has
--           elapsed; registration sets S to the baseline (or the item's own
--           stability) and counts as the first use; a recall increments
--           recall_count, then S := S * (1 + ln(1 + recall_count)) and
--           last_touched := turn;
--   window  an item goes once turn - last_touched > window; recalls only touch.
-- step() ends the current turn: it evicts every present, unpinned item whose
-- retention at the current turn is below the threshold (window: that fell out
-- of the window), then advances the clock. Turns, never the wall clock, decide.
--
-- Cost: every present, unpinned item carries crossing_turn, the turn after
-- which it is due, and a partial index on (namespace, crossing_turn) lets
-- step() evict with one index range scan: O(evicted + log n), whatever the
-- size of the working set. For the decay policy crossing_turn is
-- last_touched + S * ln(1 / threshold); where floating-point rounding would put
-- it on the other side of a whole turn than the direct comparison
-- exp(-(turn - last_touched) / S) < threshold, it is snapped to the last turn at
-- which the item is still retained, so that "turn > crossing_turn" and the
-- direct comparison never disagree. For the window policy it is
-- last_touched + window.
--
-- Arithmetic is double precision throughout, in the same order as the
-- pure-Python engine (bitemporal.decay.InMemoryMemory), so that both give
-- bit-identical results on the same machine. PostgreSQL's exp() raises on
-- underflow where C and Python return 0.0, and float multiplication and
-- division raise on overflow/underflow: the functions below never call them
-- with arguments that could (stability is kept within [1e-300, 1e300]).
--
-- Concurrency: register/recall take a KEY SHARE lock on the namespace row and
-- a row lock on the item, so concurrent recalls of one item are all counted
-- (each sees the previous one's result); step() takes the namespace row FOR
-- UPDATE, so steps of one namespace serialise with each other and with
-- register/recall, while other namespaces proceed independently.
--
-- Every registration, recall and eviction is appended to memory_log (which
-- refuses UPDATE, DELETE and TRUNCATE), so that psql can answer why an item
-- survived or went.
--
-- Errors (SQLSTATE):
--   BT101 invalid policy (threshold outside (0, 1), baseline stability outside
--         [1e-300, 1e300], window not in [1, 2^53], unknown policy kind)
--   BT102 the namespace exists with a different policy
--   BT103 invalid stability for an item (outside [1e-300, 1e300], or given
--         under the window policy, which has none)
--   BT104 invalid namespace name or item id (NULL, empty, over 1024 bytes)
--   BT105 unknown namespace
--   BT106 unknown item (never registered in the namespace)
--   BT005 invalid fact key (as for the fact store)
--   BT006 an attempt to rewrite or delete memory_log

CREATE TABLE bitemporal.memory_namespace (
    name                text             NOT NULL,
    policy              text             NOT NULL,
    threshold           double precision,
    baseline_stability  double precision,
    window_turns        bigint,
    turn                bigint           NOT NULL DEFAULT 1,
    created_at          timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT memory_namespace_pkey PRIMARY KEY (name),
    CONSTRAINT memory_namespace_name_valid CHECK (name <> '' AND octet_length(name) <= 1024),
    -- NaN compares greater than everything in PostgreSQL: the upper bounds exclude it.
    CONSTRAINT memory_namespace_policy_valid CHECK (
        (policy = 'decay'
         AND threshold > 0 AND threshold < 1
         AND baseline_stability >= 1e-300 AND baseline_stability <= 1e300
         AND window_turns IS NULL)
        OR (policy = 'window'
            AND window_turns BETWEEN 1 AND 9007199254740992
            AND threshold IS NULL AND baseline_stability IS NULL)),
    CONSTRAINT memory_namespace_turn_positive CHECK (turn >= 1)
);
COMMENT ON TABLE bitemporal.memory_namespace IS
    'Working-memory namespaces (one per agent session or memory space): the turn clock and the eviction policy. Write through bitemporal.memory_ensure_namespace and bitemporal.memory_step.';
COMMENT ON TYPE bitemporal.memory_namespace IS
    'Row type of bitemporal.memory_namespace, returned by bitemporal.memory_ensure_namespace.';
COMMENT ON COLUMN bitemporal.memory_namespace.policy IS
    'decay: evict once exp(-elapsed / stability) < threshold; window: evict once elapsed > window_turns.';
COMMENT ON COLUMN bitemporal.memory_namespace.turn IS
    'The current turn: starts at 1, advanced by one by each bitemporal.memory_step.';

CREATE SEQUENCE bitemporal.memory_registration_seq AS bigint;
COMMENT ON SEQUENCE bitemporal.memory_registration_seq IS
    'Registration order of memory items: each (re-)registration takes the next value.';

CREATE TABLE bitemporal.memory_item (
    namespace          text             NOT NULL,
    item_id            text             NOT NULL,
    entity             text,
    attribute          text,
    pinned             boolean          NOT NULL,
    state              text             NOT NULL,
    stability          double precision,
    recall_count       bigint           NOT NULL,
    registered_turn    bigint           NOT NULL,
    last_touched_turn  bigint           NOT NULL,
    evicted_turn       bigint,
    crossing_turn      double precision,
    registration_seq   bigint           NOT NULL,
    CONSTRAINT memory_item_pkey PRIMARY KEY (namespace, item_id),
    CONSTRAINT memory_item_namespace_fkey FOREIGN KEY (namespace)
        REFERENCES bitemporal.memory_namespace (name),
    CONSTRAINT memory_item_id_valid CHECK (item_id <> '' AND octet_length(item_id) <= 1024),
    CONSTRAINT memory_item_key_whole CHECK ((entity IS NULL) = (attribute IS NULL)),
    CONSTRAINT memory_item_state_valid CHECK (state IN ('present', 'evicted')),
    CONSTRAINT memory_item_evicted_turn CHECK ((state = 'evicted') = (evicted_turn IS NOT NULL)),
    CONSTRAINT memory_item_pinned_stays CHECK (NOT (pinned AND state = 'evicted')),
    -- Only what step() may evict carries a crossing turn: evicted and pinned
    -- items are NULL, which also keeps the column's statistics about due items.
    CONSTRAINT memory_item_crossing_when_due CHECK (
        (state = 'present' AND NOT pinned) = (crossing_turn IS NOT NULL)),
    CONSTRAINT memory_item_counts CHECK (
        recall_count >= 1 AND registered_turn >= 1 AND last_touched_turn >= registered_turn)
);
COMMENT ON TABLE bitemporal.memory_item IS
    'Working-memory items per namespace: stability, recall count, the turns that decide eviction, and the state (present or evicted). Write through bitemporal.memory_register, memory_recall and memory_step.';
COMMENT ON TYPE bitemporal.memory_item IS
    'Row type of bitemporal.memory_item, returned by bitemporal.memory_register and bitemporal.memory_items.';
COMMENT ON COLUMN bitemporal.memory_item.entity IS
    'Optional fact key (entity, attribute) the item stands for, so that a working set can be resolved against the fact store.';
COMMENT ON COLUMN bitemporal.memory_item.stability IS
    'S in exp(-elapsed / S), in turns (decay policy; NULL under the window policy).';
COMMENT ON COLUMN bitemporal.memory_item.recall_count IS
    'Uses so far: registration counts as the first.';
COMMENT ON COLUMN bitemporal.memory_item.crossing_turn IS
    'The item is evicted by the first step at a turn greater than this: last_touched + S * ln(1/threshold) (snapped to agree with the direct exp comparison) or last_touched + window. NULL when pinned or evicted.';
COMMENT ON COLUMN bitemporal.memory_item.registration_seq IS
    'Registration order (bitemporal.memory_registration_seq): step() reports evictions in this order.';

CREATE INDEX memory_item_crossing_idx ON bitemporal.memory_item (namespace, crossing_turn)
    WHERE state = 'present' AND NOT pinned;
COMMENT ON INDEX bitemporal.memory_item_crossing_idx IS
    'What step() evicts: present, unpinned items of a namespace by crossing turn (one range scan).';

CREATE TABLE bitemporal.memory_log (
    log_id             bigint           GENERATED ALWAYS AS IDENTITY,
    namespace          text             NOT NULL,
    item_id            text             NOT NULL,
    turn               bigint           NOT NULL,
    event              text             NOT NULL,
    previous_state     text,
    pinned             boolean,
    recall_count       bigint,
    last_touched_turn  bigint,
    retention          double precision,
    stability_before   double precision,
    stability_after    double precision,
    crossing_turn      double precision,
    logged_at          timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT memory_log_pkey PRIMARY KEY (log_id),
    CONSTRAINT memory_log_event_valid CHECK (event IN ('register', 'recall', 'evict'))
);
COMMENT ON TABLE bitemporal.memory_log IS
    'Append-only audit of working memory: every registration, recall (stability change) and eviction, with the numbers that decided it. Why did X go? SELECT * FROM bitemporal.memory_log WHERE namespace = ... AND item_id = ... ORDER BY log_id.';
COMMENT ON TYPE bitemporal.memory_log IS
    'Row type of bitemporal.memory_log.';
COMMENT ON COLUMN bitemporal.memory_log.turn IS
    'The namespace turn at which the event happened.';
COMMENT ON COLUMN bitemporal.memory_log.previous_state IS
    'register: the state the item had before (NULL: new; present: reset; evicted: brought back).';
COMMENT ON COLUMN bitemporal.memory_log.last_touched_turn IS
    'The last-touched turn before the event.';
COMMENT ON COLUMN bitemporal.memory_log.retention IS
    'Retention at the event''s turn before the event (evict: the value found below the threshold; window policy: 1 inside the window, 0 outside).';
COMMENT ON COLUMN bitemporal.memory_log.crossing_turn IS
    'The crossing turn after the event (NULL for pinned items and evictions).';

CREATE INDEX memory_log_item_idx ON bitemporal.memory_log (namespace, item_id, log_id);
COMMENT ON INDEX bitemporal.memory_log_item_idx IS
    'One item''s history, in order.';

CREATE FUNCTION bitemporal.memory_log_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'bitemporal.memory_log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'BT006',
              HINT = 'The log is the audit trail of working memory; it is never rewritten.';
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_log_guard() IS
    'Trigger: refuses UPDATE, DELETE and TRUNCATE on bitemporal.memory_log (SQLSTATE BT006).';

CREATE TRIGGER memory_log_append_only
    BEFORE UPDATE OR DELETE ON bitemporal.memory_log
    FOR EACH ROW EXECUTE FUNCTION bitemporal.memory_log_guard();

CREATE TRIGGER memory_log_no_truncate
    BEFORE TRUNCATE ON bitemporal.memory_log
    FOR EACH STATEMENT EXECUTE FUNCTION bitemporal.memory_log_guard();

-- Arithmetic ---------------------------------------------------------------

CREATE FUNCTION bitemporal.memory_exp_or_zero(x double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    RETURN exp(x);
EXCEPTION WHEN numeric_value_out_of_range THEN
    -- Underflow: C (and Python) return 0.0 here.
    RETURN 0::double precision;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_exp_or_zero(double precision) IS
    'exp(x), but 0.0 where PostgreSQL would raise "value out of range: underflow" (as C and Python do). Only called near the underflow edge, where the exception block''s cost does not matter.';

CREATE FUNCTION bitemporal.memory_decay_retention(elapsed bigint, stability double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- elapsed / stability is never computed where it could overflow, nor exp()
-- called where it could underflow: past 746 the result is 0.0 exactly in
-- double precision anyway. Not STRICT, so that the planner can inline it
-- (NULL in, NULL out all the same).
RETURN CASE
    WHEN elapsed <= 0 THEN 1::double precision
    WHEN elapsed::double precision > 746::double precision * stability THEN 0::double precision
    WHEN elapsed::double precision < 745::double precision * stability
        THEN exp(-(elapsed::double precision / stability))
    ELSE bitemporal.memory_exp_or_zero(-(elapsed::double precision / stability))
END;
COMMENT ON FUNCTION bitemporal.memory_decay_retention(bigint, double precision) IS
    'Retention after elapsed turns at stability S: exp(-elapsed / S), 1.0 when nothing has elapsed, 0.0 where exp underflows (never raises).';

CREATE FUNCTION bitemporal.memory_decay_crossing(
    last_touched bigint, stability double precision, threshold double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    -- stability >= 1e-300 and -ln(threshold) >= 1.1e-16: the product never underflows to 0.
    c double precision := last_touched + stability * (-ln(threshold));
    k bigint;
BEGIN
    IF c >= 4503599627370496 THEN
        -- 2^52 turns: whole turns are no longer exact; no clock gets there.
        RETURN c;
    END IF;
    -- k: the first turn at which the direct comparison says "below".
    -- Retention is monotone in the turn, and c is within rounding of the
    -- answer, so each loop runs at most a step or two.
    k := floor(c)::bigint + 1;
    WHILE k - 1 > last_touched
          AND bitemporal.memory_decay_retention(k - 1 - last_touched, stability) < threshold LOOP
        k := k - 1;
    END LOOP;
    WHILE NOT bitemporal.memory_decay_retention(k - last_touched, stability) < threshold LOOP
        k := k + 1;
    END LOOP;
    -- Evicted at turn T exactly when T > c: c must lie in [k - 1, k).
    IF c < k - 1 OR c >= k THEN
        c := k - 1;
    END IF;
    RETURN c;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_decay_crossing(bigint, double precision, double precision) IS
    'Crossing turn under the decay policy: last_touched + S * ln(1/threshold), snapped to a whole turn where rounding would make "turn > crossing" disagree with exp(-(turn - last_touched) / S) < threshold.';

CREATE FUNCTION bitemporal.memory_crossing(
    ns bitemporal.memory_namespace, last_touched bigint, stability double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE ns.policy
    WHEN 'decay' THEN bitemporal.memory_decay_crossing(last_touched, stability, ns.threshold)
    ELSE last_touched::double precision + ns.window_turns::double precision
END;
COMMENT ON FUNCTION bitemporal.memory_crossing(bitemporal.memory_namespace, bigint, double precision) IS
    'Crossing turn of an item last touched at last_touched with stability S under the namespace''s policy: step() at turn T evicts it when T > crossing.';

CREATE FUNCTION bitemporal.memory_retention_at(
    ns bitemporal.memory_namespace, elapsed bigint, stability double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE ns.policy
    WHEN 'decay' THEN bitemporal.memory_decay_retention(elapsed, stability)
    WHEN 'window' THEN CASE WHEN elapsed <= ns.window_turns THEN 1::double precision
                            ELSE 0::double precision END
END;
COMMENT ON FUNCTION bitemporal.memory_retention_at(bitemporal.memory_namespace, bigint, double precision) IS
    'Retention after elapsed turns under the namespace''s policy: exp(-elapsed / S) for decay; 1 inside the window and 0 outside it for window.';

-- Validation and locking ---------------------------------------------------

CREATE FUNCTION bitemporal.memory_check_name(what text, name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    PERFORM bitemporal.check_key_part(what, name, 'BT104');
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_check_name(text, text) IS
    'Raises BT104 unless a namespace name or item id is a non-empty string of at most 1024 bytes.';

CREATE FUNCTION bitemporal.memory_check_stability(stability double precision)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- NaN is greater than everything in PostgreSQL: <= 1e300 excludes it.
    IF NOT (stability >= 1e-300 AND stability <= 1e300) THEN
        RAISE EXCEPTION 'stability must be a number of turns between 1e-300 and 1e300, not %', stability
            USING ERRCODE = 'BT103',
                  HINT = 'Stability is S in exp(-elapsed / S): larger means remembered longer.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_check_stability(double precision) IS
    'Raises BT103 unless a stability lies in [1e-300, 1e300] turns (so the arithmetic can neither overflow nor underflow).';

CREATE FUNCTION bitemporal.memory_namespace_for_update(namespace text, exclusive boolean)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal.memory_check_name('namespace', namespace);
    IF exclusive THEN
        SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace FOR UPDATE;
    ELSE
        SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace FOR KEY SHARE;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown memory namespace %', namespace
            USING ERRCODE = 'BT105',
                  HINT = 'Create it with bitemporal.memory_ensure_namespace().';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_namespace_for_update(text, boolean) IS
    'Locks a namespace row and returns it: FOR UPDATE (exclusive, step) or FOR KEY SHARE (register, recall), so that a step never interleaves with changes to its namespace. Raises BT104, BT105.';

CREATE FUNCTION bitemporal.memory_namespace_get(namespace text)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal.memory_check_name('namespace', namespace);
    SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown memory namespace %', namespace
            USING ERRCODE = 'BT105',
                  HINT = 'Create it with bitemporal.memory_ensure_namespace().';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_namespace_get(text) IS
    'A namespace row, unlocked, for the read functions. Raises BT104, BT105.';

-- The API ------------------------------------------------------------------

CREATE FUNCTION bitemporal.memory_ensure_namespace(
    namespace           text,
    policy              text             DEFAULT 'decay',
    threshold           double precision DEFAULT NULL,
    baseline_stability  double precision DEFAULT NULL,
    window_turns        bigint           DEFAULT NULL)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal.memory_check_name('namespace', namespace);
    IF policy = 'decay' THEN
        threshold := coalesce(threshold, 0.20);
        baseline_stability := coalesce(baseline_stability, 8.0);
        IF window_turns IS NOT NULL THEN
            RAISE EXCEPTION 'the decay policy has no window' USING ERRCODE = 'BT101';
        END IF;
        IF NOT (threshold > 0 AND threshold < 1) THEN
            RAISE EXCEPTION 'threshold must lie strictly between 0 and 1, not %', threshold
                USING ERRCODE = 'BT101',
                      HINT = 'An item is evicted once its retention exp(-elapsed / S) falls below the threshold.';
        END IF;
        IF NOT (baseline_stability >= 1e-300 AND baseline_stability <= 1e300) THEN
            RAISE EXCEPTION 'baseline stability must be a number of turns between 1e-300 and 1e300, not %',
                    baseline_stability
                USING ERRCODE = 'BT101';
        END IF;
    ELSIF policy = 'window' THEN
        window_turns := coalesce(window_turns, 15);
        IF threshold IS NOT NULL OR baseline_stability IS NOT NULL THEN
            RAISE EXCEPTION 'the window policy has no threshold or stability' USING ERRCODE = 'BT101';
        END IF;
        IF NOT (window_turns BETWEEN 1 AND 9007199254740992) THEN
            RAISE EXCEPTION 'window must be a whole number of turns between 1 and 2^53, not %', window_turns
                USING ERRCODE = 'BT101';
        END IF;
    ELSE
        RAISE EXCEPTION 'policy must be ''decay'' or ''window'', not %', coalesce(policy, 'NULL')
            USING ERRCODE = 'BT101';
    END IF;

    INSERT INTO bitemporal.memory_namespace AS n (name, policy, threshold, baseline_stability, window_turns)
    VALUES (namespace, policy, threshold, baseline_stability, window_turns)
    ON CONFLICT ON CONSTRAINT memory_namespace_pkey DO NOTHING
    RETURNING * INTO ns;
    IF FOUND THEN
        RETURN ns;
    END IF;
    SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace;
    IF (ns.policy, ns.threshold, ns.baseline_stability, ns.window_turns)
       IS DISTINCT FROM (policy, threshold, baseline_stability, window_turns) THEN
        RAISE EXCEPTION 'memory namespace % exists with another policy', namespace
            USING ERRCODE = 'BT102',
                  DETAIL = format('stored: %s threshold=%s baseline_stability=%s window=%s; asked: %s threshold=%s baseline_stability=%s window=%s',
                                  ns.policy, ns.threshold, ns.baseline_stability, ns.window_turns,
                                  policy, threshold, baseline_stability, window_turns),
                  HINT = 'A namespace keeps the policy it was created with; use another namespace.';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_ensure_namespace(text, text, double precision, double precision, bigint) IS
    'Creates a working-memory namespace at turn 1 with a policy (decay: threshold default 0.20, baseline_stability default 8; window: window_turns default 15), or returns the existing one if its policy is the same. Errors: BT101 invalid policy, BT102 exists with another policy, BT104 invalid name.';

CREATE FUNCTION bitemporal.memory_register(
    namespace  text,
    item_id    text,
    entity     text             DEFAULT NULL,
    attribute  text             DEFAULT NULL,
    pinned     boolean          DEFAULT false,
    stability  double precision DEFAULT NULL)
RETURNS bitemporal.memory_item
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    ns   bitemporal.memory_namespace;
    old  bitemporal.memory_item;
    item bitemporal.memory_item;
    s    double precision;
    c    double precision;
BEGIN
    PERFORM bitemporal.memory_check_name('item id', item_id);
    IF (entity IS NULL) <> (attribute IS NULL) THEN
        RAISE EXCEPTION 'a fact key needs both entity and attribute (or neither)'
            USING ERRCODE = 'BT005';
    END IF;
    IF entity IS NOT NULL THEN
        PERFORM bitemporal.check_key_part('entity', entity);
        PERFORM bitemporal.check_key_part('attribute', attribute);
    END IF;
    pinned := coalesce(pinned, false);
    ns := bitemporal.memory_namespace_for_update(namespace, false);
    IF ns.policy = 'decay' THEN
        IF stability IS NOT NULL THEN
            PERFORM bitemporal.memory_check_stability(stability);
        END IF;
        s := coalesce(stability, ns.baseline_stability);
    ELSIF stability IS NOT NULL THEN
        RAISE EXCEPTION 'the window policy has no stability; namespace % uses it', namespace
            USING ERRCODE = 'BT103';
    END IF;
    c := CASE WHEN pinned THEN NULL ELSE bitemporal.memory_crossing(ns, ns.turn, s) END;

    LOOP
        SELECT * INTO old FROM bitemporal.memory_item i
         WHERE i.namespace = ns.name AND i.item_id = item_id
           FOR NO KEY UPDATE;
        IF FOUND THEN
            -- Present: reset to a fresh registration; evicted: brought back as new.
            UPDATE bitemporal.memory_item i
               SET entity = entity, attribute = attribute, pinned = pinned, state = 'present',
                   stability = s, recall_count = 1, registered_turn = ns.turn,
                   last_touched_turn = ns.turn, evicted_turn = NULL, crossing_turn = c,
                   registration_seq = nextval('bitemporal.memory_registration_seq')
             WHERE i.namespace = ns.name AND i.item_id = item_id
            RETURNING i.* INTO item;
            EXIT;
        END IF;
        INSERT INTO bitemporal.memory_item AS i
               (namespace, item_id, entity, attribute, pinned, state, stability, recall_count,
                registered_turn, last_touched_turn, evicted_turn, crossing_turn, registration_seq)
        VALUES (ns.name, item_id, entity, attribute, pinned, 'present', s, 1,
                ns.turn, ns.turn, NULL, c, nextval('bitemporal.memory_registration_seq'))
        ON CONFLICT ON CONSTRAINT memory_item_pkey DO NOTHING
        RETURNING i.* INTO item;
        EXIT WHEN FOUND;
        -- Another transaction registered it first: lock its row and reset it.
    END LOOP;

    INSERT INTO bitemporal.memory_log
           (namespace, item_id, turn, event, previous_state, pinned, recall_count,
            last_touched_turn, retention, stability_before, stability_after, crossing_turn)
    VALUES (ns.name, item_id, ns.turn, 'register', old.state, pinned, 1,
            old.last_touched_turn,
            CASE WHEN old.state = 'present'
                 THEN bitemporal.memory_retention_at(ns, ns.turn - old.last_touched_turn, old.stability) END,
            old.stability, s, c);
    RETURN item;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_register(text, text, text, text, boolean, double precision) IS
    'Registers an item at the namespace''s current turn: stability = the given one or the baseline, recall_count = 1 (registration is the first use), optionally a fact key and pinned (never evicted). A present item is reset to a fresh registration, an evicted one brought back as new; either way it moves to the end of the registration order. Returns the item. Errors: BT103 stability, BT104 item id, BT105 unknown namespace, BT005 key.';

CREATE FUNCTION bitemporal.memory_register_many(
    namespace  text,
    item_ids   text[],
    pinned     boolean          DEFAULT false,
    stability  double precision DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
-- A generic plan (index lookups per id) serves any array; re-planning the
-- statement for each call would cost more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_variable
DECLARE
    ns  bitemporal.memory_namespace;
    s   double precision;
    c   double precision;
    n   bigint;
BEGIN
    IF item_ids IS NULL THEN
        RAISE EXCEPTION 'item ids must be an array, not NULL' USING ERRCODE = 'BT104';
    END IF;
    PERFORM bitemporal.memory_check_name('item id', u.id) FROM unnest(item_ids) AS u(id);
    IF (SELECT count(DISTINCT u.id) FROM unnest(item_ids) AS u(id)) <> cardinality(item_ids) THEN
        RAISE EXCEPTION 'an item id appears twice in one call'
            USING ERRCODE = 'BT104',
                  HINT = 'Register it once; a second registration would only reset the first.';
    END IF;
    pinned := coalesce(pinned, false);
    -- Exclusive, like a step: no other writer of the namespace runs meanwhile,
    -- so the rows read below are the ones overwritten (for the log).
    ns := bitemporal.memory_namespace_for_update(namespace, true);
    IF ns.policy = 'decay' THEN
        IF stability IS NOT NULL THEN
            PERFORM bitemporal.memory_check_stability(stability);
        END IF;
        s := coalesce(stability, ns.baseline_stability);
    ELSIF stability IS NOT NULL THEN
        RAISE EXCEPTION 'the window policy has no stability; namespace % uses it', namespace
            USING ERRCODE = 'BT103';
    END IF;
    c := CASE WHEN pinned THEN NULL ELSE bitemporal.memory_crossing(ns, ns.turn, s) END;

    WITH input AS (
        SELECT u.id, u.ord FROM unnest(item_ids) WITH ORDINALITY AS u(id, ord)
    ), old AS (
        SELECT i.item_id, i.state, i.stability, i.last_touched_turn
          FROM bitemporal.memory_item i JOIN input ON i.item_id = input.id
         WHERE i.namespace = ns.name
    ), written AS (
        -- Registration order follows the array: nextval over the ordered input.
        INSERT INTO bitemporal.memory_item AS i
               (namespace, item_id, entity, attribute, pinned, state, stability, recall_count,
                registered_turn, last_touched_turn, evicted_turn, crossing_turn, registration_seq)
        SELECT ns.name, o.id, NULL, NULL, pinned, 'present', s, 1, ns.turn, ns.turn, NULL, c,
               nextval('bitemporal.memory_registration_seq')
          FROM (SELECT input.id FROM input ORDER BY input.ord) o
        ON CONFLICT ON CONSTRAINT memory_item_pkey DO UPDATE
           SET entity = NULL, attribute = NULL, pinned = excluded.pinned, state = 'present',
               stability = excluded.stability, recall_count = 1,
               registered_turn = excluded.registered_turn,
               last_touched_turn = excluded.last_touched_turn, evicted_turn = NULL,
               crossing_turn = excluded.crossing_turn,
               registration_seq = excluded.registration_seq
        RETURNING i.item_id
    ), logged AS (
        INSERT INTO bitemporal.memory_log
               (namespace, item_id, turn, event, previous_state, pinned, recall_count,
                last_touched_turn, retention, stability_before, stability_after, crossing_turn)
        SELECT ns.name, input.id, ns.turn, 'register', old.state, pinned, 1, old.last_touched_turn,
               CASE WHEN old.state = 'present'
                    THEN bitemporal.memory_retention_at(ns, ns.turn - old.last_touched_turn, old.stability) END,
               old.stability, s, c
          FROM input LEFT JOIN old ON old.item_id = input.id
         ORDER BY input.ord
    )
    SELECT count(*) INTO n FROM written;
    RETURN n;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_register_many(text, text[], boolean, double precision) IS
    'Registers several items at once, exactly as memory_register would one after the other in array order (without fact keys; ids must be distinct). Takes the namespace row exclusively, like a step. Returns how many were registered. Errors: BT103, BT104 (also for a repeated id), BT105.';

CREATE FUNCTION bitemporal.memory_recall(namespace text, item_id text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    ns  bitemporal.memory_namespace;
    it  bitemporal.memory_item;
    rc  bigint;
    s   double precision;
    c   double precision;
BEGIN
    PERFORM bitemporal.memory_check_name('item id', item_id);
    ns := bitemporal.memory_namespace_for_update(namespace, false);
    -- The row lock makes the read-modify-write atomic: a concurrent recall of
    -- the same item waits here and then reads this one's result.
    SELECT * INTO it FROM bitemporal.memory_item i
     WHERE i.namespace = ns.name AND i.item_id = item_id AND i.state = 'present'
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        -- Unknown or evicted: not brought back (re-registering is explicit).
        RETURN false;
    END IF;
    rc := it.recall_count + 1;
    IF ns.policy = 'decay' THEN
        -- Capped at 1e300 turns so that the next product cannot overflow.
        s := least(it.stability * (1 + ln(1 + rc::double precision)), 1e300::double precision);
    END IF;
    c := CASE WHEN it.pinned THEN NULL ELSE bitemporal.memory_crossing(ns, ns.turn, s) END;
    UPDATE bitemporal.memory_item i
       SET recall_count = rc, stability = s, last_touched_turn = ns.turn, crossing_turn = c
     WHERE i.namespace = ns.name AND i.item_id = item_id;
    INSERT INTO bitemporal.memory_log
           (namespace, item_id, turn, event, pinned, recall_count, last_touched_turn, retention,
            stability_before, stability_after, crossing_turn)
    VALUES (ns.name, item_id, ns.turn, 'recall', it.pinned, rc, it.last_touched_turn,
            bitemporal.memory_retention_at(ns, ns.turn - it.last_touched_turn, it.stability),
            it.stability, s, c);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_recall(text, text) IS
    'Recalls a present item at the current turn: recall_count + 1, then (decay) S := S * (1 + ln(1 + recall_count)), capped at 1e300; last touched := now. Atomic under concurrency: every recall is counted. Returns false, changing nothing, for an unknown or evicted item. Errors: BT104 item id, BT105 unknown namespace.';

CREATE FUNCTION bitemporal.memory_step(namespace text)
RETURNS text[]
LANGUAGE plpgsql
-- The eviction statement is planned once, for any turn: a range scan of
-- memory_item_crossing_idx (see the always-true lower bound below), rather
-- than re-planned at every step.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_variable
DECLARE
    ns      bitemporal.memory_namespace;
    evicted text[];
BEGIN
    ns := bitemporal.memory_namespace_for_update(namespace, true);
    WITH gone AS (
        UPDATE bitemporal.memory_item i
           SET state = 'evicted', evicted_turn = ns.turn, crossing_turn = NULL
         WHERE i.namespace = ns.name AND i.state = 'present' AND NOT i.pinned
           AND i.crossing_turn < ns.turn
           -- Always true (crossing turns are >= 1). Bounding the range on both
           -- sides tells the planner, planning for an unknown turn, that few
           -- rows are due, so the generic plan is the range scan on
           -- memory_item_crossing_idx however large the namespace.
           AND i.crossing_turn > '-Infinity'::double precision
        RETURNING i.item_id, i.registration_seq, i.recall_count, i.last_touched_turn, i.stability
    ), logged AS (
        INSERT INTO bitemporal.memory_log
               (namespace, item_id, turn, event, pinned, recall_count, last_touched_turn, retention,
                stability_before, stability_after)
        SELECT ns.name, g.item_id, ns.turn, 'evict', false, g.recall_count, g.last_touched_turn,
               bitemporal.memory_retention_at(ns, ns.turn - g.last_touched_turn, g.stability),
               g.stability, g.stability
          FROM gone g
         ORDER BY g.registration_seq
    )
    SELECT coalesce(array_agg(g.item_id ORDER BY g.registration_seq), '{}')
      INTO evicted
      FROM gone g;
    UPDATE bitemporal.memory_namespace n SET turn = n.turn + 1 WHERE n.name = ns.name;
    RETURN evicted;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_step(text) IS
    'Ends the current turn: evicts every present, unpinned item whose retention at this turn is below the threshold (window: elapsed > window), i.e. whose crossing turn is below the turn, with one range scan of memory_item_crossing_idx; then advances the clock by one. Returns the evicted ids in registration order. Serialised per namespace (FOR UPDATE on its row). Errors: BT104, BT105.';

CREATE FUNCTION bitemporal.memory_turn(namespace text)
RETURNS bigint
LANGUAGE sql STABLE
RETURN (bitemporal.memory_namespace_get(namespace)).turn;
COMMENT ON FUNCTION bitemporal.memory_turn(text) IS
    'The namespace''s current turn. Errors: BT104, BT105.';

CREATE FUNCTION bitemporal.memory_is_present(namespace text, item_id text)
RETURNS boolean
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal.memory_namespace_get(namespace);
BEGIN
    PERFORM bitemporal.memory_check_name('item id', item_id);
    RETURN EXISTS (SELECT FROM bitemporal.memory_item i
                    WHERE i.namespace = ns.name AND i.item_id = item_id AND i.state = 'present');
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_is_present(text, text) IS
    'Whether an item is in the working set (registered and not evicted); false for an unknown id. Errors: BT104, BT105.';

CREATE FUNCTION bitemporal.memory_working_set_size(namespace text)
RETURNS bigint
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal.memory_namespace_get(namespace);
BEGIN
    RETURN (SELECT count(*) FROM bitemporal.memory_item i
             WHERE i.namespace = ns.name AND i.state = 'present');
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_working_set_size(text) IS
    'How many items of the namespace are present, pinned ones included (a count: linear in the namespace''s items). Errors: BT104, BT105.';

CREATE FUNCTION bitemporal.memory_item_get(namespace text, item_id text)
RETURNS bitemporal.memory_item
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    it bitemporal.memory_item;
BEGIN
    PERFORM bitemporal.memory_check_name('item id', item_id);
    SELECT * INTO it FROM bitemporal.memory_item i
     WHERE i.namespace = namespace AND i.item_id = item_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown item % in memory namespace %', item_id, namespace
            USING ERRCODE = 'BT106',
                  HINT = 'Register it first with bitemporal.memory_register().';
    END IF;
    RETURN it;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_item_get(text, text) IS
    'An item row, present or evicted. Errors: BT104, BT106 unknown item.';

CREATE FUNCTION bitemporal.memory_retention(namespace text, item_id text)
RETURNS double precision
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    ns bitemporal.memory_namespace := bitemporal.memory_namespace_get(namespace);
    it bitemporal.memory_item := bitemporal.memory_item_get(namespace, item_id);
BEGIN
    IF it.state = 'evicted' THEN
        RETURN 0::double precision;
    END IF;
    RETURN bitemporal.memory_retention_at(ns, ns.turn - it.last_touched_turn, it.stability);
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_retention(text, text) IS
    'Retention of an item at the current turn: exp(-(turn - last_touched) / S) (decay), 1 inside / 0 outside the window (window); 0 for an evicted item. Errors: BT104, BT105, BT106 unknown item.';

CREATE FUNCTION bitemporal.memory_stability(namespace text, item_id text)
RETURNS double precision
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    ns bitemporal.memory_namespace := bitemporal.memory_namespace_get(namespace);
BEGIN
    RETURN (bitemporal.memory_item_get(ns.name, item_id)).stability;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_stability(text, text) IS
    'Stability S of an item in turns (its last value if evicted; NULL under the window policy). Errors: BT104, BT105, BT106 unknown item.';

CREATE FUNCTION bitemporal.memory_items(namespace text)
RETURNS SETOF bitemporal.memory_item
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal.memory_namespace_get(namespace);
BEGIN
    RETURN QUERY
        SELECT i.* FROM bitemporal.memory_item i
         WHERE i.namespace = ns.name
         ORDER BY i.registration_seq;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_items(text) IS
    'Every item of a namespace, present and evicted, in registration order. Errors: BT104, BT105.';
