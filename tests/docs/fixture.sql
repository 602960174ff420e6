-- tests/docs/fixture.sql: what the SQL examples of the docs may use.
--
-- tests/docs/run.sh runs this once, as the superuser postgres, in the
-- template database docs_template (the extension created, the harness's
-- two workers registered as gpu1 and gpu2); every Markdown file then runs in
-- its own copy (tests/docs/check_docs.py).  psql variables: data_dir (the
-- OCR images, ../shared/data/ocr), test_data_dir (tests/regress/data),
-- endpoint1 and endpoint2 (the workers).
--
-- What a doc example may count on:
--
--   workers  gpu1, gpu2 (both up, both with build/models; endpoints
--            tcp://127.0.0.1:5555 and :5556 in the docs); in a file that
--            runs CREATE EXTENSION pg_infer the copy has no extension and
--            no workers: the file registers its own, and its endpoints
--            tcp://127.0.0.1:5555 and tcp://127.0.0.1:5556 are the
--            harness's two workers.
--   settings the defaults, but infer.worker_timeout = '10s' (in
--            postgresql.conf: a worker stays "up" on a busy machine).
--   images   the folder /path/to/your/images in a block stands for
--            ../shared/data/ocr (41 photographs and scans).
--   models   the five the extension registers: ppocr_det, ppocr_cls,
--            ppocr_rec, minilm, prompt_task.
--   scans(id int, name text, img bytea, taken timestamptz)
--            4 photographs and scans of ../shared/data/ocr:
--              1 p05_street_sign.jpg   "Baker Street" / "NW1"
--              2 p15_sticky_note.jpg   a handwritten-style note, 3 lines
--              3 p34_blank_wall.jpg    no text (OCR gives '')
--              4 p12_fridge_label.png  taken 3 days ago, the others now
--   lines(id int, crop bytea)
--            one text line, 1 upright (ppocr_cls: '0'), 2 upside down
--            ('180'): tests/regress/data/line_*.png
--   docs(id int, title text, body text, emb real[])
--            8 short texts about PostgreSQL, emb = infer.embed('minilm', body)
--   staging(id int, body text)
--            the same 8 texts, without embeddings
--   cref(id int, body text)
--            5 prompts for infer.classify('prompt_task', body)
--
-- An example that needs anything else creates it itself (and a file's
-- blocks share one session, so a later block may use an earlier one's
-- tables and psql variables).

\set ON_ERROR_STOP 1
SELECT infer.add_worker('gpu1', :'endpoint1');
SELECT infer.add_worker('gpu2', :'endpoint2');

CREATE TABLE scans (id int PRIMARY KEY, name text NOT NULL, img bytea NOT NULL,
					taken timestamptz NOT NULL);
INSERT INTO scans
SELECT id, name, pg_read_binary_file(:'data_dir' || '/' || name),
	   now() - age
  FROM (VALUES (1, 'p05_street_sign.jpg', interval '0'),
			   (2, 'p15_sticky_note.jpg', interval '0'),
			   (3, 'p34_blank_wall.jpg', interval '0'),
			   (4, 'p12_fridge_label.png', interval '3 days')) AS f(id, name, age);

CREATE TABLE lines (id int PRIMARY KEY, crop bytea NOT NULL);
INSERT INTO lines
SELECT id, pg_read_binary_file(:'test_data_dir' || '/' || f)
  FROM (VALUES (1, 'line_upright.png'), (2, 'line_rot180.png')) AS l(id, f);

CREATE TABLE staging (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO staging VALUES
	(1, 'Partitioning splits one large table into smaller physical pieces, for example one per month, so that queries and maintenance touch only the pieces they need.'),
	(2, 'pg_dump writes a consistent snapshot of a database as SQL or as an archive; pg_restore loads an archive back into a database.'),
	(3, 'A B-tree index speeds up equality and range searches on a column, at the cost of extra work for every insert and update.'),
	(4, 'Multiversion concurrency control lets readers see a snapshot of the data, so that reading never blocks writing and writing never blocks reading.'),
	(5, 'The write-ahead log records every change before it reaches the data files, so that the server can recover after a crash.'),
	(6, 'VACUUM reclaims the space taken by dead row versions and keeps the statistics the planner uses up to date.'),
	(7, 'A foreign key requires the values in a column to match the values of a row in another table.'),
	(8, 'Streaming replication sends the write-ahead log to standby servers that apply it and can take over when the primary fails.');

CREATE TABLE docs (id int PRIMARY KEY, title text NOT NULL, body text NOT NULL,
				   emb real[]);
INSERT INTO docs (id, title, body, emb)
SELECT id, t.title, s.body, infer.embed('minilm', s.body)
  FROM staging s
  JOIN (VALUES (1, 'Table Partitioning'), (2, 'SQL Dump'), (3, 'B-Tree Indexes'),
			   (4, 'Concurrency Control'), (5, 'Write-Ahead Logging'),
			   (6, 'Routine Vacuuming'), (7, 'Foreign Keys'),
			   (8, 'Streaming Replication')) AS t(id, title) USING (id);

CREATE TABLE cref (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO cref VALUES
	(1, 'Write a Python function that reverses a linked list.'),
	(2, 'Find the number of positive integers n less than 1000 such that n squared ends in 76.'),
	(3, 'Is a verbal agreement to sell land enforceable under the statute of frauds?'),
	(4, 'Book a flight to Boston for next Tuesday and change my seat to an aisle.'),
	(5, 'Which element has the highest electronegativity, and why?');

ANALYZE scans, lines, staging, docs, cref;
