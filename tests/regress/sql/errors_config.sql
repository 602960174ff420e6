-- errors_config: what the inference functions say when the configuration
-- is wrong: unknown or unsuitable model, no worker, unreachable worker,
-- and a statement timeout while waiting.  No worker needs to run.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'

-- STRICT: NULL in, NULL out, without asking anyone
SELECT infer.ocr(NULL) IS NULL AS ocr_null,
       infer.detect_text(NULL) IS NULL AS detect_null,
       infer.predict('ppocr_cls', NULL) IS NULL AS predict_null,
       infer.classify(NULL, '\x00') IS NULL AS classify_null;

-- unknown model
SELECT infer.classify('no_such_model', '\x00');
:sqlstate
SELECT infer.predict('no_such_model', '\x00');
:sqlstate
SET infer.ocr_detector = 'no_such_detector';
SELECT infer.ocr('\x00');
:sqlstate
SELECT infer.detect_text('\x00');
:sqlstate
RESET infer.ocr_detector;

-- a model registered for another task
SELECT infer.classify('ppocr_det', '\x00');
:sqlstate
SELECT infer.predict('ppocr_rec', '\x00');
:sqlstate
-- a text model: the hint names the text functions
SELECT infer.predict('minilm', '\x00');
:sqlstate
SET infer.ocr_recognizer = 'ppocr_cls';
SELECT infer.ocr('\x00');
:sqlstate
RESET infer.ocr_recognizer;

-- no worker registered
SELECT count(*) FROM infer.workers;
SELECT infer.ocr('\x00');
:sqlstate
SELECT infer.predict('ppocr_cls', '\x00');
:sqlstate

-- a worker nobody listens for: an error after infer.timeout, naming the
-- worker, its endpoint and the models; infer.on_error = null does not
-- turn it into NULL.  (infer.worker_timeout is raised so that neither
-- worker is held down before the end: round_robin would pass over it.)
SET infer.worker_timeout = '60s';
SELECT infer.add_worker('unreachable', 'tcp://127.0.0.1:1');
SET infer.timeout = 500;
SELECT infer.classify('ppocr_cls', '\x00');
:sqlstate
SET infer.on_error = 'null';
SELECT infer.ocr('\x00');
:sqlstate
RESET infer.on_error;

-- it waits infer.timeout, no less and not much more
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	PERFORM infer.detect_text('\x00');
EXCEPTION WHEN connection_failure THEN
	RAISE NOTICE 'connection_failure after 0.4 to 5 s: %',
		clock_timestamp() - t0 BETWEEN '0.4 s' AND '5 s';
END
$$;

-- round robin: successive calls go to successive workers (by name)
SET infer.placement = round_robin;
SELECT infer.add_worker('unreachable2', 'tcp://127.0.0.1:2');
SET infer.timeout = 100;
\set VERBOSITY terse
SELECT infer.classify('ppocr_cls', '\x00');
SELECT infer.classify('ppocr_cls', '\x00');
SELECT infer.classify('ppocr_cls', '\x00');
\set VERBOSITY default

-- statement_timeout ends the wait (query cancel does the same)
SET infer.timeout = 60000;
SET statement_timeout = 300;
SELECT infer.classify('ppocr_cls', '\x00');
:sqlstate
RESET statement_timeout;
RESET infer.timeout;

SELECT infer.drop_worker('unreachable');
SELECT infer.drop_worker('unreachable2');
RESET infer.worker_timeout;
