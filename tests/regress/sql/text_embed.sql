-- text_embed: infer.embed with the sentence-embedding model minilm
-- (all-MiniLM-L6-v2, registered by CREATE EXTENSION; `make models` puts
-- it in the worker's model directory).  tests/regress/data/
-- text_reference.jsonl holds 13 texts with their embeddings by ONNX
-- Runtime over the same model file (tools/text_reference.py).
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
-- SHOW_CONTEXT never: the context names the worker's port
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

SELECT name, file, task FROM infer.models WHERE name = 'minilm';

CREATE TEMP TABLE ref AS
SELECT l.n AS id, j->>'text' AS body, (j->>'n_tokens')::int AS n_tokens,
       (j->>'truncated')::bool AS truncated,
       ARRAY(SELECT e::real
               FROM jsonb_array_elements_text(j->'embedding')
                    WITH ORDINALITY AS x(e, k)
              ORDER BY k) AS emb
  FROM regexp_split_to_table(pg_read_file(current_setting('regress.test_data_dir')
                                          || '/text_reference.jsonl'), E'\n')
       WITH ORDINALITY AS l(line, n),
       LATERAL (SELECT l.line::jsonb) AS x(j)
 WHERE l.line <> '';

-- every text: 384 values of unit norm, the reference's vector (cosine at
-- least 0.9999); the long text is cut to the model's 256 tokens, with one
-- NOTICE for the statement
CREATE TEMP TABLE got AS SELECT id, infer.embed('minilm', body) AS e FROM ref;
SELECT r.id, left(replace(r.body, E'\r\n', ' '), 30) AS text, r.n_tokens, r.truncated,
       array_length(g.e, 1) AS n,
       abs(sqrt((SELECT sum(x::float8 * x) FROM unnest(g.e) AS x)) - 1) < 1e-5 AS unit,
       infer.similarity(g.e, r.emb) >= 0.9999 AS as_reference
  FROM ref r JOIN got g USING (id) ORDER BY r.id;
SELECT min(infer.similarity(g.e, r.emb)) >= 0.9999 AS min_cosine_ok
  FROM ref r JOIN got g USING (id);

-- a text's vector is the same alone (one request a row) and among the
-- others (batched, where the planner batches infer.embed): within 1e-6
SET infer.enable_batching = off;
SELECT max(abs(a.x - b.x)) <= 1e-6 AS same_alone_and_batched,
       count(*) AS values_compared
  FROM got g JOIN ref r USING (id),
       LATERAL unnest(g.e, infer.embed('minilm', r.body)) AS a(x, y),
       LATERAL (SELECT a.y) AS b(x);
RESET infer.enable_batching;
-- and the same twice
SELECT infer.embed('minilm', 'hello world') = infer.embed('minilm', 'hello world')
       AS deterministic;

-- related sentences are closer than unrelated ones
SELECT infer.similarity(infer.embed('minilm', 'A man is eating food.'),
                        infer.embed('minilm', 'A man is eating a piece of bread.')) >
       infer.similarity(infer.embed('minilm', 'A man is eating food.'),
                        infer.embed('minilm', 'The stock market fell sharply on Tuesday.')) + 0.3
       AS related_closer;

-- semantic search over the reference texts: the query embedded once
SELECT r.id, r.body
  FROM ref r
 ORDER BY infer.similarity((SELECT infer.embed('minilm', 'creating an index for a table')),
                           r.emb) DESC
 LIMIT 2;

-- NULL in, NULL out; the empty string has a vector
SELECT infer.embed('minilm', NULL) IS NULL AS null_text,
       infer.embed(NULL, 'hello') IS NULL AS null_model,
       array_length(infer.embed('minilm', ''), 1) AS empty_text;

-- truncation: one NOTICE per statement, however many texts are cut
SELECT count(*) AS cut
  FROM (SELECT infer.embed('minilm', repeat('database ', 300 + g))
          FROM generate_series(1, 3) AS g) AS t;
SELECT array_length(infer.embed('minilm', repeat('word ', 1000)), 1) AS n;
-- a text of exactly 256 tokens (254 words) is not cut
SELECT array_length(infer.embed('minilm', repeat('database ', 254)), 1) AS n;
-- off: a longer text is an error that gives its length
SET infer.text_truncate = off;
SELECT array_length(infer.embed('minilm', repeat('database ', 254)), 1) AS n;
SELECT infer.embed('minilm', repeat('database ', 255));
:sqlstate
-- with infer.on_error = null it gives NULL and a WARNING
SET infer.on_error = 'null';
SELECT infer.embed('minilm', repeat('database ', 301)) IS NULL AS is_null;
RESET infer.on_error;
RESET infer.text_truncate;

-- errors: unknown model, a model of another task
SELECT infer.embed('no_such_model', 'x');
:sqlstate
SELECT infer.embed('ppocr_cls', 'x');
:sqlstate

-- two calls written alike over a volatile argument (nextval, random) are
-- two calls, as PostgreSQL evaluates each occurrence; alike calls over a
-- column stay one (shared input)
CREATE TEMP SEQUENCE vol_seq;
EXPLAIN (COSTS OFF)
SELECT infer.embed('minilm', 'q' || nextval('vol_seq')) AS a,
	   infer.embed('minilm', 'q' || nextval('vol_seq')) AS b,
	   infer.embed('minilm', body) AS c, infer.embed('minilm', body) AS d
  FROM ref;
SELECT count(*) AS rows_, count(*) FILTER (WHERE a = b) AS same_ab,
	   count(*) FILTER (WHERE c = d) AS same_cd, currval('vol_seq') AS nextvals
  FROM (SELECT infer.embed('minilm', 'q' || nextval('vol_seq')) AS a,
			   infer.embed('minilm', 'q' || nextval('vol_seq')) AS b,
			   infer.embed('minilm', body) AS c, infer.embed('minilm', body) AS d
		  FROM ref WHERE id <= 6) s;

SELECT infer.drop_worker('regress');
