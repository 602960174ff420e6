-- text_encoding: infer.embed converts text from the database encoding to
-- UTF-8.  A LATIN1 database embeds accented text as the UTF-8 database
-- does; unconverted, its bytes (0xE9 for "é") would not be UTF-8 and the
-- worker would refuse them.
\set SHOW_CONTEXT never
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));
SELECT infer.embed('minilm', 'Café crème brûlée à la française')::text AS utf8_vec,
       infer.embed('minilm', 'Straße in Ærøskøbing')::text AS utf8_vec2 \gset
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
\c pg_infer_regress
DROP DATABASE pg_infer_latin1 WITH (FORCE);
