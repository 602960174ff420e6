-- text_encoding: infer.embed converts text from the database encoding to
-- UTF-8.  A LATIN1 database embeds accented text as the UTF-8 database
-- does; unconverted, its bytes (0xE9 for "é") would not be UTF-8 and the
-- worker would refuse them.  The answers come back in UTF-8 too: OCR text
-- that LATIN1 cannot hold (the recognizer reads full-width punctuation on
-- p07) fails its row with 22P05, which infer.on_error = null turns into a
-- WARNING and NULL, the other rows answered as in the UTF-8 database.
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));
SELECT infer.embed('minilm', 'Café crème brûlée à la française')::text AS utf8_vec,
       infer.embed('minilm', 'Straße in Ærøskøbing')::text AS utf8_vec2 \gset
SELECT infer.ocr(pg_read_binary_file(current_setting('regress.data_dir') || '/p07_honey_label.jpg')) AS p07_utf8,
       infer.ocr(pg_read_binary_file(current_setting('regress.data_dir') || '/p12_fridge_label.png')) AS p12_utf8 \gset
SELECT :'p07_utf8' ~ '[（），]' AS p07_full_width,
       octet_length(convert_to(:'p12_utf8', 'LATIN1')) > 0 AS p12_in_latin1;
SELECT infer.drop_worker('regress');

CREATE DATABASE pg_infer_latin1 TEMPLATE template0 ENCODING 'LATIN1'
	LC_COLLATE 'C' LC_CTYPE 'C';
\c pg_infer_latin1
SET client_encoding = 'UTF8';
SHOW server_encoding;
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));
SELECT octet_length(convert_to(t, 'LATIN1')) AS latin1_bytes,
       octet_length(convert_to(t, 'UTF8')) AS utf8_bytes,
       infer.similarity(infer.embed('minilm', t), :'utf8_vec'::real[]) >= 0.9999
       AS as_in_utf8
  FROM (VALUES ('Café crème brûlée à la française')) AS v(t);
-- the model drops accents (lower-casing BERT strips them), but not ø or
-- ß: they reach it as the characters they are
SELECT infer.similarity(infer.embed('minilm', 'Straße in Ærøskøbing'),
                        :'utf8_vec2'::real[]) >= 0.9999 AS as_in_utf8,
       infer.similarity(infer.embed('minilm', 'Strasse in Aeroskobing'),
                        :'utf8_vec2'::real[]) < 0.99 AS letters_matter;
CREATE TABLE scans AS
SELECT f, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f) AS img
  FROM unnest(ARRAY['p07_honey_label.jpg', 'p12_fridge_label.png']) AS f;
SELECT f, t = :'p12_utf8' AS as_in_utf8
  FROM (SELECT f, infer.ocr(img) AS t FROM scans) s ORDER BY f;
SET infer.on_error = 'null';
-- batched, then one row at a time
SELECT f, t IS NULL AS is_null, t = :'p12_utf8' AS as_in_utf8
  FROM (SELECT f, infer.ocr(img) AS t FROM scans) s ORDER BY f;
SET infer.enable_batching = off;
SELECT f, t IS NULL AS is_null, t = :'p12_utf8' AS as_in_utf8
  FROM (SELECT f, infer.ocr(img) AS t FROM scans) s ORDER BY f;
\c pg_infer_regress
DROP DATABASE pg_infer_latin1 WITH (FORCE);

-- an SQL_ASCII database stores any bytes: a text that is not UTF-8 (here
-- 0xC3 0x28) is its row's error, 22021 naming the row, which
-- infer.on_error = null turns into a WARNING and NULL, the other rows
-- answered; batched and one row at a time
CREATE DATABASE pg_infer_sqlascii TEMPLATE template0 ENCODING 'SQL_ASCII'
	LC_COLLATE 'C' LC_CTYPE 'C';
\c pg_infer_sqlascii
CREATE EXTENSION pg_infer;
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));
CREATE TABLE notes (n int, t text);
INSERT INTO notes VALUES (1, 'ok'), (2, E'bad\xc3('), (3, 'fine');
SELECT n, infer.embed('minilm', t) IS NULL AS is_null FROM notes ORDER BY n;
SET infer.on_error = 'null';
SELECT n, e IS NULL AS is_null, cardinality(e) AS dims
  FROM (SELECT n, infer.embed('minilm', t) AS e FROM notes) s ORDER BY n;
SET infer.enable_batching = off;
SELECT n, e IS NULL AS is_null, cardinality(e) AS dims
  FROM (SELECT n, infer.embed('minilm', t) AS e FROM notes) s ORDER BY n;
\c pg_infer_regress
DROP DATABASE pg_infer_sqlascii WITH (FORCE);
