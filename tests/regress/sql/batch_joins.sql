-- batch_joins: ML calls in JOIN ... ON.  In an inner join the join filter
-- is the same condition as a filter on the joined rows, so its calls are
-- batched by an InferBatch node above the join; outer joins keep the
-- call in their join filter, run one row at a time.  Either way the rows
-- are those of per-row execution (infer.enable_batching = off).
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

CREATE TEMP TABLE prompts AS
SELECT l.n AS id, j->>'text' AS body
  FROM regexp_split_to_table(pg_read_file(current_setting('regress.test_data_dir')
                                          || '/text_classify_reference.jsonl'), E'\n')
       WITH ORDINALITY AS l(line, n),
       LATERAL (SELECT l.line::jsonb) AS x(j)
 WHERE l.line <> '' AND l.n <= 24;
-- one wanted label per id: every third the label the text gets
CREATE TEMP TABLE wanted AS
SELECT id, CASE WHEN id % 3 = 0 THEN j->>'label' ELSE 'none' END AS label
  FROM (SELECT l.n AS id, l.line::jsonb AS j
          FROM regexp_split_to_table(pg_read_file(current_setting('regress.test_data_dir')
                                                  || '/text_classify_reference.jsonl'), E'\n')
               WITH ORDINALITY AS l(line, n)
         WHERE l.line <> '' AND l.n <= 24) AS s;
ANALYZE prompts;
ANALYZE wanted;

-- an inner join: the call moves to an InferBatch node above the join
EXPLAIN (COSTS OFF)
SELECT p.id FROM prompts p JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
CREATE TEMP TABLE inner_batched AS
SELECT p.id, w.label FROM prompts p JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
-- the same with a nested loop
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT p.id FROM prompts p JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
CREATE TEMP TABLE inner_nestloop AS
SELECT p.id, w.label FROM prompts p JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- a left join keeps its join filter: one row at a time
EXPLAIN (COSTS OFF)
SELECT p.id, w.label FROM prompts p LEFT JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
CREATE TEMP TABLE left_batched AS
SELECT p.id, w.label FROM prompts p LEFT JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;

SET infer.enable_batching = off;
CREATE TEMP TABLE inner_per_row AS
SELECT p.id, w.label FROM prompts p JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
CREATE TEMP TABLE left_per_row AS
SELECT p.id, w.label FROM prompts p LEFT JOIN wanted w
    ON p.id = w.id AND infer.classify('prompt_task', p.body) = w.label;
RESET infer.enable_batching;

-- the 8 ids whose wanted label is the text's own, in every plan
SELECT count(*) AS rows, min(id) AS first, max(id) AS last FROM inner_per_row;
SELECT (SELECT array_agg(id ORDER BY id) FROM inner_batched) =
       (SELECT array_agg(id ORDER BY id) FROM inner_per_row) AS hash_join_same,
       (SELECT array_agg(id ORDER BY id) FROM inner_nestloop) =
       (SELECT array_agg(id ORDER BY id) FROM inner_per_row) AS nestloop_same,
       (SELECT array_agg(row(id, label) ORDER BY id) FROM left_batched) =
       (SELECT array_agg(row(id, label) ORDER BY id) FROM left_per_row) AS left_join_same,
       (SELECT count(*) FROM left_per_row) AS left_rows,
       (SELECT count(label) FROM left_per_row) AS left_matched;

SELECT infer.drop_worker('regress');
