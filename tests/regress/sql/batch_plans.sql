-- batch_plans: the planner puts an InferBatch node above the scan or join
-- that evaluates infer.* calls, and the batched plan gives the same rows
-- in the same order as the per-row plan (infer.enable_batching = off).
-- Uses the fast direction classifier (ppocr_cls) on the two line images
-- of tests/regress/data, repeated.
--
-- The planner hook is installed when the module is loaded; a session's
-- first statement that calls an infer.* function is planned before that
-- (and runs per row), so load it first.
LOAD 'pg_infer';
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- 120 rows: ids 1..120, odd ids upright (label 0), even ids upside down
-- (label 180); id 7 has no image
CREATE TEMP TABLE img (id int PRIMARY KEY, name text NOT NULL, data bytea);
INSERT INTO img
SELECT i, f, CASE WHEN i <> 7 THEN
		pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f) END
  FROM generate_series(1, 120) AS i,
	   LATERAL (SELECT CASE WHEN i % 2 = 1 THEN 'line_upright.png'
					   ELSE 'line_rot180.png' END AS f) AS n;
CREATE TEMP TABLE tag (id int, tag text);
INSERT INTO tag SELECT i, 'tag' || i FROM generate_series(1, 120, 3) AS i;
ANALYZE img;
ANALYZE tag;

-- Runs q with batching off and on; returns whether both give the same
-- rows in the same order, and how many.
CREATE FUNCTION pg_temp.same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	per_row text[];
	batched text[];
BEGIN
	SET LOCAL infer.enable_batching = off;
	EXECUTE format('SELECT array_agg(t::text) FROM (%s) AS t', q) INTO per_row;
	SET LOCAL infer.enable_batching = on;
	EXECUTE format('SELECT array_agg(t::text) FROM (%s) AS t', q) INTO batched;
	RETURN CASE WHEN per_row IS NOT DISTINCT FROM batched
		THEN 'same ' || coalesce(cardinality(batched), 0) || ' rows'
		ELSE 'DIFFERENT: ' || per_row::text || ' vs ' || batched::text END;
END
$$;

-- target list
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, infer.classify('ppocr_cls', data) FROM img;
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data) FROM img$$);
SELECT infer.classify('ppocr_cls', data) AS label, count(*), min(id), max(id)
  FROM img GROUP BY 1 ORDER BY 1;

-- off gives the per-row plan
SET infer.enable_batching = off;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM img;
RESET infer.enable_batching;

-- WHERE: cheap quals stay in the scan, the ML qual runs above it on the
-- batched result
EXPLAIN (COSTS OFF)
SELECT id FROM img WHERE infer.classify('ppocr_cls', data) = '180' AND id > 100;
SELECT pg_temp.same($$SELECT id FROM img
	WHERE infer.classify('ppocr_cls', data) = '180' AND id > 100$$);
-- the same call in the WHERE clause and the target list is sent once
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data) = '0' AND id < 10;
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data) = '0' AND id < 10;

-- ... and so it is when an ORDER BY separates them: PostgreSQL computes
-- the (volatile) target list above the Sort and the LIMIT, and that call
-- takes the filtering node's result column, passed up through the Sort,
-- instead of a second node sending the rows again.  EXPLAIN ANALYZE of q:
-- the InferBatch nodes, the rows they sent, the rows the scan returned.
CREATE FUNCTION pg_temp.sent(q text, OUT batch_nodes int, OUT rows_sent int,
							 OUT rows_scanned int) LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	batch_nodes := 0;
	rows_sent := 0;
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
	LOOP
		IF line ~ 'Custom Scan \(InferBatch\)' THEN
			batch_nodes := batch_nodes + 1;
		ELSIF line ~ 'Rows Sent: ' THEN
			rows_sent := rows_sent + substring(line FROM 'Rows Sent: (\d+)')::int;
		ELSIF line ~ 'Scan .*on img' THEN
			rows_scanned := substring(line FROM 'actual rows=(\d+)')::int;
		END IF;
	END LOOP;
END
$$;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data) = '0' AND id > 80
 ORDER BY name, id DESC LIMIT 3;
SELECT * FROM pg_temp.sent($$SELECT id, infer.classify('ppocr_cls', data) FROM img
	WHERE infer.classify('ppocr_cls', data) = '0' AND id > 80
	ORDER BY name, id DESC LIMIT 3$$);
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data) = '0' AND id > 80
 ORDER BY name, id DESC LIMIT 3;
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data) FROM img
	WHERE infer.classify('ppocr_cls', data) = '0' AND id > 80
	ORDER BY name, id DESC LIMIT 3$$);
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data) FROM img
	WHERE infer.classify('ppocr_cls', data) = '180' ORDER BY name, id DESC$$);
-- only the call the filtering node batches is reused: here infer.predict
-- is batched by a node above the Sort, for the rows the LIMIT returns
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) || '!', infer.predict('ppocr_cls', data)
  FROM img WHERE infer.classify('ppocr_cls', data) = '180'
 ORDER BY name DESC, id LIMIT 5 OFFSET 2;
SELECT * FROM pg_temp.sent($$SELECT id, infer.classify('ppocr_cls', data) || '!',
	infer.predict('ppocr_cls', data) FROM img WHERE infer.classify('ppocr_cls', data) = '180'
	ORDER BY name DESC, id LIMIT 5 OFFSET 2$$);
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data) || '!',
	infer.predict('ppocr_cls', data) FROM img WHERE infer.classify('ppocr_cls', data) = '180'
	ORDER BY name DESC, id LIMIT 5 OFFSET 2$$);
-- a call that differs from the filtering one (another input) is sent
-- again, by a second node
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data || ''::bytea) = '0' AND id > 80
 ORDER BY name LIMIT 3;

-- a call in the target list runs only for the rows that an ML condition
-- keeps: a second node above the filtering one batches it
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, infer.predict('ppocr_cls', data) FROM img
 WHERE infer.classify('ppocr_cls', data) = '0' AND id < 10;
SELECT pg_temp.same($$SELECT id, infer.predict('ppocr_cls', data) FROM img
	WHERE infer.classify('ppocr_cls', data) = '0'$$);
SELECT pg_temp.same($$SELECT id, (infer.predict('ppocr_cls', data))[2] > 0.5 FROM img
	WHERE infer.classify('ppocr_cls', data) = '180' LIMIT 30$$);

-- a cast of the result array (ArrayCoerceExpr): the call still batches
EXPLAIN (COSTS OFF)
SELECT id, infer.predict('ppocr_cls', data)::numeric(3,2)[] FROM img;
SELECT pg_temp.same($$SELECT id, infer.predict('ppocr_cls', data)::numeric(3,2)[] FROM img$$);

-- two functions over the same column: two fragments in one node
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data),
	   infer.predict('ppocr_cls', data) FROM img;
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data),
	   infer.predict('ppocr_cls', data) FROM img$$);

-- ORDER BY an ML result
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) AS label FROM img ORDER BY label, id;
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data) AS label
	FROM img ORDER BY label, id$$);

-- LIMIT: the node reads only the rows the LIMIT needs
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM img LIMIT 10;
SELECT pg_temp.same($$SELECT id, infer.classify('ppocr_cls', data)
	FROM img LIMIT 10 OFFSET 3$$);

-- a join: the node sits above the join
EXPLAIN (COSTS OFF)
SELECT t.tag, infer.classify('ppocr_cls', i.data)
  FROM img i JOIN tag t ON t.id = i.id;
SELECT pg_temp.same($$SELECT t.tag, infer.classify('ppocr_cls', i.data)
	FROM img i JOIN tag t ON t.id = i.id ORDER BY t.id$$);
-- an outer join with the ML call in WHERE
EXPLAIN (COSTS OFF)
SELECT i.id, t.tag FROM img i LEFT JOIN tag t ON t.id = i.id
 WHERE infer.classify('ppocr_cls', i.data) = '0' AND i.id < 20;
SELECT pg_temp.same($$SELECT i.id, t.tag FROM img i LEFT JOIN tag t ON t.id = i.id
	WHERE infer.classify('ppocr_cls', i.data) = '0' AND i.id < 20
	ORDER BY i.id$$);

-- a subquery and a CTE
EXPLAIN (COSTS OFF)
SELECT label, count(*) FROM (SELECT infer.classify('ppocr_cls', data) AS label
	FROM img WHERE id <= 30) AS s GROUP BY label;
SELECT pg_temp.same($$SELECT label, count(*) FROM (SELECT infer.classify('ppocr_cls', data) AS label
	FROM img WHERE id <= 30) AS s GROUP BY label ORDER BY label$$);
EXPLAIN (COSTS OFF)
WITH c AS MATERIALIZED (SELECT id, infer.classify('ppocr_cls', data) AS label FROM img)
SELECT * FROM c WHERE label = '0' AND id % 10 = 1;
SELECT pg_temp.same($$WITH c AS MATERIALIZED (SELECT id, infer.classify('ppocr_cls', data) AS label FROM img)
	SELECT * FROM c WHERE label = '0' AND id % 10 = 1$$);
-- a scalar subquery in the target list (a SubPlan)
EXPLAIN (COSTS OFF)
SELECT t.id, (SELECT infer.classify('ppocr_cls', i.data) FROM img i
			   WHERE i.id = t.id) FROM tag t;
SELECT pg_temp.same($$SELECT t.id, (SELECT infer.classify('ppocr_cls', i.data) FROM img i
	WHERE i.id = t.id) FROM tag t$$);

-- INSERT ... SELECT is batched too
CREATE TEMP TABLE labels (id int, label text);
EXPLAIN (COSTS OFF)
INSERT INTO labels SELECT id, infer.classify('ppocr_cls', data) FROM img;
INSERT INTO labels SELECT id, infer.classify('ppocr_cls', data) FROM img;
SELECT count(*), count(label), count(*) FILTER (WHERE label = '0') AS upright FROM labels;

-- left per row: calls that may be skipped (CASE, a later qual), a model
-- that changes per row, UPDATE, FOR UPDATE
EXPLAIN (COSTS OFF)
SELECT CASE WHEN id > 5 THEN infer.classify('ppocr_cls', data) END FROM img;
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id FROM img WHERE infer.classify('ppocr_cls', data) = '0'
   AND infer.predict('ppocr_cls', data) IS NOT NULL;
EXPLAIN (COSTS OFF)
SELECT infer.classify(CASE WHEN id > 0 THEN 'ppocr_cls' END, data) FROM img;
EXPLAIN (COSTS OFF)
UPDATE labels SET label = infer.classify('ppocr_cls', i.data) FROM img i
 WHERE i.id = labels.id;
EXPLAIN (COSTS OFF)
SELECT infer.classify('ppocr_cls', data) FROM img FOR UPDATE;
SELECT pg_temp.same($$SELECT id, CASE WHEN id > 115 THEN infer.classify('ppocr_cls', data) END
	FROM img WHERE infer.classify('ppocr_cls', data) = '0'
	  AND infer.predict('ppocr_cls', data) IS NOT NULL$$);

-- a view
CREATE TEMP VIEW v AS SELECT id, infer.classify('ppocr_cls', data) AS label FROM img;
EXPLAIN (COSTS OFF) SELECT * FROM v WHERE id < 5;
SELECT * FROM v WHERE id < 5;

-- JIT: the batched calls' COST does not count towards jit_above_cost (JIT
-- cannot make them faster); a per-row plan keeps PostgreSQL's decision,
-- and the rest of a batched plan's cost still counts.  (Where the server
-- has no JIT, pg_jit_available() is false and so is every plan's JIT.)
CREATE FUNCTION pg_temp.jit_used(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS ON, TIMING OFF, SUMMARY OFF) ' || q
	LOOP
		IF line ~ '^JIT:' THEN
			RETURN true;
		END IF;
	END LOOP;
	RETURN false;
END
$$;
SET jit_above_cost = 1000;
SELECT pg_temp.jit_used($$SELECT id, infer.classify('ppocr_cls', data) FROM img$$) AS batched_jit;
SET infer.enable_batching = off;
SELECT pg_temp.jit_used($$SELECT id, infer.classify('ppocr_cls', data) FROM img$$) =
	   pg_jit_available() AS per_row_jit_if_available;
RESET infer.enable_batching;
SET jit_above_cost = 0;
SELECT pg_temp.jit_used($$SELECT id, infer.classify('ppocr_cls', data) FROM img$$) =
	   pg_jit_available() AS batched_jit_at_cost_0;
RESET jit_above_cost;

SELECT infer.drop_worker('regress');
