-- batch_nested: a nested ML call, infer.embed('minilm', infer.ocr(img)),
-- runs as ONE batched call: the worker runs the OCR and feeds each row's
-- text to the embedding model, so the image goes out once and the vector
-- comes back.  Several calls over the same input share one request that
-- carries the input once.  Results equal infer.enable_batching = off (vectors
-- to float rounding: same_vec).
-- SHOW_CONTEXT never: the context names the worker's port
\set SHOW_CONTEXT never
LOAD 'pg_infer';
-- the batch counts below are the ramp's (1, 2, 4, ...): an infer.timeout
-- far above any batch's time keeps batch_rows_cap (which sizes a slow
-- model's batches to a quarter of it) out of them
SET infer.timeout = '1h';
-- same_vec(a, b): both NULL, or vectors of one length within 1e-5 of each
-- other in every value.  A vector of a batch and the same row's alone
-- agree to float rounding only: the matrix products (OpenBLAS) may group
-- a batch's rows otherwise than a single row's, and the last bits then
-- differ on some machines (1.2e-7 at most on an AVX2 AMD EPYC; equal on
-- others).
CREATE FUNCTION pg_temp.same_vec(a real[], b real[]) RETURNS bool
LANGUAGE sql IMMUTABLE AS $$
	SELECT (a IS NULL AND b IS NULL) OR
		   (cardinality(a) = cardinality(b) AND
			(SELECT bool_and(abs(x - y) <= 1e-5) FROM unnest(a, b) AS u(x, y)))
$$;
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

-- six images: two text lines, two small scans, a blank page (no text: its
-- OCR text is '', which embeds as infer.embed('minilm', '') does), a
-- file that is no image (id 4, in the middle), and a NULL (id 7)
CREATE TEMP TABLE doc (id int PRIMARY KEY, data bytea);
INSERT INTO doc VALUES
	(1, pg_read_binary_file(current_setting('regress.test_data_dir') || '/line_upright.png')),
	(2, pg_read_binary_file(current_setting('regress.test_data_dir') || '/line_rot180.png')),
	(3, pg_read_binary_file(current_setting('regress.data_dir') || '/p19_footer_small.png')),
	(4, pg_read_binary_file(current_setting('regress.data_dir') || '/bad/text_file.png')),
	(5, pg_read_binary_file(current_setting('regress.data_dir') || '/p28_ci_status_palette.png')),
	(6, pg_read_binary_file(current_setting('regress.data_dir') || '/p35_blank_page.png')),
	(7, NULL);
-- the same images in a second column
ALTER TABLE doc ADD COLUMN copy bytea;
UPDATE doc SET copy = data;
ANALYZE doc;

-- EXPLAIN ANALYZE of q with the times (waiting, worker compute) blanked out
CREATE FUNCTION pg_temp.explain(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
	LOOP
		RETURN NEXT regexp_replace(line, '(Reply Wait|Worker Compute): [0-9.]+ ms', '\1: N ms');
	END LOOP;
END
$$;

-- the bytes of the images sent (ids 1-6; the NULL is not sent)
SELECT sum(length(data)) AS image_bytes FROM doc;

-- the chain is one batched call of one InferBatch node
EXPLAIN (COSTS OFF) SELECT id, infer.embed('minilm', infer.ocr(data)) FROM doc;
EXPLAIN (COSTS OFF) SELECT id, infer.embed('minilm', infer.classify('ppocr_cls', data)) FROM doc;
-- the inner call's value is needed too: both calls in one node, one
-- request per batch (the worker runs the OCR once for both)
EXPLAIN (COSTS OFF)
SELECT id, infer.ocr(data), infer.embed('minilm', infer.ocr(data)) FROM doc;
-- three calls over the same column share one request
EXPLAIN (COSTS OFF)
SELECT id, infer.ocr(data), infer.detect_text(data), infer.classify('ppocr_cls', data) FROM doc;
-- a model given as an expression per row is no chain: the inner call is
-- batched below, the outer one per row
EXPLAIN (COSTS OFF)
SELECT id, infer.embed(CASE WHEN id > 0 THEN 'minilm' END, infer.ocr(data)) FROM doc;

-- batched results equal per-row results, the bad image giving NULL and a
-- WARNING both ways
SET infer.on_error = 'null';
\set VERBOSITY terse
CREATE TEMP TABLE b_chain AS
SELECT id, infer.ocr(data) AS txt,
	   infer.embed('minilm', infer.ocr(data)) AS emb,
	   infer.embed('minilm', infer.classify('ppocr_cls', data)) AS cls_emb,
	   infer.detect_text(data) AS boxes,
	   infer.classify('ppocr_cls', data) AS label
  FROM doc;
SET infer.enable_batching = off;
CREATE TEMP TABLE p_chain AS
SELECT id, infer.ocr(data) AS txt,
	   infer.embed('minilm', infer.ocr(data)) AS emb,
	   infer.embed('minilm', infer.classify('ppocr_cls', data)) AS cls_emb,
	   infer.detect_text(data) AS boxes,
	   infer.classify('ppocr_cls', data) AS label
  FROM doc;
RESET infer.enable_batching;
\set VERBOSITY default
SELECT b.id, b.txt IS NULL AS no_text, b.emb IS NULL AS no_emb,
	   cardinality(b.emb) AS dims, b.label,
	   b.txt IS NOT DISTINCT FROM p.txt AS same_text,
	   pg_temp.same_vec(b.emb, p.emb) AS same_emb,
	   pg_temp.same_vec(b.cls_emb, p.cls_emb) AS same_cls_emb,
	   b.boxes IS NOT DISTINCT FROM p.boxes AS same_boxes,
	   b.label IS NOT DISTINCT FROM p.label AS same_label
  FROM b_chain b JOIN p_chain p USING (id) ORDER BY id;
-- the blank page's vector is that of the empty string; the classifier's
-- label embeds as the label itself would
SELECT pg_temp.same_vec(b.emb, infer.embed('minilm', '')) AS blank_is_empty_text
  FROM b_chain b WHERE id = 6;
SELECT pg_temp.same_vec(b.cls_emb, infer.embed('minilm', b.label)) AS label_embedded
  FROM b_chain b WHERE id = 1;

-- the chain alone: one request per batch (batches of 1, 2, 4 rows), the
-- images sent once; alone the chain gives the same vectors
SELECT pg_temp.explain($$SELECT id, infer.embed('minilm', infer.ocr(data)) FROM doc$$);
\set VERBOSITY terse
SELECT id, pg_temp.same_vec(e, b.emb) AS same_emb
  FROM (SELECT id, infer.embed('minilm', infer.ocr(data)) AS e FROM doc) AS s
  JOIN b_chain b USING (id) ORDER BY id;
\set VERBOSITY default
-- three calls on one column: still one request per batch and the bytes
-- of one copy of the images
SELECT pg_temp.explain($$SELECT id, infer.ocr(data), infer.detect_text(data),
	infer.classify('ppocr_cls', data) FROM doc$$);
-- all five calls of the comparison above: one request per batch, the
-- images sent once
SELECT pg_temp.explain($$SELECT id, infer.ocr(data) AS txt,
	   infer.embed('minilm', infer.ocr(data)) AS emb,
	   infer.embed('minilm', infer.classify('ppocr_cls', data)) AS cls_emb,
	   infer.detect_text(data) AS boxes,
	   infer.classify('ppocr_cls', data) AS label
  FROM doc$$);
-- over two columns: two requests per batch, two copies
SELECT pg_temp.explain($$SELECT id, infer.ocr(data), infer.detect_text(copy),
	infer.classify('ppocr_cls', data) FROM doc$$);

-- with infer.on_error = error, the chain's bad row raises the OCR stage's
-- error when it is returned, as one row at a time does
RESET infer.on_error;
SELECT id, infer.embed('minilm', infer.ocr(data)) IS NOT NULL AS has_emb
  FROM doc ORDER BY id;
SET infer.enable_batching = off;
SELECT id, infer.embed('minilm', infer.ocr(data)) IS NOT NULL AS has_emb
  FROM doc ORDER BY id;
RESET infer.enable_batching;

-- a prepared statement with a generic plan: the models are parameters
SET plan_cache_mode = force_generic_plan;
PREPARE q(text, text) AS
	SELECT id, infer.embed($1, infer.classify($2, data)) AS e FROM doc WHERE id <= 2;
EXPLAIN (COSTS OFF) EXECUTE q('minilm', 'ppocr_cls');
CREATE TEMP TABLE pq AS EXECUTE q('minilm', 'ppocr_cls');
SELECT id, pg_temp.same_vec(e, b.cls_emb) AS same_emb FROM pq JOIN b_chain b USING (id) ORDER BY id;
DEALLOCATE q;
RESET plan_cache_mode;

-- a nested call in WHERE: rows whose OCR text is about a fridge label
SET infer.on_error = 'null';
\set VERBOSITY terse
EXPLAIN (COSTS OFF)
SELECT id FROM doc
 WHERE infer.similarity(infer.embed('minilm', infer.ocr(data)),
						(SELECT infer.embed('minilm', 'keep refrigerated'))) > 0.5;
SELECT id FROM doc
 WHERE infer.similarity(infer.embed('minilm', infer.ocr(data)),
						(SELECT infer.embed('minilm', 'keep refrigerated'))) > 0.5
 ORDER BY id;
SET infer.enable_batching = off;
SELECT id FROM doc
 WHERE infer.similarity(infer.embed('minilm', infer.ocr(data)),
						(SELECT infer.embed('minilm', 'keep refrigerated'))) > 0.5
 ORDER BY id;
RESET infer.enable_batching;
\set VERBOSITY default
RESET infer.on_error;

-- infer.max_text_bytes holds for the text the inner call makes, which the
-- backend never sees in a chain, as one row at a time: over it, the
-- embedding is NULL with a WARNING under on_error = null, an ERROR
-- otherwise (the classifier's labels, '0' and '180', are under it)
SET infer.max_text_bytes = 12;
SET infer.on_error = 'null';
\set VERBOSITY terse
SELECT id, octet_length(infer.ocr(data)) AS text_bytes,
	   infer.embed('minilm', infer.ocr(data)) IS NULL AS no_emb,
	   infer.embed('minilm', infer.classify('ppocr_cls', data)) IS NULL AS no_cls_emb
  FROM doc ORDER BY id;
SET infer.enable_batching = off;
SELECT id, octet_length(infer.ocr(data)) AS text_bytes,
	   infer.embed('minilm', infer.ocr(data)) IS NULL AS no_emb,
	   infer.embed('minilm', infer.classify('ppocr_cls', data)) IS NULL AS no_cls_emb
  FROM doc ORDER BY id;
RESET infer.enable_batching;
RESET infer.on_error;
SELECT id, infer.embed('minilm', infer.ocr(data)) IS NULL AS no_emb
  FROM doc WHERE id IN (1, 2) ORDER BY id;
\set VERBOSITY default
RESET infer.max_text_bytes;

SELECT infer.drop_worker('regress');

-- in a LATIN1 database the chain is not planned (one row at a time, the
-- OCR text goes to LATIN1 and back, which fails for characters LATIN1
-- lacks): the inner call is batched by one node, the outer by another
CREATE DATABASE pg_infer_nested_latin1 TEMPLATE template0 ENCODING 'LATIN1'
	LC_COLLATE 'C' LC_CTYPE 'C';
\c pg_infer_nested_latin1
CREATE EXTENSION pg_infer;
LOAD 'pg_infer';
CREATE TEMP TABLE doc (id int, data bytea);
EXPLAIN (COSTS OFF) SELECT id, infer.embed('minilm', infer.ocr(data)) FROM doc;
\c pg_infer_regress
DROP DATABASE pg_infer_nested_latin1 WITH (FORCE);
