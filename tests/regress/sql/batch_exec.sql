-- batch_exec: executing InferBatch nodes: how much a LIMIT reads, batch
-- sizes and in-flight limits, prepared statements with generic plans,
-- cursors fetched in small steps, rescans, per-row errors inside a batch,
-- NULLs, OCR, and cancellation by statement_timeout.
LOAD 'pg_infer';
-- the batch counts below are the ramp's (1, 2, 4, ...): an infer.timeout
-- far above any batch's time keeps batch_rows_cap (which sizes a slow
-- model's batches to a quarter of it) out of them
SET infer.timeout = '1h';
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- ids 1..200: odd ids upright (label 0), even ids upside down (180)
CREATE TEMP TABLE img (id int PRIMARY KEY, data bytea);
INSERT INTO img
SELECT i, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' ||
		CASE WHEN i % 2 = 1 THEN 'line_upright.png' ELSE 'line_rot180.png' END)
  FROM generate_series(1, 200) AS i;
ANALYZE img;

-- EXPLAIN ANALYZE of q with the times (waiting, worker compute) blanked out
CREATE FUNCTION pg_temp.explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
	LOOP
		RETURN NEXT regexp_replace(line, '(Reply Wait|Worker Compute): [0-9.]+ ms', '\1: N ms');
	END LOOP;
END
$$;

-- LIMIT 10 reads 10 rows, in batches of 1, 2, 4 and the 3 left
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM img LIMIT 10$$);
-- without a LIMIT: 1, 2, 4, ..., 64, 64, then what is left
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM img$$);
-- a LIMIT above a filter on the ML result: the node never reads ahead
-- more rows than it has returned (1, 2, then 4 rows for 2 that pass)
SELECT pg_temp.explain($$SELECT id FROM img
	WHERE infer.classify('ppocr_cls', data) = '180' LIMIT 2$$);
SELECT id FROM img WHERE infer.classify('ppocr_cls', data) = '180' LIMIT 2;

-- 17 calls over one input (17 names of the direction classifier, so
-- that they are not merged as one call): a worker takes at most 16
-- fragments in a request (common/protocol.h), so the 17th leads a
-- request of its own: 6 requests for the 3 batches (infer.workers'
-- requests_sent); every answer is the row's label
SELECT count(infer.create_model('regress_cls_' || k, 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192,
	mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}', labels => '{0,180}')) AS models
  FROM generate_series(1, 17) AS k;
CREATE TEMP TABLE sent0 AS
SELECT requests_sent FROM infer.workers WHERE name = 'regress';
DO $$
DECLARE
	q text := 'SELECT id, ' ||
		(SELECT string_agg(format('infer.classify(%L, data) AS c%s', 'regress_cls_' || k, k), ', ')
		   FROM generate_series(1, 17) AS k) || ' FROM img WHERE id <= 6';
	r record;
	n int := 0;
BEGIN
	FOR r IN EXECUTE q LOOP
		IF r.c1 = ('{180,0}'::text[])[r.id % 2 + 1] AND
		   r.c1 = r.c16 AND r.c1 = r.c17 AND r.c2 = r.c15 THEN
			n := n + 1;
		END IF;
	END LOOP;
	RAISE NOTICE '17 calls: % of 6 rows right', n;
END
$$;
SELECT w.requests_sent - s.requests_sent AS requests
  FROM infer.workers w, sent0 s WHERE w.name = 'regress';
DROP TABLE sent0;
SELECT count(infer.drop_model('regress_cls_' || k)) AS dropped
  FROM generate_series(1, 17) AS k;

-- a call after an ML filter is sent for the rows that pass only
SELECT pg_temp.explain($$SELECT id, (infer.predict('ppocr_cls', data))[2] > 0.5 AS rot
	FROM img WHERE infer.classify('ppocr_cls', data) = '0' AND id <= 20 LIMIT 8$$);

-- infer.batch_size and infer.batch_bytes cap a batch (a row is about 6 kB)
SET infer.batch_size = 5;
SET infer.max_inflight = 2;
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM img WHERE id <= 23$$);
SET infer.batch_bytes = '10kB';
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM img WHERE id <= 23$$);
SELECT array_agg(id ORDER BY id) = array_agg(id) AS in_order,
	   string_agg(label, '') AS labels
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label FROM img
		 WHERE id <= 23) AS s;
RESET infer.batch_bytes;
RESET infer.batch_size;
RESET infer.max_inflight;

-- NULL image: NULL, nothing sent; NULL model: NULL for every row
SELECT id, infer.classify('ppocr_cls', CASE WHEN id <> 2 THEN data END) AS label,
	   infer.classify(NULL, data) AS no_model
  FROM img WHERE id <= 3;

-- an unknown model: as one row at a time, no error when no row is sent,
-- the registry's error otherwise
SELECT infer.classify('no_such_model', data) FROM img WHERE id < 0;
SELECT infer.classify('no_such_model', data) FROM img WHERE id <= 2;

-- a prepared statement with a generic plan: the model and the LIMIT are
-- parameters
SET plan_cache_mode = force_generic_plan;
PREPARE q(text, int) AS
	SELECT id, infer.classify($1, data) AS label FROM img LIMIT $2;
EXPLAIN (COSTS OFF) EXECUTE q('ppocr_cls', 3);
EXECUTE q('ppocr_cls', 3);
EXECUTE q('ppocr_cls', 5);
SELECT pg_temp.explain($$EXECUTE q('ppocr_cls', 6)$$);
DEALLOCATE q;
RESET plan_cache_mode;

-- cursors fetched in small steps, two at once on the same worker, with
-- other statements in between: every reply finds its batch
BEGIN;
DECLARE c1 CURSOR FOR
	SELECT id, infer.classify('ppocr_cls', data) AS label FROM img;
DECLARE c2 CURSOR FOR
	SELECT id, (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright FROM img
	 WHERE id > 100;
FETCH 2 FROM c1;
FETCH 1 FROM c2;
SELECT count(*) FROM (SELECT infer.classify('ppocr_cls', data) FROM img
					   WHERE id <= 50) AS s;
FETCH 3 FROM c1;
FETCH 2 FROM c2;
MOVE 90 IN c1;
FETCH 2 FROM c1;
FETCH 1 FROM c2;
-- a cursor without SCROLL cannot go back over an InferBatch node
FETCH BACKWARD 1 FROM c1;
ROLLBACK;
-- a SCROLL cursor gets a Material node on top
BEGIN;
EXPLAIN (COSTS OFF) DECLARE s SCROLL CURSOR FOR
	SELECT id, infer.classify('ppocr_cls', data) FROM img;
DECLARE s SCROLL CURSOR FOR
	SELECT id, infer.classify('ppocr_cls', data) FROM img;
FETCH 4 FROM s;
FETCH BACKWARD 2 FROM s;
FETCH ABSOLUTE 150 FROM s;
COMMIT;

-- rescans: the inner side of a nested loop, with a parameter (LATERAL)
-- and without one; a LIMIT inside stops the inner scan with batches in
-- flight, which the rescan cancels
SET enable_material = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
CREATE TEMP TABLE k (k int);
INSERT INTO k VALUES (10), (20), (31), (40);
ANALYZE k;
EXPLAIN (COSTS OFF)
SELECT k.k, x.id, x.label FROM k, LATERAL (
	SELECT id, infer.classify('ppocr_cls', data) AS label FROM img
	 WHERE id >= k.k AND infer.classify('ppocr_cls', data) = '0' LIMIT 2) AS x;
SELECT k.k, x.id, x.label FROM k, LATERAL (
	SELECT id, infer.classify('ppocr_cls', data) AS label FROM img
	 WHERE id >= k.k AND infer.classify('ppocr_cls', data) = '0' LIMIT 2) AS x;
-- without a parameter of its own: the subquery is run again for each k
-- (its one-time filter depends on k), and the node rescans its child
SELECT pg_temp.explain($$SELECT k.k, (SELECT string_agg(s.l, ',')
	FROM (SELECT infer.classify('ppocr_cls', data) AS l FROM img
		   WHERE id <= 3 OFFSET 0) AS s WHERE k.k > 15) AS labels FROM k$$);
SELECT k.k, (SELECT string_agg(s.l, ',')
	FROM (SELECT infer.classify('ppocr_cls', data) AS l FROM img
		   WHERE id <= 3 OFFSET 0) AS s WHERE k.k > 15) AS labels FROM k;
RESET enable_material;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- a bad image in the middle of a batch
CREATE TEMP TABLE mixed (id int, data bytea);
INSERT INTO mixed
SELECT id, CASE WHEN id = 5 THEN '\x89504e470d0a1a0a00'::bytea ELSE data END
  FROM img WHERE id <= 9 ORDER BY id;
-- infer.on_error = null: that row is NULL with a WARNING, the rows before
-- and after keep their labels, in order
SET infer.on_error = 'null';
\set VERBOSITY terse
SELECT id, infer.classify('ppocr_cls', data) AS label FROM mixed;
SELECT id, infer.predict('ppocr_cls', data) IS NULL AS failed FROM mixed WHERE id >= 4;
\set VERBOSITY default
RESET infer.on_error;
-- infer.on_error = error: the rows before the bad one come out, then the
-- error (with the worker's SQLSTATE)
\set SHOW_CONTEXT never
BEGIN;
DECLARE m CURSOR FOR SELECT id, infer.classify('ppocr_cls', data) FROM mixed;
FETCH 4 FROM m;
FETCH 1 FROM m;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
ROLLBACK;
\set SHOW_CONTEXT errors

-- OCR and text detection, a few rows: batched = per row
CREATE TEMP TABLE scans (id int, data bytea);
INSERT INTO scans
SELECT i, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f)
  FROM unnest(ARRAY['p12_fridge_label.png', 'p35_blank_page.png']) WITH ORDINALITY AS u(f, i);
INSERT INTO scans
SELECT 3, pg_read_binary_file(current_setting('regress.test_data_dir') || '/line_upright.png');
EXPLAIN (COSTS OFF)
SELECT id, infer.ocr(data), jsonb_array_length(infer.detect_text(data)) FROM scans;
SET infer.enable_batching = off;
CREATE TEMP TABLE ocr_per_row AS
	SELECT id, infer.ocr(data) AS text, infer.detect_text(data) AS boxes FROM scans;
RESET infer.enable_batching;
CREATE TEMP TABLE ocr_batched AS
	SELECT id, infer.ocr(data) AS text, infer.detect_text(data) AS boxes FROM scans;
SELECT (SELECT array_agg(t ORDER BY id) FROM ocr_per_row t)::text =
	   (SELECT array_agg(t ORDER BY id) FROM ocr_batched t)::text AS same,
	   (SELECT count(*) FROM ocr_batched WHERE text <> '') AS with_text;
SELECT id, text FROM ocr_batched ORDER BY id;

-- statement_timeout cancels a statement waiting for its batches; the
-- worker is told, and the next statement gets only its own answers
EXPLAIN (COSTS OFF)
SELECT count(t) FROM (SELECT infer.ocr(data) AS t
	FROM scans, generate_series(1, 8) OFFSET 0) AS s;
SET statement_timeout = '300ms';
\set SHOW_CONTEXT never
SELECT count(t) FROM (SELECT infer.ocr(data) AS t
	FROM scans, generate_series(1, 8) OFFSET 0) AS s;
\set SHOW_CONTEXT errors
RESET statement_timeout;
SELECT id, infer.classify('ppocr_cls', data) FROM img WHERE id <= 4;

SELECT infer.drop_worker('regress');
