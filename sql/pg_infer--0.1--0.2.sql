-- pg_infer--0.1--0.2.sql: ALTER EXTENSION pg_infer UPDATE from 0.1 (tested
-- by tests/upgrade/test_upgrade.sh against a fresh install of 0.2).
-- New in 0.2: uploaded model files (infer.model_files, infer.upload_model,
-- infer.push_models), infer.unload_model, infer.load_model(model, worker)
-- in that argument order, infer.stats, infer.stats_reset,
-- infer.stats_info, infer.progress, a model's compute_precision
-- (infer.create_model, infer.model_registry), and infer.models' new
-- columns.  Each object is created as pg_infer--0.2.sql creates it.
\echo Use "ALTER EXTENSION pg_infer UPDATE TO '0.2'" to load this file. \quit

-- Schema infer must be a superuser's: CREATE EXTENSION 0.1 took
-- over one that existed already, and its owner could then drop, rename or fill
-- it, so that the SECURITY DEFINER functions below run that owner's
-- objects as the superuser who installed (docs/security.md).
DO $$
BEGIN
	IF NOT (SELECT r.rolsuper
			  FROM pg_catalog.pg_namespace n
			  JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
			 WHERE n.nspname = 'infer') THEN
		RAISE EXCEPTION 'schema "infer" is owned by role "%", which is not a superuser',
			(SELECT pg_catalog.pg_get_userbyid(n.nspowner)
			   FROM pg_catalog.pg_namespace n WHERE n.nspname = 'infer')
			USING ERRCODE = 'insufficient_privilege',
				DETAIL = 'pg_infer''s functions run as their owner, a superuser; the owner of their schema could replace what they call.',
				HINT = 'Make a superuser its owner (ALTER SCHEMA infer OWNER TO ...) after checking what it holds, then update again.';
	END IF;
END
$$;

-- Model files uploaded from the database (infer.upload_model): their bytes
-- and SHA-256, kept so that workers added later get them too.  A model
-- registered on such a file carries the digest to the workers, which check
-- the bytes they load against it (docs/security.md "Uploaded models").
CREATE TABLE infer.model_files (
	file		text PRIMARY KEY,
	sha256		bytea NOT NULL CHECK (length(sha256) = 32),
	data		bytea NOT NULL,
	created		timestamptz NOT NULL DEFAULT now()
);

-- ONNX weights hardly compress: store them out of line, uncompressed
ALTER TABLE infer.model_files ALTER COLUMN data SET STORAGE EXTERNAL;

SELECT pg_catalog.pg_extension_config_dump('infer.model_files', '');


-- math of MatMul, Gemm and Conv on a GPU (docs/gpu.md "Precision")
ALTER TABLE infer.model_registry ADD COLUMN compute_precision text NOT NULL
	DEFAULT 'fp32' CHECK (compute_precision IN ('fp32', 'tf32', 'fp16', 'bf16'));

-- one of the models CREATE EXTENSION registers, as it made it: left out of
-- pg_dump, as CREATE EXTENSION makes it again.  0.1 left every row under
-- these names out of pg_dump; a row under such a name with any setting
-- other than 0.1's CREATE EXTENSION gave it is the user's, and the bundled
-- model of that name counts as dropped, as does one that is missing.
ALTER TABLE infer.model_registry ADD COLUMN bundled boolean NOT NULL
	DEFAULT false;
UPDATE infer.model_registry m SET bundled = true
  FROM (VALUES
		('ppocr_det', 'ch_PP-OCRv4_det_infer.onnx', 'detect_text', 0, 0,
		 '{0.5,0.5,0.5}'::real[], '{0.5,0.5,0.5}'::real[], NULL::text[], NULL),
		('ppocr_cls', 'ch_ppocr_mobile_v2.0_cls_infer.onnx', 'classify', 48, 192,
		 '{0.5,0.5,0.5}', '{0.5,0.5,0.5}', '{0,180}', NULL),
		('ppocr_rec', 'ch_PP-OCRv4_rec_infer.onnx', 'recognize_text', 0, 0,
		 '{0.5,0.5,0.5}', '{0.5,0.5,0.5}', NULL, 'ppocr_keys_v1.txt'),
		('minilm', 'minilm/model.onnx', 'embed_text', 0, 0, NULL, NULL, NULL, NULL),
		('prompt_task', 'prompt_task/model.onnx', 'classify_text', 0, 0, NULL, NULL,
		 ARRAY['AIME-2024', 'AIME-2025', 'Chatbot Arena Elo',
			   'Chatbot Arena Elo (Code)', 'Chatbot Arena Elo (Vision)', 'GPQA',
			   'HLE', 'IFBench', 'LegalBench', 'LiveCodeBench', 'MMLU-Pro',
			   'MMMU', 'SWE-bench-Pro', 'SciCode', 'Tau2-bench'], NULL))
	   AS b (name, file, task, input_height, input_width, mean, std, labels,
			 labels_file)
 WHERE m.name = b.name AND m.file = b.file AND m.task = b.task
   AND m.input_height = b.input_height AND m.input_width = b.input_width
   AND m.mean IS NOT DISTINCT FROM b.mean AND m.std IS NOT DISTINCT FROM b.std
   AND m.labels IS NOT DISTINCT FROM b.labels
   AND m.labels_file IS NOT DISTINCT FROM b.labels_file
   AND m.color_order = 'RGB' AND m.resize_mode = 'stretch' AND m.version = '1'
   AND m.compute_precision = 'fp32';

-- The names of bundled models (infer.model_registry.bundled) that
-- infer.drop_model removed, so that a restore of pg_dump's output removes
-- them again from what CREATE EXTENSION makes.  No key: a data-only
-- restore into a database that already holds a name adds it again, which
-- changes nothing.
CREATE TABLE infer.dropped_bundled_models (
	name		text NOT NULL,
	dropped		timestamptz NOT NULL DEFAULT now()
);

-- pg_dump and restore (docs/dba.md "Backup and upgrade"): CREATE EXTENSION
-- registers the bundled models first, then the rows of the configuration
-- tables come back.  A model registered under a bundled model's name takes
-- that model's place, and a dropped bundled model is removed again, in
-- whichever order the two tables come back; pg_restore --jobs loads them
-- in two transactions at once, which the advisory lock (on the key of
-- this table's OID) serializes, so that their deletes cannot deadlock.
CREATE FUNCTION infer._replace_bundled_model()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM pg_advisory_xact_lock('infer.dropped_bundled_models'::regclass::oid::int8);
	DELETE FROM infer.model_registry m WHERE m.name = NEW.name AND m.bundled;
	RETURN NEW;
END
$$;

CREATE TRIGGER replace_bundled BEFORE INSERT ON infer.model_registry
	FOR EACH ROW WHEN (NOT NEW.bundled)
	EXECUTE FUNCTION infer._replace_bundled_model();
CREATE TRIGGER drop_bundled AFTER INSERT ON infer.dropped_bundled_models
	FOR EACH ROW EXECUTE FUNCTION infer._replace_bundled_model();

INSERT INTO infer.dropped_bundled_models (name)
SELECT b FROM unnest(ARRAY['ppocr_det', 'ppocr_cls', 'ppocr_rec', 'minilm',
						   'prompt_task']) AS b
 WHERE NOT EXISTS (SELECT 1 FROM infer.model_registry m
					WHERE m.name = b AND m.bundled);
SELECT pg_catalog.pg_extension_config_dump('infer.model_registry',
	'WHERE NOT bundled');
SELECT pg_catalog.pg_extension_config_dump('infer.dropped_bundled_models', '');

-- Unregisters a model.
CREATE OR REPLACE FUNCTION infer.drop_model(name text)
RETURNS void
LANGUAGE plpgsql STRICT VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	was_bundled boolean;
BEGIN
	DELETE FROM infer.model_registry m WHERE m.name = drop_model.name
		RETURNING m.bundled INTO was_bundled;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'model "%" does not exist', drop_model.name
			USING ERRCODE = 'undefined_object',
				HINT = 'See infer.models for the registered models.';
	END IF;
	-- a restore of pg_dump's output drops it again
	IF was_bundled AND NOT EXISTS (SELECT 1 FROM infer.dropped_bundled_models d
								   WHERE d.name = drop_model.name) THEN
		INSERT INTO infer.dropped_bundled_models (name) VALUES (drop_model.name);
	END IF;
END
$$;


-- infer.models gains columns in the middle, infer.create_model an
-- argument (compute_precision) and infer.load_model its arguments' order
-- (model, worker): new objects
DROP VIEW infer.models;
DROP FUNCTION infer.create_model(text, text, text, int, int, real[], real[],
								 text, text, text[], text, text);
DROP FUNCTION infer.load_model(text, text);

-- Registers a model: its ONNX file (relative to the workers' --model-dir),
-- task, preprocessing, labels and version.
CREATE FUNCTION infer.create_model(
	name text,
	file text,
	task text,
	input_height int DEFAULT 0,
	input_width int DEFAULT 0,
	mean real[] DEFAULT NULL,
	std real[] DEFAULT NULL,
	color_order text DEFAULT 'RGB',
	resize_mode text DEFAULT 'stretch',
	labels text[] DEFAULT NULL,
	labels_file text DEFAULT NULL,
	version text DEFAULT '1',
	compute_precision text DEFAULT 'fp32')
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tasks	text[] := ARRAY['classify', 'detect_text', 'recognize_text',
							'embed_text', 'classify_text', 'embed_image', 'raw'];
	f		text;
	norm	text;
BEGIN
	IF create_model.name IS NULL OR create_model.name = '' THEN
		RAISE EXCEPTION 'model name must not be empty'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF create_model.file IS NULL OR create_model.file = '' THEN
		RAISE EXCEPTION 'model "%" needs a file', create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the ONNX file name relative to the workers'' --model-dir.';
	END IF;
	FOREACH f IN ARRAY ARRAY[create_model.file, create_model.labels_file] LOOP
		IF f LIKE '/%' OR f ~ '(^|/)\.\.(/|$)' THEN
			RAISE EXCEPTION 'file "%" of model "%" is outside the model directory',
				f, create_model.name
				USING ERRCODE = 'invalid_parameter_value',
					HINT = 'Give file names relative to the workers'' --model-dir, without "..".';
		END IF;
	END LOOP;
	-- one spelling per file, as infer.upload_model keeps it: "./a//b" is
	-- "a/b" (the join with infer.model_files compares names)
	norm := btrim(regexp_replace(regexp_replace('/' || create_model.file || '/',
												'/+', '/', 'g'),
								 '(/\.)+(?=/)', '', 'g'), '/');
	IF norm = '' THEN
		RAISE EXCEPTION 'file "%" of model "%" names no file', create_model.file,
			create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the ONNX file name relative to the workers'' --model-dir.';
	END IF;
	IF create_model.task IS NULL OR NOT create_model.task = ANY (tasks) THEN
		RAISE EXCEPTION 'invalid task "%" for model "%"',
			create_model.task, create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'The task is one of ' || array_to_string(tasks, ', ') || '.';
	END IF;
	IF create_model.input_height IS NULL OR create_model.input_width IS NULL
	   OR create_model.input_height < 0 OR create_model.input_width < 0 THEN
		RAISE EXCEPTION 'invalid input size (input_height %, input_width %) for model "%"',
			create_model.input_height, create_model.input_width,
			create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give a height and width in pixels, or 0 to keep the image''s size.';
	END IF;
	-- the workers' limit (worker/fragment.h, FRAGMENT_MAX_INPUT_SIDE)
	IF create_model.input_height > 8192 OR create_model.input_width > 8192 THEN
		RAISE EXCEPTION 'input size (input_height %, input_width %) of model "%" exceeds the workers'' limit of 8192 pixels a side',
			create_model.input_height, create_model.input_width,
			create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the size the model takes, at most 8192 pixels a side.';
	END IF;
	IF coalesce(create_model.color_order, '') NOT IN ('RGB', 'BGR') THEN
		RAISE EXCEPTION 'invalid color order "%" for model "%"',
			create_model.color_order, create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'The color order is RGB or BGR.';
	END IF;
	IF coalesce(create_model.resize_mode, '') NOT IN
	   ('stretch', 'keep_ratio_pad', 'limit_min_side') THEN
		RAISE EXCEPTION 'invalid resize mode "%" for model "%"',
			create_model.resize_mode, create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'The resize mode is stretch, keep_ratio_pad or limit_min_side.';
	END IF;
	IF create_model.resize_mode <> 'stretch' THEN
		RAISE EXCEPTION 'resize mode "%" of model "%" is not implemented by the workers',
			create_model.resize_mode, create_model.name
			USING ERRCODE = 'feature_not_supported',
				HINT = 'Register the model with resize_mode => ''stretch'': images are resized to input_height x input_width, their aspect ratio not kept.';
	END IF;
	IF coalesce(create_model.compute_precision, '') NOT IN ('fp32', 'tf32', 'fp16', 'bf16') THEN
		RAISE EXCEPTION 'invalid precision "%" for model "%"',
			create_model.compute_precision, create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'The precision is fp32, tf32, fp16 or bf16 (used on a GPU; the CPU computes in fp32).';
	END IF;
	IF coalesce(cardinality(create_model.mean), 1) NOT IN (1, 3)
	   OR coalesce(cardinality(create_model.std), 1) NOT IN (1, 3)
	   OR array_position(create_model.mean, NULL) IS NOT NULL
	   OR array_position(create_model.std, NULL) IS NOT NULL
	   OR 0 = ANY (create_model.std)
	   OR EXISTS (SELECT 1 FROM unnest(create_model.mean || create_model.std) AS v
				  WHERE v IN ('NaN', 'Infinity', '-Infinity')) THEN
		RAISE EXCEPTION 'invalid mean or std for model "%"', create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'mean and std hold 1 value (all channels) or 3 (one per channel), each a finite number, and std no zero.',
				HINT = 'Values apply to pixel/255, for example mean => ''{0.5,0.5,0.5}'', std => ''{0.5,0.5,0.5}''.';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(create_model.labels) AS l WHERE l IS NULL) THEN
		RAISE EXCEPTION 'labels of model "%" hold a NULL', create_model.name
			USING ERRCODE = 'null_value_not_allowed',
				HINT = 'Give one label, a text, per score of the model.';
	END IF;
	IF create_model.labels IS NOT NULL AND create_model.labels_file IS NOT NULL THEN
		RAISE EXCEPTION 'model "%" has both labels and a labels_file', create_model.name
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the labels in one place: labels => ARRAY[...], or labels_file => a file in the workers'' model directory holding one label a line.';
	END IF;
	IF EXISTS (SELECT 1 FROM infer.model_registry m
			   WHERE m.name = create_model.name) THEN
		RAISE EXCEPTION 'model "%" already exists', create_model.name
			USING ERRCODE = 'duplicate_object',
				HINT = format('Drop it first with infer.drop_model(%L), or choose another name.',
							  create_model.name);
	END IF;
	INSERT INTO infer.model_registry (name, file, task, input_height,
		input_width, mean, std, color_order, resize_mode, labels,
		labels_file, version, compute_precision)
	VALUES (create_model.name, norm, create_model.task,
		create_model.input_height, create_model.input_width,
		create_model.mean, create_model.std, create_model.color_order,
		create_model.resize_mode, create_model.labels,
		create_model.labels_file, coalesce(create_model.version, '1'),
		create_model.compute_precision);
END
$$;

-- Makes a registered model resident on a worker (MSG_LOAD_MODEL) and
-- waits until it is.
CREATE FUNCTION infer.load_model(model text, worker text)
RETURNS void
AS 'MODULE_PATHNAME', 'infer_load_model'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- Evicts a registered model from a worker's memory (MSG_UNLOAD_MODEL);
-- refused (55006) while queued or running work needs it.
CREATE FUNCTION infer.unload_model(model text, worker text)
RETURNS void
AS 'MODULE_PATHNAME', 'infer_unload_model'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- Registers an infer-worker by name and ZeroMQ endpoint (its --listen
-- address: tcp://host:port or ipc://path), and, for a worker started with
-- --curve-secret-key, its public key (Z85): backends then talk CURVE to it.
-- A NULL name or endpoint does nothing (as a STRICT function would).
CREATE OR REPLACE FUNCTION infer.add_worker(name text, endpoint text,
								 server_public_key text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	other	text;
	port	int;
BEGIN
	IF add_worker.name IS NULL OR add_worker.endpoint IS NULL THEN
		RETURN;
	END IF;
	-- the whole PREFIX.pub file may be given: its '#' lines and blanks go
	add_worker.server_public_key := btrim(regexp_replace(add_worker.server_public_key,
														 '(^|\n)[ \t]*#[^\n]*', '', 'g'),
										  E' \t\r\n');
	IF add_worker.server_public_key IS NOT NULL AND
	   add_worker.server_public_key !~ '^[]0-9a-zA-Z.:+=^!/*?&<>()[{}@%$#-]{40}$' THEN
		RAISE EXCEPTION 'invalid CURVE public key for inference worker "%"', add_worker.name
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'A CURVE key is 40 characters of Z85 text.',
				HINT = 'Give the key line of the worker''s PREFIX.pub file, or the whole file (its # lines are skipped; infer-worker --curve-keygen PREFIX wrote it).';
	END IF;
	IF add_worker.name = '' THEN
		RAISE EXCEPTION 'inference worker name must not be empty'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF add_worker.endpoint ~ '^tcp://([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$' THEN
		port := substring(add_worker.endpoint from ':([0-9]+)$')::int;
	END IF;
	IF NOT (coalesce(port BETWEEN 1 AND 65535, false)
			OR add_worker.endpoint ~ '^ipc://.+$') THEN
		RAISE EXCEPTION 'invalid endpoint "%" for inference worker "%"',
			add_worker.endpoint, add_worker.name
			USING ERRCODE = 'invalid_parameter_value',
				DETAIL = 'An endpoint is tcp://host:port (port 1 to 65535) or ipc://path.',
				HINT = 'Give the address infer-worker listens on (its --listen option), for example tcp://127.0.0.1:5555.';
	END IF;
	IF EXISTS (SELECT 1 FROM infer.worker_registry w
			   WHERE w.name = add_worker.name) THEN
		RAISE EXCEPTION 'inference worker "%" already exists', add_worker.name
			USING ERRCODE = 'duplicate_object',
				HINT = format('Remove it first with infer.drop_worker(%L), or choose another name.',
							  add_worker.name);
	END IF;
	SELECT w.name INTO other FROM infer.worker_registry w
	 WHERE w.endpoint = add_worker.endpoint;
	IF FOUND THEN
		RAISE EXCEPTION 'endpoint "%" is already registered as inference worker "%"',
			add_worker.endpoint, other
			USING ERRCODE = 'duplicate_object',
				HINT = format('Remove it first with infer.drop_worker(%L).', other);
	END IF;
	INSERT INTO infer.worker_registry (name, endpoint, server_public_key)
		VALUES (add_worker.name, add_worker.endpoint, add_worker.server_public_key);
	PERFORM infer._pool_register(add_worker.name, add_worker.endpoint,
								 coalesce(add_worker.server_public_key, ''));
	-- the uploaded model files (infer.upload_model); a worker not up yet
	-- gets them later with infer.push_models (see infer._push_files)
	PERFORM infer._push_files(add_worker.name, NULL);
END
$$;

-- Sends the bytes of an uploaded model file to a worker (MSG_PUT_MODEL;
-- extension/upload.c) and waits for its answer.  Internal.
CREATE FUNCTION infer._push_model(worker text, file text, sha256 bytea,
	data bytea)
RETURNS void
AS 'MODULE_PATHNAME', 'infer_push_model'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Sends the uploaded model files to one worker: all of them, or only the
-- file named.  Returns how many it took.  A file the worker refuses gets a
-- WARNING with the worker's hint; a dropped connection (a message over
-- the worker's --max-message-bytes) fails that file only; after a
-- connection error or the worker's timeout it is taken for down: the
-- other files are not tried (each would wait infer.timeout) and one
-- WARNING names them all.  A cancel or statement_timeout stops it.  Used
-- by infer.add_worker, infer.upload_model and infer.push_models.  Internal.
CREATE FUNCTION infer._push_files(worker text, only_file text)
RETURNS int
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	f		record;
	n		int := 0;
	why		text;
	st		text;
	hint	text;
	unsent	text[];
	dead	text;
BEGIN
	FOR f IN SELECT m.file, m.sha256, m.data FROM infer.model_files m
			 WHERE _push_files.only_file IS NULL OR m.file = _push_files.only_file
			 ORDER BY m.file LOOP
		IF unsent IS NOT NULL THEN
			unsent := unsent || f.file;
			CONTINUE;
		END IF;
		BEGIN
			PERFORM infer._push_model(_push_files.worker, f.file, f.sha256, f.data);
			n := n + 1;
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			GET STACKED DIAGNOSTICS why = MESSAGE_TEXT, st = RETURNED_SQLSTATE,
				hint = PG_EXCEPTION_HINT;
			-- a cancel or statement_timeout stops; the worker's timeout does not
			IF st = '57014' AND why NOT LIKE 'inference worker % did not answer within %' THEN
				RAISE;
			END IF;
			IF why LIKE 'lost the connection to inference worker %' THEN
				RAISE WARNING 'uploaded model file "%" was not sent to inference worker "%": %',
					f.file, _push_files.worker, why
					USING HINT = format('The file has %s bytes: a worker drops a message larger than its --max-message-bytes (default 268435456). Start the worker with a larger --max-message-bytes, then run infer.push_models(%L).',
										length(f.data), _push_files.worker);
			ELSIF st LIKE '08%' OR st = '57014' THEN
				unsent := ARRAY[f.file];
				dead := why;
			ELSE
				RAISE WARNING 'uploaded model file "%" was not sent to inference worker "%": %',
					f.file, _push_files.worker, why
					USING HINT = coalesce(nullif(hint, ''),
						format('Send it once the worker is up with infer.push_models(%L).',
							   _push_files.worker));
			END IF;
		END;
	END LOOP;
	IF unsent IS NOT NULL THEN
		RAISE WARNING '% not sent to inference worker "%": %',
			CASE WHEN cardinality(unsent) = 1
				 THEN format('uploaded model file %s was', '"' || unsent[1] || '"')
				 ELSE format('%s uploaded model files (%s) were', cardinality(unsent),
							 '"' || array_to_string(unsent, '", "') || '"') END,
			_push_files.worker, dead
			USING HINT = format('Send %s once the worker is up with infer.push_models(%L).',
								CASE WHEN cardinality(unsent) = 1 THEN 'it' ELSE 'them' END,
								_push_files.worker);
	END IF;
	RETURN n;
END
$$;

-- Uploads the bytes of a model file (at most 1 GB, a bytea's limit, and
-- the workers' --max-message-bytes) under a name relative to the workers'
-- --model-dir: checks them against sha256 (hex) when given, keeps them in
-- infer.model_files (replacing an earlier upload of that name) and sends
-- them to every registered worker; a worker that cannot take them gets a
-- WARNING (infer.push_models sends them again).  A model registered on
-- the file (infer.create_model) is then loaded from these bytes, checked
-- against their SHA-256.  Returns the SHA-256 in hex.
CREATE FUNCTION infer.upload_model(file text, data bytea,
								   sha256 text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	digest	bytea;
	w		record;
	norm	text;
BEGIN
	IF upload_model.file IS NULL OR upload_model.file = '' THEN
		RAISE EXCEPTION 'uploaded model file needs a name'
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the ONNX file name relative to the workers'' --model-dir.';
	END IF;
	IF upload_model.file LIKE '/%' OR upload_model.file ~ '(^|/)\.\.(/|$)' THEN
		RAISE EXCEPTION 'uploaded model file "%" is outside the model directory',
			upload_model.file
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give file names relative to the workers'' --model-dir, without "..".';
	END IF;
	-- one spelling per file, as infer.create_model keeps it: "./a//b" is "a/b"
	norm := btrim(regexp_replace(regexp_replace('/' || upload_model.file || '/',
												'/+', '/', 'g'),
								 '(/\.)+(?=/)', '', 'g'), '/');
	IF norm = '' THEN
		RAISE EXCEPTION 'uploaded model file "%" names no file', upload_model.file
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give the ONNX file name relative to the workers'' --model-dir.';
	END IF;
	IF upload_model.data IS NULL OR length(upload_model.data) = 0 THEN
		RAISE EXCEPTION 'uploaded model file "%" has no bytes', upload_model.file
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF upload_model.sha256 IS NOT NULL
	   AND upload_model.sha256 !~ '^[0-9a-fA-F]{64}$' THEN
		RAISE EXCEPTION 'invalid SHA-256 "%" for uploaded model file "%"',
			upload_model.sha256, upload_model.file
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Give 64 hexadecimal digits, as sha256sum prints them, or NULL.';
	END IF;
	digest := pg_catalog.sha256(upload_model.data);
	IF upload_model.sha256 IS NOT NULL
	   AND lower(upload_model.sha256) <> encode(digest, 'hex') THEN
		RAISE EXCEPTION 'bytes of uploaded model file "%" do not match the given SHA-256',
			upload_model.file
			USING ERRCODE = 'data_corrupted',
				DETAIL = format('The %s bytes have SHA-256 %s, not %s.',
								length(upload_model.data), encode(digest, 'hex'),
								lower(upload_model.sha256)),
				HINT = 'Check that the whole file was read, unchanged (sha256sum FILE).';
	END IF;
	INSERT INTO infer.model_files AS m (file, sha256, data)
		VALUES (norm, digest, upload_model.data)
		ON CONFLICT ON CONSTRAINT model_files_pkey DO UPDATE
			SET sha256 = EXCLUDED.sha256, data = EXCLUDED.data, created = now();
	FOR w IN SELECT r.name FROM infer.worker_registry r ORDER BY r.name LOOP
		PERFORM infer._push_files(w.name, norm);
	END LOOP;
	RETURN encode(digest, 'hex');
END
$$;

-- Sends every uploaded model file to one registered worker, or to all
-- (NULL): for a worker that was down when a file was uploaded or added,
-- or that lost its model directory.  Returns the number of files sent.
-- For one named worker its first error stops it; for all, a worker's
-- error is a WARNING and the others still get the files (after a
-- connection error or a timeout none more is tried on that worker: one
-- WARNING names the files it did not get).
CREATE FUNCTION infer.push_models(worker text DEFAULT NULL)
RETURNS int
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	w		record;
	f		record;
	n		int := 0;
BEGIN
	IF push_models.worker IS NOT NULL AND NOT EXISTS
	   (SELECT 1 FROM infer.worker_registry r WHERE r.name = push_models.worker) THEN
		RAISE EXCEPTION 'inference worker "%" does not exist', push_models.worker
			USING ERRCODE = 'undefined_object',
				HINT = 'See infer.workers.';
	END IF;
	FOR w IN SELECT r.name FROM infer.worker_registry r
			 WHERE push_models.worker IS NULL OR r.name = push_models.worker
			 ORDER BY r.name LOOP
		IF push_models.worker IS NULL THEN
			n := n + infer._push_files(w.name, NULL);
			CONTINUE;
		END IF;
		-- one worker named: its first error is the statement's
		FOR f IN SELECT m.file, m.sha256, m.data FROM infer.model_files m
				 ORDER BY m.file LOOP
			PERFORM infer._push_model(w.name, f.file, f.sha256, f.data);
			n := n + 1;
		END LOOP;
	END LOOP;
	RETURN n;
END
$$;

-- Per model file, from the pool's live state (extension/stats.c): the
-- workers it is resident on, and their measured timings.  Internal.
CREATE FUNCTION infer._model_state(file text,
	OUT resident_on text[], OUT timings jsonb)
RETURNS record
AS 'MODULE_PATHNAME', 'infer_model_state'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- resident_on and timings are NULL when pg_infer is not in
-- shared_preload_libraries (docs/sql.md "infer.models").
CREATE VIEW infer.models AS
	SELECT m.name, m.file, m.task, m.input_height, m.input_width, m.mean,
		   m.std, m.color_order, m.resize_mode, m.labels, m.labels_file,
		   m.version, m.compute_precision, m.created, s.resident_on,
		   s.timings
	  FROM infer.model_registry m
	  LEFT JOIN LATERAL infer._model_state(m.file) s ON true;

CREATE FUNCTION infer._stats(OUT model text, OUT worker text,
	OUT calls bigint, OUT rows bigint, OUT batches bigint,
	OUT mean_batch_size float8, OUT rows_per_second float8,
	OUT queue_ms float8, OUT compute_ms float8, OUT wall_ms float8,
	OUT bytes_sent bigint, OUT bytes_received bigint, OUT errors bigint,
	OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'infer_stats'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Per model (the registered models a request runs, joined by '+') and
-- worker: see docs/sql.md for what each column counts.
CREATE VIEW infer.stats AS
	SELECT * FROM infer._stats();

-- Empties infer.stats.
CREATE FUNCTION infer.stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'infer_stats_reset'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- infer.stats' table: its size (infer.max_stats_entries), the entries in
-- use, the counts dropped for want of room, the last reset.
CREATE FUNCTION infer.stats_info(OUT max_entries int, OUT entries bigint,
	OUT dropped bigint, OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'infer_stats_info'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION infer._progress(OUT pid int, OUT leader_pid int,
	OUT query_start timestamptz, OUT scan_start timestamptz, OUT scans int,
	OUT rows_done bigint, OUT rows_sent bigint, OUT batches_in_flight bigint,
	OUT rows_estimate float8, OUT rows_per_second float8, OUT models text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'infer_progress'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per backend running an InferBatch scan (batched ML calls),
-- with its query as pg_stat_activity shows it to the reader.
CREATE VIEW infer.progress AS
	SELECT p.pid, p.leader_pid, a.datname, a.usename, p.query_start,
		   p.scan_start, p.scans, p.rows_done, p.rows_sent,
		   p.batches_in_flight, p.rows_estimate, p.rows_per_second,
		   p.models, a.query
	  FROM infer._progress() p
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = p.pid;


-- privileges as pg_infer--0.2.sql sets them (docs/security.md)
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA infer FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA infer FROM PUBLIC;

GRANT infer_user TO infer_admin;
GRANT USAGE ON SCHEMA infer TO infer_user;
GRANT SELECT ON infer.worker_registry, infer.model_registry,
	infer.dropped_bundled_models, infer.workers, infer.models, infer.stats,
	infer.progress TO infer_user;
GRANT EXECUTE ON FUNCTION infer.ocr(bytea), infer.detect_text(bytea),
	infer.predict(text, bytea), infer.classify(text, bytea),
	infer.embed(text, text), infer.classify(text, text),
	infer.similarity(real[], real[]),
	-- the infer.workers view calls it as its reader (read-only)
	infer._worker_state(text, text),
	-- the views infer.models, infer.stats, infer.progress call them
	-- as their reader (read-only)
	infer._model_state(text), infer._stats(), infer._progress(),
	infer.stats_info() TO infer_user;
GRANT EXECUTE ON FUNCTION infer.add_worker(text, text, text),
	infer.drop_worker(text),
	infer.create_model(text, text, text, int, int, real[], real[], text,
					   text, text[], text, text, text),
	infer.drop_model(text),
	infer.load_model(text, text), infer.unload_model(text, text),
	infer.stats_reset() TO infer_admin;
GRANT EXECUTE ON FUNCTION infer.upload_model(text, bytea, text),
	infer.push_models(text) TO infer_admin;
GRANT SELECT (file, sha256, created) ON infer.model_files TO infer_user;
-- infer_monitor: reads the registries and the pool's state (a monitoring
-- agent's role; infer_user holds it too), runs no model
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'infer_monitor') THEN
		CREATE ROLE infer_monitor NOLOGIN;
	END IF;
END
$$;
GRANT infer_monitor TO infer_user;
GRANT USAGE ON SCHEMA infer TO infer_monitor;
GRANT SELECT ON infer.worker_registry, infer.model_registry,
	infer.dropped_bundled_models, infer.workers, infer.models, infer.stats,
	infer.progress TO infer_monitor;
GRANT EXECUTE ON FUNCTION infer._worker_state(text, text),
	infer._model_state(text), infer._stats(), infer._progress(),
	infer.stats_info() TO infer_monitor;
