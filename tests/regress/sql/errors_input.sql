-- errors_input: images the worker must reject (every file of the shared
-- bad/ folder), as an ERROR with the worker's SQLSTATE, or with
-- infer.on_error = null as NULL and a WARNING; the worker then still
-- answers good images.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

CREATE TEMP TABLE bad (name text NOT NULL, data bytea NOT NULL);
INSERT INTO bad
SELECT f, pg_read_binary_file(current_setting('regress.data_dir') || '/bad/' || f)
  FROM pg_ls_dir(current_setting('regress.data_dir') || '/bad') AS f
 WHERE f <> 'manifest.tsv';
INSERT INTO bad VALUES ('(empty bytea)', '');
SELECT name, length(data) FROM bad ORDER BY name;

-- Runs q; prints the SQLSTATE and message of its error.
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text; msg text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	RETURN st || ': ' || msg;
END
$$;

-- every bad file is an error, whichever function reads it
SELECT name,
	   pg_temp.try(format('SELECT infer.ocr(%L)', data)) AS ocr,
	   pg_temp.try(format('SELECT infer.classify(''ppocr_cls'', %L)', data)) AS classify
  FROM bad ORDER BY name;
SELECT name,
	   pg_temp.try(format('SELECT infer.detect_text(%L)', data)) AS detect_text,
	   pg_temp.try(format('SELECT infer.predict(''ppocr_cls'', %L)', data)) AS predict
  FROM bad ORDER BY name;

-- the whole error as psql shows it: message, detail, hint (the context
-- names the worker's endpoint, which varies)
\set SHOW_CONTEXT never
SELECT infer.ocr(data) FROM bad WHERE name = 'text_file.png';
:sqlstate
SELECT infer.ocr(data) FROM bad WHERE name = 'huge_dimensions.png';
:sqlstate

-- a row's error names its input row (the scan's row number, from 1) in
-- its context: in batches of 1, 2 and 1 rows (the ramp-up), and of 1
CREATE TEMP TABLE mix (n int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO mix
SELECT n, CASE WHEN n = 3 THEN (SELECT data FROM bad WHERE name = 'text_file.png')
			   ELSE pg_read_binary_file(current_setting('regress.test_data_dir') ||
										'/line_upright.png') END
  FROM generate_series(1, 4) AS n;
CREATE FUNCTION pg_temp.row_of_error(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text; ctx text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, ctx = PG_EXCEPTION_CONTEXT;
	RETURN st || ', ' || coalesce(substring(ctx FROM 'input row [0-9]+'), 'no row');
END
$$;
SELECT pg_temp.row_of_error($$SELECT n, infer.classify('ppocr_cls', data)
								FROM (SELECT * FROM mix ORDER BY n) AS s$$) AS ramp_up;
SET infer.batch_size = 1;
SELECT pg_temp.row_of_error($$SELECT n, infer.classify('ppocr_cls', data)
								FROM (SELECT * FROM mix ORDER BY n) AS s$$) AS batches_of_one;
RESET infer.batch_size;

-- infer.max_pixels goes with the request: a smaller limit rejects a
-- normal image
SET infer.max_pixels = 1000;
SELECT infer.classify('ppocr_cls',
	pg_read_binary_file(current_setting('regress.data_dir') || '/p05_street_sign.jpg'));
:sqlstate
RESET infer.max_pixels;

-- infer.on_error = null: NULL and a WARNING per bad row; the good row in
-- the same statement gets its answer
SET infer.on_error = 'null';
\set VERBOSITY terse
SELECT name, infer.classify('ppocr_cls', data) AS label
  FROM (SELECT name, data FROM bad
		UNION ALL
		SELECT 'line_upright.png',
			   pg_read_binary_file(current_setting('regress.test_data_dir') ||
								   '/line_upright.png')) AS t
 ORDER BY name;
SELECT name, infer.ocr(data) IS NULL AS ocr_null,
	   infer.detect_text(data) IS NULL AS detect_null,
	   infer.predict('ppocr_cls', data) IS NULL AS predict_null
  FROM bad ORDER BY name;
\set VERBOSITY default
RESET infer.on_error;

-- and the worker still reads good images
SELECT position('northbound' IN lower(infer.ocr(pg_read_binary_file(
		current_setting('regress.data_dir') || '/p10_platform_sign.jpg')))) > 0
	AS still_works;

SELECT infer.drop_worker('regress');
