-- pool_monitor: the pool monitor background worker dies (terminated, as
-- by an operator or an error) and the postmaster starts it again; the
-- new monitor subscribes to the workers again and their state comes back
-- from their heartbeats, while queries keep working throughout.
-- Needs pg_infer in shared_preload_libraries (tools/testenv.sh sets it).
\set SHOW_CONTEXT never
SELECT infer.add_worker('mon_a', current_setting('regress.worker2_endpoint'));

-- waits (at most 10 s) until mon_a is up with a state newer than seq
CREATE FUNCTION pg_temp.wait_fresh(seq bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..200 LOOP
		IF (SELECT status = 'up' AND state_seq > seq
			  FROM infer.workers WHERE name = 'mon_a') THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
-- waits (at most 10 s) for a monitor process other than old_pid
CREATE FUNCTION pg_temp.wait_monitor(old_pid int) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..200 LOOP
		IF EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE backend_type = 'pg_infer pool monitor'
					  AND pid <> old_pid) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
		-- pg_stat_activity is read once per transaction otherwise
		PERFORM pg_stat_clear_snapshot();
	END LOOP;
	RETURN false;
END $$;

SELECT pg_temp.wait_fresh(0) AS up_before;
SELECT count(*) AS monitors FROM pg_stat_activity
 WHERE backend_type = 'pg_infer pool monitor';

SELECT pid AS old_pid FROM pg_stat_activity
 WHERE backend_type = 'pg_infer pool monitor' \gset
SELECT state_seq AS old_seq FROM infer.workers WHERE name = 'mon_a' \gset
SELECT pg_terminate_backend(:old_pid) AS terminated;

-- a new monitor comes, and the worker's state with it
SELECT pg_temp.wait_monitor(:old_pid) AS monitor_back;
-- only a monitor folds states in: newer ones after it came back are its
SELECT state_seq AS mid_seq FROM infer.workers WHERE name = 'mon_a' \gset
SELECT pg_temp.wait_fresh(:mid_seq) AS state_back;
SELECT count(*) AS monitors FROM pg_stat_activity
 WHERE backend_type = 'pg_infer pool monitor';
SELECT name, status, heartbeat_age < interval '1 second' AS fresh
  FROM infer.workers WHERE name = 'mon_a';

-- and work is placed on the worker as before
CREATE TEMP TABLE img AS
SELECT i, pg_read_binary_file(current_setting('regress.data_dir') || '/p02_receipt_bakery.png') AS data
  FROM generate_series(1, 4) i;
SELECT i, infer.classify('ppocr_cls', data) FROM img ORDER BY i;
SELECT name, inflight_requests, inflight_rows FROM infer.workers WHERE name = 'mon_a';

SELECT infer.drop_worker('mon_a');
