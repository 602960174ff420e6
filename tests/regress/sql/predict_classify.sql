-- predict_classify: infer.predict (raw first output) and infer.classify
-- (top label) with the PP-OCR text direction classifier, ppocr_cls.
-- tests/regress/data holds one line of text cropped from
-- p12_fridge_label.png, upright (line_upright.png) and turned by 180
-- degrees (line_rot180.png).
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

CREATE TEMP TABLE img (name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT f, pg_read_binary_file(current_setting('regress.test_data_dir') || '/' || f)
  FROM unnest(ARRAY['line_upright.png', 'line_rot180.png']) AS f;
INSERT INTO img
SELECT f, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f)
  FROM unnest(ARRAY['p10_platform_sign.jpg', 'p12_fridge_label.png']) AS f;

-- two probabilities (labels 0 and 180) that sum to 1; the larger one is
-- the direction
SELECT name,
	   array_length(p, 1) AS n,
	   abs(p[1] + p[2] - 1) < 1e-4 AS sums_to_1,
	   CASE WHEN p[1] > 0.9 THEN '0' WHEN p[2] > 0.9 THEN '180' END AS confident
  FROM (SELECT name, infer.predict('ppocr_cls', data) AS p FROM img
		 WHERE name LIKE 'line%') AS t
 ORDER BY name;

-- classify gives the label of the top class
SELECT name, infer.classify('ppocr_cls', data) AS label FROM img ORDER BY name;

-- a model registered with other labels gives those
SELECT infer.create_model('direction', 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192,
	mean => '{0.5}', std => '{0.5}', labels => '{upright,upside_down}');
SELECT name, infer.classify('direction', data) AS label
  FROM img WHERE name LIKE 'line%' ORDER BY name;

-- predict works with any task; the same model file gives the same numbers
SELECT infer.predict('direction', data) = infer.predict('ppocr_cls', data) AS same
  FROM img WHERE name = 'line_upright.png';

-- compute_precision concerns GPU workers: this CPU worker computes an fp16
-- or bf16 model in FP32, so the file registered at fp16 gives the same
-- numbers (from the one resident model)
SELECT infer.create_model('direction16', 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192,
	mean => '{0.5}', std => '{0.5}', labels => '{0,180}', compute_precision => 'fp16');
SELECT compute_precision FROM infer.model_registry WHERE name = 'direction16';
SELECT infer.predict('direction16', data) = infer.predict('ppocr_cls', data) AS same
  FROM img WHERE name = 'line_upright.png';
SELECT infer.classify('direction16', data) AS label FROM img WHERE name = 'line_rot180.png';
SELECT infer.drop_model('direction16');

-- a classify model registered without labels: the error names the model
-- and says how to give them
SELECT infer.create_model('nolabels', 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192);
DO $$
DECLARE
	st text; msg text;
BEGIN
	PERFORM infer.classify('nolabels', data) FROM img WHERE name = 'line_upright.png';
	RAISE NOTICE 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	RAISE NOTICE 'SQLSTATE %: %', st,
		substring(msg FROM 'classify model .*$');
END
$$;
SELECT infer.drop_model('nolabels');

-- a model file the worker does not have: the worker's error (its text
-- holds the worker's model directory, so only its parts are checked),
-- with the model and the worker in the context; infer.on_error = null
-- does not hide it, as the request as a whole failed
SELECT infer.create_model('missing', 'no_such_file.onnx', 'classify',
	labels => '{a,b}');
CREATE FUNCTION pg_temp.try(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	st text; msg text; ctx text;
BEGIN
	EXECUTE q;
	RAISE NOTICE 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		ctx = PG_EXCEPTION_CONTEXT;
	RAISE NOTICE 'SQLSTATE %, names the file: %, context: %', st,
		msg LIKE '%"no_such_file.onnx"%',
		substring(ctx FROM 'infer\.[a-z_]+: model "[a-z]+" on inference worker "regress" at tcp://127\.0\.0\.1:');
END
$$;
SELECT pg_temp.try($$SELECT infer.classify('missing', data) FROM img
					  WHERE name = 'line_upright.png'$$);
SET infer.on_error = 'null';
SELECT pg_temp.try($$SELECT infer.predict('missing', data) FROM img
					  WHERE name = 'line_upright.png'$$);
RESET infer.on_error;

SELECT infer.drop_model('direction');
SELECT infer.drop_model('missing');
SELECT infer.drop_worker('regress');
