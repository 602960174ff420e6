-- batch_cancel: a batched query waiting for its batches stops within 1 s
-- of pg_cancel_backend() from another session, or of its
-- statement_timeout; the worker gets MSG_CANCEL for the requests in
-- flight (its log, regress.worker_log, says so), and the session works
-- afterwards, getting only its own answers.  A dblink connection is the
-- session being cancelled (a real table, as it cannot see this session's
-- temporary ones).
LOAD 'pg_infer';
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- ids 1..20: odd ids upright (label 0), even ids upside down (180)
CREATE TABLE cancel_img (id int PRIMARY KEY, data bytea);
INSERT INTO cancel_img
SELECT i, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' ||
		CASE WHEN i % 2 = 1 THEN 'line_upright.png' ELSE 'line_rot180.png' END)
  FROM generate_series(1, 20) AS i;

-- the cancels the worker has logged for requests of backend pid (the
-- high half of a request id is the pid of the backend that sent it)
CREATE FUNCTION pg_temp.worker_cancels(pid int, others bool DEFAULT false) RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM regexp_matches(pg_read_file(current_setting('regress.worker_log')),
										'request ([0-9]+): cancel', 'g') AS m
	 WHERE (floor(m[1]::numeric / 4294967296) = pid) <> others
$$;

-- the cancels the worker has logged that dropped a queued request, for
-- requests of backend pid; for all backends but pid when others is true
CREATE FUNCTION pg_temp.worker_drops(pid int, others bool DEFAULT false) RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM regexp_matches(pg_read_file(current_setting('regress.worker_log')),
										'request ([0-9]+): cancel dropped', 'g') AS m
	 WHERE (floor(m[1]::numeric / 4294967296) = pid) <> others
$$;

-- waits (at most 10 s) until the session's backend, or one of its
-- parallel workers, waits for a worker's reply: wait event type Extension
CREATE FUNCTION pg_temp.wait_for_batches(pid int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	w text;
BEGIN
	LOOP
		SELECT max(wait_event_type) INTO w FROM pg_stat_activity a
		 WHERE (a.pid = wait_for_batches.pid OR a.leader_pid = wait_for_batches.pid)
		   AND a.wait_event_type = 'Extension';
		EXIT WHEN w = 'Extension' OR clock_timestamp() - t0 > interval '10 s';
		PERFORM pg_sleep(0.01);
		PERFORM pg_stat_clear_snapshot();	-- read pg_stat_activity afresh
	END LOOP;
	RETURN coalesce(w, 'none');
END
$$;

-- cancels pid's query and returns how long the dblink session took to
-- stop after the request (at most 10 s)
CREATE FUNCTION pg_temp.cancel_and_wait(pid int) RETURNS interval LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
BEGIN
	t0 := clock_timestamp();
	PERFORM pg_cancel_backend(pid);
	WHILE dblink_is_busy('victim') = 1 AND clock_timestamp() - t0 < interval '10 s' LOOP
		PERFORM pg_sleep(0.005);
	END LOOP;
	RETURN clock_timestamp() - t0;
END
$$;

-- waits (at most 5 s) until the worker has logged a cancel for pid
CREATE FUNCTION pg_temp.wait_for_cancels(pid int, before bigint) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	WHILE pg_temp.worker_cancels(pid) <= before AND clock_timestamp() - t0 < interval '5 s' LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN pg_temp.worker_cancels(pid) > before;
END
$$;

-- waits (at most 5 s) until the worker has logged a cancel of a request
-- of a backend other than pid (a parallel worker of pid's query): a queued
-- request dropped, or a running one stopped (the worker may have merged
-- all of them into the group it runs, leaving none queued)
CREATE FUNCTION pg_temp.wait_for_drops(pid int, before bigint) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	WHILE pg_temp.worker_cancels(pid, true) <= before AND clock_timestamp() - t0 < interval '5 s' LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN pg_temp.worker_cancels(pid, true) > before;
END
$$;

SELECT dblink_connect('victim', format('host=%s port=%s dbname=%s user=%s',
	split_part(current_setting('unix_socket_directories'), ',', 1),
	current_setting('port'), current_database(), current_user)) AS connected;
SELECT pid AS victim_pid FROM dblink('victim', 'SELECT pg_backend_pid()') AS t(pid int) \gset
SELECT dblink_exec('victim', 'LOAD ''pg_infer''') AS loaded;
SELECT * FROM dblink('victim', $$EXPLAIN (COSTS OFF)
	SELECT count(l) FROM (SELECT infer.classify('ppocr_cls', data) AS l
	  FROM cancel_img, generate_series(1, 50000) OFFSET 0) AS s$$) AS t(plan text);
SELECT pg_temp.worker_cancels(:victim_pid) AS cancels_before \gset

-- a million classifications (minutes of work): cancelled while waiting
SELECT dblink_send_query('victim', $$SELECT count(l) FROM (SELECT infer.classify('ppocr_cls', data) AS l
	FROM cancel_img, generate_series(1, 50000) OFFSET 0) AS s$$) AS sent;
SELECT pg_temp.wait_for_batches(:victim_pid) AS waiting_on;
-- let it get into its stride: full batches, several in flight
SELECT pg_sleep(1);
SELECT pg_temp.cancel_and_wait(:victim_pid) < interval '1 s' AS stopped_within_1s;
SELECT * FROM dblink_get_result('victim', false) AS t(n bigint);
SELECT dblink_error_message('victim') LIKE '%canceling statement due to user request%' AS canceled;
-- (dblink wants one more call to end the query)
SELECT * FROM dblink_get_result('victim') AS t(n bigint);
-- the worker was told, and dropped the batches it had queued (with four
-- in flight and a worker that runs one at a time, some were queued)
SELECT pg_temp.wait_for_cancels(:victim_pid, :cancels_before) AS worker_got_cancel,
	   pg_temp.worker_drops(:victim_pid) > 0 AS worker_dropped_queued;
-- the session goes on, with its own answers only
SELECT * FROM dblink('victim', $$SELECT string_agg(infer.classify('ppocr_cls', data), ',' ORDER BY id)
	FROM cancel_img WHERE id <= 6$$) AS t(labels text);

-- a parallel query: only its parallel worker sends requests (the leader
-- does not take part); cancelling the leader stops the parallel worker,
-- which cancels its requests on its way out
SELECT dblink_exec('victim', 'SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
	SET min_parallel_table_scan_size = 0; SET parallel_leader_participation = off') AS set;
SELECT * FROM dblink('victim', $$EXPLAIN (COSTS OFF)
	SELECT count(l) FROM (SELECT infer.classify('ppocr_cls', data) AS l
	  FROM cancel_img, generate_series(1, 50000)) AS s$$) AS t(plan text);
SELECT pg_temp.worker_cancels(:victim_pid, true) AS others_before \gset
SELECT dblink_send_query('victim', $$SELECT count(l) FROM (SELECT infer.classify('ppocr_cls', data) AS l
	FROM cancel_img, generate_series(1, 50000)) AS s$$) AS sent;
SELECT pg_temp.wait_for_batches(:victim_pid) AS waiting_on;
SELECT pg_sleep(1);
SELECT pg_temp.cancel_and_wait(:victim_pid) < interval '1 s' AS stopped_within_1s;
SELECT * FROM dblink_get_result('victim', false) AS t(n bigint);
SELECT * FROM dblink_get_result('victim') AS t(n bigint);
SELECT pg_temp.wait_for_drops(:victim_pid, :others_before) AS parallel_worker_cancelled;
SELECT * FROM dblink('victim', $$SELECT string_agg(infer.classify('ppocr_cls', data), ',' ORDER BY id)
	FROM cancel_img WHERE id <= 6$$) AS t(labels text);

-- statement_timeout, in this session: stopped within 1 s of the timeout
-- (1 s, so that requests are under way by then even in a sanitizer build)
SELECT pg_temp.worker_cancels(pg_backend_pid()) AS cancels_before \gset
SELECT clock_timestamp() AS t0 \gset
SET statement_timeout = '1s';
\set SHOW_CONTEXT never
SELECT count(l) FROM (SELECT infer.classify('ppocr_cls', data) AS l
	FROM cancel_img, generate_series(1, 50000) OFFSET 0) AS s;
\set SHOW_CONTEXT errors
RESET statement_timeout;
SELECT clock_timestamp() - :'t0'::timestamptz < interval '2 s' AS stopped_within_1s;
SELECT pg_temp.wait_for_cancels(pg_backend_pid(), :cancels_before) AS worker_got_cancel;
SELECT string_agg(infer.classify('ppocr_cls', data), ',' ORDER BY id) AS labels
  FROM cancel_img WHERE id <= 6;

-- a cursor FETCHed inside a savepoint, stopped by its statement_timeout:
-- ROLLBACK TO fails the cursor (it cannot run again) but keeps its memory
-- until the transaction ends; its batches in flight are cancelled at the
-- rollback all the same, and the pool counts none of them from then on
SELECT pg_temp.worker_cancels(pg_backend_pid()) AS cancels_before \gset
BEGIN;
DECLARE c CURSOR FOR SELECT infer.classify('ppocr_cls', data) AS l
	FROM cancel_img, generate_series(1, 50000);
SAVEPOINT s1;
SET LOCAL statement_timeout = '1s';
\set SHOW_CONTEXT never
FETCH ALL FROM c \g /dev/null
\set SHOW_CONTEXT errors
ROLLBACK TO s1;
SELECT inflight_requests, inflight_rows FROM infer.workers WHERE name = 'regress';
SELECT pg_temp.wait_for_cancels(pg_backend_pid(), :cancels_before) AS worker_got_cancels;
FETCH 1 FROM c;
ROLLBACK;
SELECT string_agg(infer.classify('ppocr_cls', data), ',' ORDER BY id) AS labels
  FROM cancel_img WHERE id <= 6;

SELECT dblink_disconnect('victim');
DROP TABLE cancel_img;
SELECT infer.drop_worker('regress');
