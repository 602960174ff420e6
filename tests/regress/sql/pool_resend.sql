-- pool_resend: a worker killed in the middle of a batched query.  Its
-- batches in flight go to the other worker (and so does any batch that was
-- waiting to connect to it), the query returns every row once with the
-- right answers, the dead worker is down and nothing stays in flight; a
-- worker that comes back gets work again.
-- Worker 4 of tests/regress/run.sh runs as the server's user, so the test
-- kills it with COPY TO PROGRAM, and starts it again; it is not used after
-- this test.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
SELECT infer.add_worker('pool_a', current_setting('regress.worker2_endpoint'));
SELECT infer.add_worker('pool_victim', current_setting('regress.worker4_endpoint'));

CREATE FUNCTION pg_temp.wait_up(n int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..100 LOOP
		IF (SELECT count(*) FROM infer.workers WHERE status = 'up') >= n THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_up(2) AS both_up;

-- kills worker 4 when row n = 3 is read (batches 1 and 2 are out by then)
CREATE FUNCTION pg_temp.kill_victim(n int) RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
	IF n = 3 THEN
		EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
					   'kill -KILL $(cat ' || current_setting('regress.worker4_pidfile') || ')');
	END IF;
	RETURN n;
END $$;

CREATE TEMP TABLE img (n int NOT NULL, name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT row_number() OVER (ORDER BY i, f), f,
	   pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f)
  FROM unnest(ARRAY['line_upright.png', 'line_rot180.png']) AS f,
	   generate_series(1, 4) AS i;

-- the answers while both workers live
SET infer.batch_size = 1;
SET infer.worker_timeout = '500ms';
CREATE TEMP TABLE ref AS
SELECT n, infer.ocr(data) AS text FROM img;

-- the query that loses a worker
CREATE TEMP TABLE got AS
SELECT t.n, infer.ocr(t.data) AS text
  FROM (SELECT pg_temp.kill_victim(n) AS n, data FROM img ORDER BY n
		OFFSET 0) AS t;
SELECT count(*) AS rows, count(DISTINCT n) AS distinct_rows,
	   count(*) FILTER (WHERE got.text IS DISTINCT FROM ref.text) AS differ
  FROM got JOIN ref USING (n);

SELECT pg_temp.wait_up(1) AS one_up;
SELECT name, status, inflight_requests, inflight_rows
  FROM infer.workers ORDER BY name;

-- the worker comes back (started again as the server's user): it is up
-- again at its next heartbeat and gets work again
DO $$
BEGIN
	EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
				   format('nohup %s >/dev/null 2>&1 & echo $! > %s',
						  current_setting('regress.worker4_start'),
						  current_setting('regress.worker4_pidfile')));
END $$;
SELECT pg_temp.wait_up(2) AS both_up_again;
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
SET infer.placement = least_loaded;
SELECT DISTINCT w FROM pg_temp.workers_used(
	'SELECT infer.classify(''ppocr_cls'', data) FROM img') AS w ORDER BY w;
RESET infer.placement;

RESET infer.batch_size;
RESET infer.worker_timeout;
SELECT infer.drop_worker('pool_a');
SELECT infer.drop_worker('pool_victim');
