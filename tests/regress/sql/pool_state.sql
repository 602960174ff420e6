-- pool_state: the pool monitor's live state in infer.workers (status,
-- heartbeat, in-flight work), a worker that nothing listens for going
-- down after infer.worker_timeout and getting no work, and in-flight
-- accounting that returns to zero after replies and after errors.
-- Needs pg_infer in shared_preload_libraries (tools/testenv.sh sets it).
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
\set SHOW_CONTEXT never
SELECT infer.add_worker('pool_a', current_setting('regress.worker2_endpoint'));
SELECT infer.add_worker('pool_b', current_setting('regress.worker3_endpoint'));
-- port 1 of 127.0.0.1: nothing listens there
SELECT infer.add_worker('pool_dead', 'tcp://127.0.0.1:1');

-- waits (at most 5 s) until n workers have status s
CREATE FUNCTION pg_temp.wait_status(s text, n int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..100 LOOP
		IF (SELECT count(*) FROM infer.workers WHERE status = s) >= n THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;

SELECT pg_temp.wait_status('up', 2) AS both_up;
-- a worker never heard from is unknown until infer.worker_timeout (2 s)
SELECT name, status, heartbeat_age < interval '1 second' AS fresh,
	   queue_length, inflight_requests, inflight_rows, device
  FROM infer.workers ORDER BY name;
-- the heartbeat keeps coming: still fresh a little later
SELECT pg_sleep(0.3);
SELECT name, status IN ('up', 'stale') AS alive,
	   heartbeat_age < interval '1 second' AS fresh, state_seq IS NOT NULL AS seq
  FROM infer.workers WHERE name <> 'pool_dead' ORDER BY name;

-- the workers publish their state (PUB): the monitor subscribed, and
-- most states come that way rather than as answers to its pings
CREATE FUNCTION pg_temp.wait_published() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..100 LOOP
		IF (SELECT count(*) FROM infer.workers
			 WHERE name <> 'pool_dead' AND state_source = 'publish') = 2 THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_published() AS published;

-- a shorter timeout: the silent worker goes down
SET infer.worker_timeout = '400ms';
SELECT pg_temp.wait_status('down', 1) AS one_down;
SELECT name, status FROM infer.workers WHERE status = 'down';

CREATE TEMP TABLE img (name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT f || '#' || i, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f)
  FROM unnest(ARRAY['line_upright.png', 'line_rot180.png']) AS f,
	   generate_series(1, 4) AS i;

-- the policies that use the live state: the down worker gets no batch,
-- and results are right (round_robin passes over it too:
-- tests/integration/test_pool.sh (j)); ppocr_cls resident on both live
-- workers, so that locality's choice does not hang on what the tests
-- before this one left loaded
CREATE FUNCTION pg_temp.workers_used(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line ~ 'Inference Workers:' THEN
			RETURN QUERY SELECT unnest(regexp_matches(line, '(pool_[a-z]+):', 'g'));
		END IF;
	END LOOP;
END $$;
SELECT infer.load_model('ppocr_cls', 'pool_a') AS a, infer.load_model('ppocr_cls', 'pool_b') AS b;
SET infer.batch_size = 1;
SET infer.placement = locality;
SELECT DISTINCT w FROM pg_temp.workers_used(
	'SELECT infer.classify(''ppocr_cls'', data) FROM img') AS w ORDER BY w;
SET infer.placement = cost;
SELECT DISTINCT w = 'pool_dead' AS went_to_dead FROM pg_temp.workers_used(
	'SELECT infer.classify(''ppocr_cls'', data) FROM img') AS w;
SET infer.placement = least_loaded;
SELECT DISTINCT w = 'pool_dead' AS went_to_dead FROM pg_temp.workers_used(
	'SELECT infer.classify(''ppocr_cls'', data) FROM img') AS w;
SELECT split_part(name, '#', 1) AS image, infer.classify('ppocr_cls', data) AS label, count(*)
  FROM img GROUP BY 1, 2 ORDER BY 1;

-- nothing stays in flight: after replies, and after a statement that
-- failed with batches out (the third row is not an image)
SELECT name, inflight_requests, inflight_rows, inflight_ms
  FROM infer.workers ORDER BY name;
SET infer.batch_size = 2;
SELECT infer.classify('ppocr_cls', data)
  FROM ((SELECT data FROM img LIMIT 2)
		UNION ALL SELECT '\x00'::bytea
		UNION ALL SELECT data FROM img) AS t;
:sqlstate
SELECT name, inflight_requests, inflight_rows, inflight_ms
  FROM infer.workers ORDER BY name;
-- and after a statement cancelled (statement_timeout) with OCR batches
-- out on both workers
SET infer.batch_size = 1;
SET statement_timeout = '300ms';
SELECT length(infer.ocr(pg_read_binary_file(current_setting('regress.data_dir') || '/p10_platform_sign.jpg')))
  FROM generate_series(1, 16);
RESET statement_timeout;
SELECT name, inflight_requests, inflight_rows, inflight_ms
  FROM infer.workers ORDER BY name;
SELECT sum(requests_sent) > 0 AS counted FROM infer.workers;

-- a second database registers pool_a's endpoint under its own name and
-- drops it again: here pool_a keeps its live state (the pool's slot is the
-- server's), and infer.models names each database's own workers
CREATE DATABASE pg_infer_pool_other;
\c pg_infer_pool_other
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('other_a', current_setting('regress.worker2_endpoint'));
SELECT name, status IS NOT NULL AS tracked FROM infer.workers;
SELECT resident_on FROM infer.models WHERE name = 'ppocr_cls';
SELECT infer.drop_worker('other_a');
\c pg_infer_regress
SELECT name, status, heartbeat_age < interval '1 second' AS fresh
  FROM infer.workers WHERE name IN ('pool_a', 'pool_b') ORDER BY name;
SELECT (SELECT array_agg(w ORDER BY w) FROM unnest(resident_on) AS w) AS resident_on
  FROM infer.models WHERE name = 'ppocr_cls';
DROP DATABASE pg_infer_pool_other WITH (FORCE);

RESET infer.worker_timeout;
RESET infer.placement;
RESET infer.batch_size;
SELECT infer.drop_worker('pool_a');
SELECT infer.drop_worker('pool_b');
SELECT infer.drop_worker('pool_dead');
