-- pool_locality: a model made resident on one of two fresh workers
-- (infer.load_model) attracts its batches under infer.placement =
-- locality and cost, as EXPLAIN ANALYZE's per-worker counts show; the
-- other policies are accepted and give the same results.  Runs first of
-- the pool_* tests: workers 2 and 3 of tests/regress/run.sh have loaded
-- no model yet.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
SELECT infer.add_worker('pool_a', current_setting('regress.worker2_endpoint'));
SELECT infer.add_worker('pool_b', current_setting('regress.worker3_endpoint'));

-- (at most 5 s) until the boolean query q is true
CREATE FUNCTION pg_temp.wait_until(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
BEGIN
	FOR i IN 1..100 LOOP
		EXECUTE q INTO ok;
		IF ok THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_until($$SELECT count(*) >= 2 FROM infer.workers WHERE status = 'up'$$) AS both_up;

-- the policies
SHOW infer.placement;
SET infer.placement = nearest;
SET infer.placement = locality;
SHOW infer.placement;

-- nothing resident yet; then the classifier on pool_b only
SELECT name, resident_models FROM infer.workers ORDER BY name;
SELECT infer.load_model('ppocr_cls', 'pool_b');
-- the load's answer is folded into the pool at once; a state the worker
-- published before it is ignored (older seq), so this holds at once, but
-- wait (at most 5 s) rather than race a busy machine's monitor
SELECT pg_temp.wait_until($$SELECT cardinality(resident_models) = 1 FROM infer.workers
							 WHERE name = 'pool_b'$$) AS resident;
SELECT name, resident_models FROM infer.workers ORDER BY name;
SELECT infer.load_model('no_such_model', 'pool_b');
:sqlstate
SELECT infer.load_model('ppocr_cls', 'no_such_worker');
:sqlstate

CREATE TEMP TABLE img (name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT f || '#' || i, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f)
  FROM unnest(ARRAY['line_upright.png', 'line_rot180.png']) AS f,
	   generate_series(1, 4) AS i;

-- the "Inference Workers" line of EXPLAIN ANALYZE of q
CREATE FUNCTION pg_temp.workers_line(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line ~ 'Inference Workers:' THEN
			RETURN btrim(line);
		END IF;
	END LOOP;
	RETURN NULL;
END $$;

-- locality: every batch to the worker that holds the model
SET infer.batch_size = 2;
SELECT pg_temp.workers_line('SELECT infer.classify(''ppocr_cls'', data) FROM img');
-- cost: loading the model elsewhere costs more than waiting for pool_b
SET infer.placement = cost;
SET infer.max_inflight = 1;
SELECT pg_temp.workers_line('SELECT infer.classify(''ppocr_cls'', data) FROM img');
-- per-row calls (no batching) go there too
SET infer.enable_batching = off;
SELECT split_part(name, '#', 1) AS image, infer.classify('ppocr_cls', data) AS label, count(*)
  FROM img GROUP BY 1, 2 ORDER BY 1;
SELECT name, requests_sent > 0 AS used FROM infer.workers ORDER BY name;
RESET infer.enable_batching;
RESET infer.max_inflight;

-- cost: two calls over the same input whose models are resident on
-- different workers go apart, a request each to its model's worker
-- (placement.c InferPlacementSplits); under least_loaded they stay
-- together, one request per batch carrying the input once.  The two text
-- models cost about the same, so apart finishes in about half the time.
SELECT infer.load_model('minilm', 'pool_a');
SELECT infer.load_model('prompt_task', 'pool_b');
SELECT pg_temp.wait_until($$
	SELECT bool_and(CASE name WHEN 'pool_a' THEN 'minilm/model.onnx' = ANY (resident_models)
					ELSE 'prompt_task/model.onnx' = ANY (resident_models) END)
	  FROM infer.workers WHERE name IN ('pool_a', 'pool_b')$$) AS resident;
CREATE TEMP TABLE txt (n int, t text);
INSERT INTO txt
SELECT i, 'Question ' || i || ': which of these proofs of the lemma is shorter, and why?'
  FROM generate_series(1, 8) AS i;
-- the requests EXPLAIN ANALYZE counts over all workers
CREATE FUNCTION pg_temp.requests(line text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT sum(m[1]::bigint) FROM regexp_matches(line, '(\d+) requests', 'g') AS m
$$;
SET infer.max_inflight = 1;
SELECT pg_temp.workers_line('SELECT infer.embed(''minilm'', t), infer.classify(''prompt_task'', t) FROM txt');
SET infer.placement = least_loaded;
SELECT pg_temp.requests(pg_temp.workers_line('SELECT infer.embed(''minilm'', t), infer.classify(''prompt_task'', t) FROM txt'));
-- the same answers apart as together, row by row
CREATE TEMP TABLE two (policy text, n int, e real[], label text);
INSERT INTO two
SELECT 'least_loaded', n, infer.embed('minilm', t), infer.classify('prompt_task', t)
  FROM txt;
SET infer.placement = cost;
INSERT INTO two
SELECT 'cost', n, infer.embed('minilm', t), infer.classify('prompt_task', t)
  FROM txt;
SELECT count(*) AS rows, count(*) FILTER (WHERE cardinality(a.e) = 384) AS embedded,
	   count(*) FILTER (WHERE a.e IS DISTINCT FROM b.e
						OR a.label IS DISTINCT FROM b.label) AS differ
  FROM two a JOIN two b USING (n)
 WHERE a.policy = 'cost' AND b.policy = 'least_loaded';
RESET infer.max_inflight;

-- the same answers under every policy
CREATE TEMP TABLE res (policy text, name text, label text, p real[]);
DO $$
DECLARE
	pol text;
BEGIN
	FOREACH pol IN ARRAY ARRAY['round_robin', 'least_loaded', 'locality', 'cost'] LOOP
		PERFORM set_config('infer.placement', pol, true);
		INSERT INTO res
		SELECT pol, name, infer.classify('ppocr_cls', data),
			   infer.predict('ppocr_cls', data)
		  FROM img;
	END LOOP;
END $$;
SELECT r.policy, count(*) AS rows,
	   count(*) FILTER (WHERE r.label IS DISTINCT FROM b.label
						OR r.p IS DISTINCT FROM b.p) AS differ
  FROM res r JOIN res b USING (name)
 WHERE b.policy = 'round_robin'
 GROUP BY r.policy ORDER BY r.policy;

RESET infer.placement;
RESET infer.batch_size;
SELECT infer.drop_worker('pool_a');
SELECT infer.drop_worker('pool_b');
