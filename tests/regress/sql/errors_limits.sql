-- errors_limits: the input limits (docs/reliability.md "Limits").  A text
-- over infer.max_text_bytes is refused by the backend before it is
-- detoasted or sent (54000, naming the function, the model, the row of a
-- batched scan and the limit), or gives NULL and a WARNING with
-- infer.on_error = null; with the setting at 0 the worker's own
-- --max-text-bytes (1 MiB by default) refuses it before tokenizing.  The
-- worker still answers afterwards.  (infer.max_pixels: errors_input;
-- infer.batch_size and infer.batch_bytes: batch_exec.)
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
-- SHOW_CONTEXT never: the context names the worker's port
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- the defaults
SHOW infer.max_text_bytes;
SELECT setting, unit, min_val, max_val, context FROM pg_settings
 WHERE name = 'infer.max_text_bytes';

-- at the limit: sent and embedded; one byte over: refused, per-row call
SET infer.max_text_bytes = 100;
SELECT array_length(infer.embed('minilm', repeat('a', 100)), 1) AS at_limit;
SELECT infer.embed('minilm', repeat('a', 101));
:sqlstate
SELECT infer.classify('prompt_task', repeat('b', 150));
:sqlstate

-- batched: the error names the scan's row; a toasted value (2 MB that
-- compresses to a few kB) is measured from its header
CREATE TEMP TABLE docs (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO docs VALUES (1, 'how do I back up a table?'),
						(2, repeat('vacuum ', 300000)),
						(3, 'how do I index a column?');
SELECT id, length(body), pg_column_size(body) < 100000 AS compressed
  FROM docs ORDER BY id;
SET infer.max_text_bytes = '1MB';
EXPLAIN (COSTS OFF) SELECT id, infer.embed('minilm', body) FROM docs ORDER BY id;
SELECT id, array_length(infer.embed('minilm', body), 1) FROM docs ORDER BY id;
:sqlstate
SELECT id, infer.classify('prompt_task', body) FROM docs ORDER BY id;
:sqlstate

-- infer.on_error = null: NULL and a WARNING for that row, the others answered
SET infer.on_error = 'null';
SELECT id, array_length(infer.embed('minilm', body), 1) FROM docs ORDER BY id;
SELECT infer.embed('minilm', body) IS NULL AS is_null FROM docs WHERE id = 2;
-- two calls over the one text (a request carries it once): each call gives
-- its WARNING, as one row at a time
SELECT id, infer.embed('minilm', body) IS NULL AS embed_null,
	   infer.classify('prompt_task', body) IS NULL AS classify_null
  FROM docs ORDER BY id;
-- ... and in a call outside a batched scan
SELECT infer.classify('prompt_task', repeat('c', 1048577)) IS NULL AS per_row_null;
RESET infer.on_error;

-- 0 leaves the limit to the worker: its --max-text-bytes (1 MiB) refuses
-- the row before tokenizing it, with the same SQLSTATE
SET infer.max_text_bytes = 0;
SELECT id, array_length(infer.embed('minilm', body), 1) FROM docs ORDER BY id;
:sqlstate
SELECT array_length(infer.embed('minilm', repeat('x', 1048576)), 1) AS at_worker_limit;
RESET infer.max_text_bytes;

-- and the worker still answers
SELECT id, array_length(infer.embed('minilm', body), 1) AS dims,
	   infer.classify('prompt_task', body) IS NOT NULL AS labelled
  FROM docs WHERE id <> 2 ORDER BY id;

-- a value out of range is refused
SET infer.max_text_bytes = -1;

SELECT infer.drop_worker('regress');
