-- pool_input_cache: the same images queried twice.  The first time every
-- image is sent and the worker caches those named by their SHA-256
-- (infer.input_cache_min_bytes and more); once its state (the Bloom filter
-- of its input cache) has reached the pool, the second time those images
-- are not sent, the worker answers from its cache (EXPLAIN ANALYZE: Bytes
-- Sent, Rows From Worker Cache), and the answers are those computed with
-- the cache off.  Then the worker is killed and started again, empty,
-- while its old filter may still be in shared memory: every row is still
-- answered right (a row left out that it lacks is asked for, MSG_NEED_INPUT,
-- and sent again), none comes from its cache.  Last, with a second worker
-- and a slow link, cost placement sends the images to the worker that
-- holds them.
-- Uses worker 4 of tests/regress/run.sh alone (runs before pool_resend,
-- which kills it again; the pidfile is kept up to date).
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
-- the batch counts below are the ramp's (1, 2, 4, ...): an infer.timeout
-- far above any batch's time keeps batch_rows_cap (which sizes a slow
-- model's batches to a quarter of it) out of them
SET infer.timeout = '1h';
SELECT infer.add_worker('ic', current_setting('regress.worker4_endpoint'));

CREATE FUNCTION pg_temp.wait_up() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..100 LOOP
		IF (SELECT status FROM infer.workers WHERE name = 'ic') = 'up' THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
SELECT pg_temp.wait_up() AS up;

-- waits until the pool has folded three more states of the worker (each
-- packed after the last query, so holding its cache) and 300 ms passed
CREATE FUNCTION pg_temp.wait_states() RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	s0 bigint := (SELECT state_seq FROM infer.workers WHERE name = 'ic');
BEGIN
	PERFORM pg_sleep(0.3);
	FOR i IN 1..100 LOOP
		IF (SELECT state_seq FROM infer.workers WHERE name = 'ic') >= s0 + 3 THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;

-- the input counters of EXPLAIN ANALYZE (timings left out)
CREATE FUNCTION pg_temp.input_counters(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line ~ '(Batches|Rows Sent|Bytes Sent|Rows From Worker Cache|Input Resends|Inference Workers):' THEN
			RETURN NEXT btrim(line);
		END IF;
	END LOOP;
END $$;

-- two images above the 8 kB threshold (hashed, cacheable), two below
-- (always sent): 48696 + 22537 bytes, and 5425 + 3717 bytes
CREATE TEMP TABLE img (n int NOT NULL, name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT i, f, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f)
  FROM unnest(ARRAY['p05_street_sign.jpg', 'p10_platform_sign.jpg',
					'p17_session_notice.png', 'p19_footer_small.png'])
	   WITH ORDINALITY AS t(f, i);
SELECT n, name, length(data) FROM img ORDER BY n;

SET infer.batch_size = 2;
-- on by default; tests/regress/run.sh turns it off for the other tests
SELECT boot_val, unit FROM pg_settings WHERE name = 'infer.input_cache_min_bytes';
SHOW infer.input_cache_min_bytes;
SET infer.input_cache_min_bytes = -2;
:sqlstate

-- the answers with the cache off: nothing hashed, nothing cached
SET infer.input_cache_min_bytes = -1;
CREATE TEMP TABLE ref AS
SELECT n, infer.predict('ppocr_cls', data) AS v FROM img;
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img');

-- first time with the cache on: every byte goes, the two large ones are cached
SET infer.input_cache_min_bytes = '8kB';
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img');
SELECT pg_temp.wait_states() AS states_folded;

-- second time: the two large images are not sent
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img');
CREATE TEMP TABLE got AS
SELECT n, infer.predict('ppocr_cls', data) AS v FROM img;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE got.v IS DISTINCT FROM ref.v) AS differ
  FROM got JOIN ref USING (n);

-- per-row calls (no InferBatch) leave out the cached images too: the same answers
SET infer.enable_batching = off;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE infer.predict('ppocr_cls', img.data) IS DISTINCT FROM ref.v) AS differ
  FROM img JOIN ref USING (n);
RESET infer.enable_batching;

-- the cache's scope is the cluster, the database and the role
-- (RunFragment.input_scope): another role sending the same images finds
-- none of them held (Rows From Worker Cache: 0, every byte sent), and
-- once its own sends have reached the pool, its own; the answers are the
-- reference's, and the first role still finds its own
CREATE ROLE regress_ic_other IN ROLE infer_user;
GRANT SELECT ON img, ref TO regress_ic_other;
SET ROLE regress_ic_other;
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img');
SELECT pg_temp.wait_states() AS states_folded;
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img');
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE infer.predict('ppocr_cls', img.data) IS DISTINCT FROM ref.v) AS differ
  FROM img JOIN ref USING (n);
RESET ROLE;
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img')
 WHERE input_counters ~ 'Rows From Worker Cache';
DROP OWNED BY regress_ic_other;
DROP ROLE regress_ic_other;

-- the worker restarted with an empty cache; its old filter may still be
-- in shared memory when the query starts
DO $$
BEGIN
	EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
				   format('p=$(cat %s); kill -KILL $p; for i in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.02; done; nohup %s >/dev/null 2>&1 & echo $! > %s',
						  current_setting('regress.worker4_pidfile'),
						  current_setting('regress.worker4_start'),
						  current_setting('regress.worker4_pidfile')));
END $$;
CREATE TEMP TABLE counters AS
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img') AS line;
SELECT line FROM counters WHERE line !~ '(Input Resends|Bytes Sent)';
-- every byte went at least once (a batch sent again after MSG_NEED_INPUT
-- sends its small rows twice), one round trip at most per batch with a
-- large image left out
SELECT substring(line FROM '[0-9]+')::int >= 80375 AS every_byte_sent
  FROM counters WHERE line ~ 'Bytes Sent';
SELECT substring(line FROM '[0-9]+')::int <= 2 AS resends_at_most_one_per_batch
  FROM counters WHERE line ~ 'Input Resends';
DROP TABLE got;
CREATE TEMP TABLE got AS
SELECT n, infer.predict('ppocr_cls', data) AS v FROM img;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE got.v IS DISTINCT FROM ref.v) AS differ
  FROM got JOIN ref USING (n);

-- placement: with a second worker that has the model resident too, and a
-- slow link (1 MB/s: 22 to 49 ms per large image), cost placement sends
-- the large images to the worker that holds them (transfer 0 there),
-- every batch of three rounds over them.  One batch in flight at a
-- time: with more, a batch placed while ic still runs the one before
-- weighs ic's wait against the transfer, and where a run takes longer
-- than a large image's 22 to 49 ms (under AddressSanitizer) goes to
-- ic_other, as the cost model means it to
SELECT infer.add_worker('ic_other', current_setting('regress.worker_endpoint'));
SELECT infer.load_model('ppocr_cls', 'ic_other');
SELECT infer.load_model('ppocr_cls', 'ic');
SELECT pg_temp.wait_states() AS states_folded;
SET infer.bandwidth = 1;
SET infer.placement = cost;
SET infer.max_inflight = 1;
SELECT * FROM pg_temp.input_counters(
	'SELECT n, infer.predict(''ppocr_cls'', data) FROM img, generate_series(1, 3) WHERE n <= 2')
 WHERE input_counters ~ '(Inference Workers|Rows From Worker Cache)';
-- per-row calls (no InferBatch) too: placement sees their input's digest,
-- so each of the six goes to ic (requests_sent per worker, before and
-- after), and the answers are the reference's
CREATE TEMP TABLE sent0 AS
SELECT name, requests_sent FROM infer.workers WHERE name IN ('ic', 'ic_other');
SET infer.enable_batching = off;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE infer.predict('ppocr_cls', img.data) IS DISTINCT FROM ref.v) AS differ
  FROM img JOIN ref USING (n), generate_series(1, 3)
 WHERE n <= 2;
RESET infer.enable_batching;
SELECT w.name, w.requests_sent - s.requests_sent AS sent
  FROM infer.workers w JOIN sent0 s USING (name) ORDER BY w.name;
RESET infer.bandwidth;
RESET infer.placement;
RESET infer.max_inflight;
SELECT infer.drop_worker('ic_other');

RESET infer.batch_size;
RESET infer.input_cache_min_bytes;
SELECT infer.drop_worker('ic');
