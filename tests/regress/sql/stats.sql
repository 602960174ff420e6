-- stats: infer.stats counts per model and worker (calls, rows, batches,
-- bytes, times, errors) and infer.stats_reset() empties it; infer.progress
-- shows this backend's running InferBatch scan (read from inside the
-- query, row by row); infer.models says where a model is resident, which
-- infer.load_model and infer.unload_model change; only infer_admin may
-- reset, load or unload.  Needs pg_infer in shared_preload_libraries
-- (tools/testenv.sh sets it).  A second session's view of infer.progress
-- is in tests/integration/test_stats.sh.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
\set SHOW_CONTEXT never
SELECT infer.add_worker('stats_w', current_setting('regress.worker2_endpoint'));

-- 20 real images: odd ids upright, even ids upside down
CREATE TEMP TABLE img (id int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO img
SELECT i, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' ||
		CASE WHEN i % 2 = 1 THEN 'line_upright.png' ELSE 'line_rot180.png' END)
  FROM generate_series(1, 20) AS i;
ANALYZE img;
SELECT sum(length(data)) AS image_bytes FROM img \gset

SELECT infer.stats_reset();
SELECT count(*) AS entries FROM infer.stats;
SELECT stats_reset > now() - interval '1 minute' AS reset_now FROM infer.stats_info();

-- one batched query of 20 rows in batches of at most 4: 1, 2, 4, 4, 4, 4, 1
SET infer.batch_size = 4;
SELECT count(*) FILTER (WHERE label = CASE WHEN id % 2 = 1 THEN '0' ELSE '180' END) AS right_labels
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label FROM img) s;
SELECT model, worker, calls, rows, batches, round(mean_batch_size::numeric, 3) AS mean_batch,
	   errors, bytes_sent > :image_bytes AS sent_images,
	   bytes_sent < :image_bytes + 7 * 1024 AS sent_little_more,
	   bytes_received > 0 AS received, queue_ms >= 0 AS queue_ok,
	   compute_ms > 0 AS computed, wall_ms >= compute_ms AS wall_ok,
	   rows_per_second = rows / (compute_ms / 1000) AS rate_over_compute
  FROM infer.stats;

-- one row at a time (no InferBatch): each call is one request of one row
SET infer.enable_batching = off;
SELECT id, infer.classify('ppocr_cls', data) FROM img WHERE id <= 3 ORDER BY id;
RESET infer.enable_batching;
SELECT model, worker, calls, rows, batches, errors FROM infer.stats;

-- a bad row among good ones: one error, every row counted
SET infer.on_error = 'null';
SELECT count(label) AS answered, count(*) - count(label) AS failed
  FROM (SELECT infer.classify('ppocr_cls', data) AS label
		  FROM (SELECT data FROM img WHERE id <= 3
				UNION ALL SELECT '\x00010203'::bytea) s) t;
RESET infer.on_error;
SELECT model, calls, rows, batches, errors FROM infer.stats;

-- two models over the same input in one request: one label, each model once
SELECT count(*) FROM (SELECT infer.classify('ppocr_cls', data) AS c,
							 infer.predict('ppocr_cls', data) AS p
						FROM img WHERE id <= 2) s WHERE c IS NOT NULL AND p IS NOT NULL;
SELECT model, calls, rows, batches FROM infer.stats ORDER BY model;

-- infer.stats_reset() empties it
SELECT infer.stats_reset();
SELECT count(*) AS entries FROM infer.stats;

-- infer.progress from inside a running query: at each row returned, the
-- rows answered and sent so far, the batches still in flight, the
-- planner's estimate and the model (batches of 1, 2, 4, 4, 4, 4, 1 rows;
-- the node reads ahead at most as many rows as it has returned).  A
-- function of the row, so that each row reads the view again.
CREATE FUNCTION pg_temp.progress_at(id int) RETURNS SETOF infer.progress
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN QUERY SELECT * FROM infer.progress WHERE pid = pg_backend_pid();
END $$;
SET infer.max_inflight = 2;
SELECT id, label, (pr).rows_done, (pr).rows_sent, (pr).batches_in_flight,
	   (pr).rows_estimate, (pr).scans, (pr).models,
	   (pr).rows_per_second > 0 AS rate, (pr).leader_pid,
	   (pr).query ~ 'progress_at' AS query
  FROM (SELECT id, infer.classify('ppocr_cls', data) AS label,
			   (SELECT p FROM pg_temp.progress_at(img.id) p) AS pr
		  FROM img) s;
RESET infer.max_inflight;
RESET infer.batch_size;
-- the scan is over: nothing left in infer.progress
SELECT count(*) AS running FROM infer.progress WHERE pid = pg_backend_pid();
-- an error in the middle of a scan clears it too
SELECT id, infer.classify('ppocr_cls', data) FROM img
 WHERE id <= 3 OR id = 1 / (id - 7);
:sqlstate
SELECT count(*) AS running FROM infer.progress WHERE pid = pg_backend_pid();
-- a scan rescanned while another runs (a correlated subquery): each
-- rescan's models are named once, not once more per rescan
CREATE FUNCTION pg_temp.progress_models() RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT models || ' (' || scans || ' scans)' FROM infer.progress
	 WHERE pid = pg_backend_pid()
$$;
SELECT id, infer.classify('ppocr_cls', data) IS NOT NULL AS outer_label,
	   (SELECT infer.classify('ppocr_cls', i2.data) FROM img i2
		 WHERE i2.id = img.id) IS NOT NULL AS inner_label,
	   pg_temp.progress_models() AS models
  FROM img WHERE id <= 4;

-- infer.models: where the model is resident, and its measured timings
SELECT infer.unload_model('ppocr_cls', 'stats_w');
SELECT name, resident_on FROM infer.models WHERE name = 'ppocr_cls';
SELECT infer.load_model('ppocr_cls', 'stats_w');
SELECT name, resident_on, timings ? 'stats_w' AS timed,
	   (timings->'stats_w'->>'load_ms')::float8 > 0 AS load_timed,
	   jsonb_typeof(timings->'stats_w'->'batch_ms') AS batch_ms
  FROM infer.models WHERE name = 'ppocr_cls';
SELECT infer.unload_model('ppocr_cls', 'stats_w');
SELECT name, resident_on FROM infer.models WHERE name = 'ppocr_cls';
-- unloading what is not resident is fine; unknown names are errors
SELECT infer.unload_model('ppocr_cls', 'stats_w');
SELECT infer.unload_model('no_such_model', 'stats_w');
:sqlstate
SELECT infer.unload_model('ppocr_cls', 'no_such_worker');
:sqlstate

-- only infer_admin may reset, load or unload; infer_user reads
CREATE ROLE regress_stats_user IN ROLE infer_user;
CREATE ROLE regress_stats_admin IN ROLE infer_admin;
SET ROLE regress_stats_user;
SELECT count(*) >= 0 AS reads_stats FROM infer.stats;
SELECT count(*) >= 0 AS reads_progress FROM infer.progress;
SELECT infer.stats_reset();
:sqlstate
SELECT infer.unload_model('ppocr_cls', 'stats_w');
:sqlstate
SELECT infer.load_model('ppocr_cls', 'stats_w');
:sqlstate
RESET ROLE;
SET ROLE regress_stats_admin;
SELECT infer.stats_reset();
SELECT infer.load_model('ppocr_cls', 'stats_w');
SELECT resident_on FROM infer.models WHERE name = 'ppocr_cls';
-- leave the worker as the other tests expect it: nothing resident
SELECT infer.unload_model('ppocr_cls', 'stats_w');
RESET ROLE;
DROP ROLE regress_stats_user, regress_stats_admin;

SELECT infer.drop_worker('stats_w');
