-- errors_timeout: a call that outlives statement_timeout or infer.timeout
-- is cancelled (the worker is told with MSG_CANCEL), and its late reply
-- never answers a later call.  Uses p08_doc_on_desk.jpg (1600x1000, many
-- lines), whose OCR takes far more than 100 ms on a CPU worker.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

CREATE TEMP TABLE img (name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT f, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f)
  FROM unnest(ARRAY['p08_doc_on_desk.jpg']) AS f;
INSERT INTO img
SELECT f, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f)
  FROM unnest(ARRAY['line_upright.png', 'line_rot180.png']) AS f;

-- statement_timeout ends the wait
SET statement_timeout = 100;
SELECT infer.ocr(data) FROM img WHERE name = 'p08_doc_on_desk.jpg';
:sqlstate
RESET statement_timeout;

-- the next calls get their own answers, not the late OCR text
SELECT name, infer.classify('ppocr_cls', data) AS label
  FROM img WHERE name LIKE 'line%' ORDER BY name;

-- infer.timeout: the worker is connected but does not answer in time.
-- The message names the worker's endpoint, shown as <endpoint>.
CREATE FUNCTION pg_temp.try(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	st text; msg text; det text; hint text;
BEGIN
	EXECUTE q;
	RAISE NOTICE 'no error';
EXCEPTION WHEN OTHERS OR query_canceled THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		det = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RAISE NOTICE E'SQLSTATE %: %\nDETAIL: %\nHINT: %', st,
		replace(msg, current_setting('regress.worker_endpoint'), '<endpoint>'),
		det, hint;
END
$$;
SET infer.timeout = 100;
SELECT pg_temp.try($$SELECT infer.ocr(data) FROM img
					  WHERE name = 'p08_doc_on_desk.jpg'$$);
-- infer.on_error = null does not turn a timeout into NULL
SET infer.on_error = 'null';
SELECT pg_temp.try($$SELECT infer.detect_text(data) FROM img
					  WHERE name = 'p08_doc_on_desk.jpg'$$);
RESET infer.on_error;
RESET infer.timeout;

-- infer.timeout bounds a worker's silence, not a batch: OCR of 7 pages
-- under an infer.timeout of 2.5 times one page's OCR (the ramp of 1, 2 and
-- 3 rows would send 3 pages, 3 times that, in one request) reads them all
-- in batches the last answer's time keeps small
DO $$
DECLARE
	t0 timestamptz;
	one_ms double precision := 'Infinity';
	n int;
	m int;
BEGIN
	-- the quicker of two runs (the first may wait for the end of the
	-- cancelled runs above: a cancel drops a running request's answer)
	FOR i IN 1 .. 2 LOOP
		t0 := clock_timestamp();
		PERFORM infer.ocr(data) FROM img WHERE name = 'p08_doc_on_desk.jpg';
		one_ms := least(one_ms, extract(epoch FROM clock_timestamp() - t0) * 1000);
	END LOOP;
	PERFORM set_config('infer.max_inflight', '1', true);
	PERFORM set_config('infer.timeout', ceil(2.5 * one_ms)::text, true);
	SELECT count(t) INTO n
	  FROM (SELECT infer.ocr(data) AS t FROM img, generate_series(1, 7)
			 WHERE name = 'p08_doc_on_desk.jpg') AS s;
	RAISE NOTICE 'pages read: %', n;
	-- the same with a fast call of another input in the node, last: the
	-- slowest call's time sizes the batches
	SELECT count(t) + count(l) INTO n
	  FROM (SELECT infer.ocr(d.data) AS t, infer.classify('ppocr_cls', c.data) AS l
			  FROM img d, img c, generate_series(1, 7)
			 WHERE d.name = 'p08_doc_on_desk.jpg' AND c.name = 'line_upright.png') AS s;
	RAISE NOTICE 'pages and lines read: %', n;
	-- with infer.on_error = null, a row refused at once (not an image)
	-- after the first page: its compute of next to nothing does not size
	-- the next batch (which once took the six pages left in one request,
	-- past infer.timeout); one WARNING, seven pages read of eight rows
	PERFORM set_config('infer.on_error', 'null', true);
	CREATE TEMP TABLE pages_bad AS
	SELECT 1 AS k, data FROM img WHERE name = 'p08_doc_on_desk.jpg';
	INSERT INTO pages_bad VALUES (2, '\xdeadbeef');
	INSERT INTO pages_bad
	SELECT 2 + g, data FROM img, generate_series(1, 6) AS g
	 WHERE name = 'p08_doc_on_desk.jpg';
	SELECT count(t), count(*) INTO n, m
	  FROM (SELECT infer.ocr(data) AS t FROM pages_bad) AS s;
	RAISE NOTICE 'pages read: % of % rows', n, m;
	DROP TABLE pages_bad;
END
$$;

SELECT name, infer.classify('ppocr_cls', data) AS label
  FROM img WHERE name LIKE 'line%' ORDER BY name;
SELECT position('imagemagick' IN lower(infer.ocr(data))) > 0 AS found
  FROM img WHERE name = 'p08_doc_on_desk.jpg';

SELECT infer.drop_worker('regress');
