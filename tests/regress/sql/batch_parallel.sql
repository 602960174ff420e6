-- batch_parallel: parallel query.  The ML functions are PARALLEL SAFE, so
-- their calls go into the partial plan under a Gather; the InferBatch
-- node goes there too and each process (parallel workers and leader)
-- batches the rows it reads, with its own connections to the worker.
-- Results must equal the serial plan's; errors, warnings and
-- infer.on_error work in parallel workers; EXPLAIN ANALYZE sums the
-- processes' counters.
--
-- Parallel workers cannot read temporary tables, so the table here is a
-- real one (dropped at the end).  PostgreSQL 15 names the setting that
-- forces a Gather force_parallel_mode (debug_parallel_query from 16 on).
LOAD 'pg_infer';
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- ids 1..240: odd ids upright (label 0), even ids upside down (180); the
-- padding makes the table large enough for two parallel workers
CREATE TABLE par_img (id int PRIMARY KEY, pad text, data bytea);
INSERT INTO par_img
SELECT i, repeat('x', 400), pg_read_binary_file(current_setting('regress.test_data_dir') || '/' ||
		CASE WHEN i % 2 = 1 THEN 'line_upright.png' ELSE 'line_rot180.png' END)
  FROM generate_series(1, 240) AS i;
ANALYZE par_img;

-- the functions are parallel safe
SELECT p.proname, p.proparallel FROM pg_proc p
 WHERE p.pronamespace = 'infer'::regnamespace
   AND p.proname IN ('ocr', 'detect_text', 'predict', 'classify')
 ORDER BY 1;

-- Results are compared as count and md5 of the rows in id order, computed
-- in the same statement (a PL/pgSQL EXECUTE would not get the parallel
-- plan that a top-level statement gets).
-- EXPLAIN ANALYZE of q with the run-dependent numbers blanked out: how
-- the rows were shared out between the processes, the times.  With
-- max_mean, a mean batch size of at most max_mean reads "at most max_mean"
-- (and a larger one shows).  The batches per process show as N, and
-- whether they add up to the node's Batches.
CREATE FUNCTION pg_temp.explain(q text, max_mean int DEFAULT NULL) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	batches bigint;
	per text[];
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
	LOOP
		IF line ~ ' Batches: [0-9]+$' THEN
			batches := substring(line FROM 'Batches: ([0-9]+)')::bigint;
		END IF;
		IF line ~ 'Batches per Process: ' THEN
			per := ARRAY(SELECT m[1] FROM regexp_matches(line, '(?:leader|worker [0-9]+) ([0-9]+)', 'g') AS m);
			line := regexp_replace(line, 'worker ([0-9]+) [0-9]+', 'worker \1 N', 'g');
			line := regexp_replace(line, 'leader [0-9]+', 'leader N');
			line := line || CASE WHEN (SELECT sum(x::bigint) FROM unnest(per) AS x) = batches
				THEN ' (sum = Batches)' ELSE ' (sum <> Batches)' END;
		END IF;
		IF max_mean IS NOT NULL AND
		   substring(line FROM 'Mean Batch Size: ([0-9.]+)')::numeric <= max_mean THEN
			line := regexp_replace(line, 'Mean Batch Size: [0-9.]+',
								   'Mean Batch Size: at most ' || max_mean);
		END IF;
		line := regexp_replace(line, '(Reply Wait|Worker Compute): [0-9.]+ ms', '\1: N ms');
		line := regexp_replace(line, '(Batches|Mean Batch Size): [0-9.]+', '\1: N');
		line := regexp_replace(line, 'regress: [0-9]+ requests', 'regress: N requests');
		line := regexp_replace(line, 'rows=[0-9]+ loops=[0-9]+', 'rows=N loops=N');
		line := regexp_replace(line, 'Rows Removed by Filter: [0-9]+', 'Rows Removed by Filter: N');
		RETURN NEXT line;
	END LOOP;
END
$$;

-- the serial plan, and its results (the reference)
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) AS label FROM par_img;
CREATE TEMP TABLE serial_result AS
	SELECT id, infer.classify('ppocr_cls', data) AS label,
		   (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
	  FROM par_img;
SELECT label, upright, count(*), min(id), max(id) FROM serial_result
 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS serial
  FROM (SELECT * FROM serial_result) AS t;

-- a real parallel plan with two workers: the InferBatch node is under the
-- Gather, above the Parallel Seq Scan
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) AS label,
	   (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
  FROM par_img;
-- the comparison below runs that parallel plan under its aggregate
EXPLAIN (COSTS OFF)
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS parallel
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label,
	   (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
  FROM par_img) AS t;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS parallel
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label,
	   (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
  FROM par_img) AS t;
-- EXPLAIN ANALYZE sums the two workers' batches: every row was sent once
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM par_img$$);
-- the leader takes part too
RESET parallel_leader_participation;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS parallel_with_leader
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label,
	   (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
  FROM par_img) AS t;

-- a cheap qual stays in the parallel scan, an ML qual runs above it in
-- each process, and the call of the target list in a second node
EXPLAIN (COSTS OFF)
SELECT id, infer.predict('ppocr_cls', data) FROM par_img
 WHERE infer.classify('ppocr_cls', data) = '180' AND id > 100;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS parallel
  FROM (SELECT id, (infer.predict('ppocr_cls', data))[1] > 0.5 AS upright
	FROM par_img WHERE infer.classify('ppocr_cls', data) = '180' AND id > 100) AS t;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS serial
  FROM (SELECT id, upright FROM serial_result
	WHERE label = '180' AND id > 100) AS t;

-- ORDER BY another column: the rows are sorted in the leader, the calls
-- batched there, after the sort
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM par_img WHERE id % 3 = 0 ORDER BY id;
SELECT array_agg(id) = array_agg(id ORDER BY id) AS sorted,
	   string_agg(label, '') = (SELECT string_agg(label, '' ORDER BY id)
								  FROM serial_result WHERE id % 3 = 0) AS same
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label FROM par_img
		 WHERE id % 3 = 0 ORDER BY id) AS s;

-- an index scan in id order: the calls are batched in each process,
-- which keeps its rows' order, and the Gather Merge merges them
SET enable_sort = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET min_parallel_index_scan_size = 0;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM par_img WHERE id % 3 = 0 ORDER BY id;
SELECT array_agg(id) = array_agg(id ORDER BY id) AS sorted,
	   string_agg(label, '') = (SELECT string_agg(label, '' ORDER BY id)
								  FROM serial_result WHERE id % 3 = 0) AS same
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label FROM par_img
		 WHERE id % 3 = 0 ORDER BY id) AS s;
RESET enable_sort;
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET min_parallel_index_scan_size;

-- grouping by a call's result: the calls are batched in the workers,
-- the grouping is done in the leader
EXPLAIN (COSTS OFF)
SELECT infer.classify('ppocr_cls', data) AS label, count(*) FROM par_img GROUP BY 1;
SELECT infer.classify('ppocr_cls', data) AS label, count(*) FROM par_img
 GROUP BY 1 ORDER BY 1;

-- one row at a time in the parallel workers (batching off)
SET infer.enable_batching = off;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM par_img WHERE id <= 40;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS per_row_parallel
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label
	FROM par_img WHERE id <= 40) AS t;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS serial
  FROM (SELECT id, label FROM serial_result WHERE id <= 40) AS t;
RESET infer.enable_batching;

-- a prepared statement with a generic plan: the model is a parameter that
-- the workers receive
SET plan_cache_mode = force_generic_plan;
PREPARE pq(text) AS SELECT id, infer.classify($1, data) AS label FROM par_img;
EXPLAIN (COSTS OFF) EXECUTE pq('ppocr_cls');
PREPARE pq_digest(text) AS
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS prepared
  FROM (SELECT id, infer.classify($1, data) AS label FROM par_img) AS t;
EXPLAIN (COSTS OFF) EXECUTE pq_digest('ppocr_cls');
EXECUTE pq_digest('ppocr_cls');
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS serial
  FROM (SELECT id, label FROM serial_result) AS t;
DEALLOCATE pq;
DEALLOCATE pq_digest;
RESET plan_cache_mode;

-- settings reach the parallel workers: batches of at most 4 rows (with
-- the default of 64, about 80 rows per process would make batches of 1,
-- 2, 4, ..., 32, a mean of over 10)
SET infer.batch_size = 4;
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM par_img$$, 4);
RESET infer.batch_size;

-- errors and warnings of a parallel worker reach the leader
UPDATE par_img SET data = '\x89504e470d0a1a0a00'::bytea WHERE id = 77;
\set VERBOSITY terse
SET infer.on_error = 'null';
SELECT count(*) AS rows, count(label) AS labelled,
	   array_agg(id) FILTER (WHERE label IS NULL) AS failed
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label FROM par_img) AS s;
RESET infer.on_error;
SELECT count(infer.classify('ppocr_cls', data)) FROM par_img;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set VERBOSITY default

-- force_parallel_mode: the whole plan runs in one parallel worker
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
SET force_parallel_mode = on;
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM par_img WHERE id <= 30;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS single_worker
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label
	FROM par_img WHERE id <= 30) AS t;
SELECT count(*) || ' rows, ' || md5(string_agg(t::text, ',' ORDER BY t.id)) AS serial
  FROM (SELECT id, label FROM serial_result WHERE id <= 30) AS t;
-- the scan under it by the index (a seq scan costs about as much for 30 of
-- the table's rows under LIMIT 5, and which one wins moved between machines)
SET enable_seqscan = off;
SELECT pg_temp.explain($$SELECT id, infer.classify('ppocr_cls', data) FROM par_img WHERE id <= 30 LIMIT 5$$);
RESET enable_seqscan;
RESET force_parallel_mode;

DROP TABLE par_img;
SELECT infer.drop_worker('regress');
