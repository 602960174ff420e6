-- ocr_basic: infer.ocr and infer.detect_text on real images, through the
-- infer-worker the harness started (setting regress.worker_endpoint).
-- OCR output may differ slightly between engines, so the tests look for
-- words in it, compared without case and white space, rather than print it.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));

CREATE TEMP TABLE img (name text NOT NULL, data bytea NOT NULL);
INSERT INTO img
SELECT f, pg_read_binary_file(current_setting('regress.data_dir') || '/' || f)
  FROM unnest(ARRAY['p02_receipt_bakery.png',	-- clean scan, 12 lines
					'p04_slide_results.png',	-- clean slide
					'p05_street_sign.jpg',		-- photo of a sign
					'p10_platform_sign.jpg',	-- rotated by 180 degrees
					'p35_blank_page.png'		-- no text at all
					]) AS f;

-- lower case, white space removed
CREATE FUNCTION pg_temp.squash(t text) RETURNS text
	LANGUAGE sql IMMUTABLE AS $$SELECT lower(regexp_replace(t, '\s+', '', 'g'))$$;

CREATE TEMP TABLE ocr AS SELECT name, infer.ocr(data) AS text FROM img;

-- the words each image holds
SELECT name,
	   w AS word,
	   position(pg_temp.squash(w) IN pg_temp.squash(text)) > 0 AS found
  FROM ocr,
	   LATERAL unnest(CASE name
			WHEN 'p02_receipt_bakery.png' THEN
				ARRAY['CORNER BAKERY', 'Springfield', 'Croissant', '12.80', 'Thank you']
			WHEN 'p04_slide_results.png' THEN
				ARRAY['Quarterly Results 2023', 'Leeds', 'Porto', '912', '640']
			WHEN 'p05_street_sign.jpg' THEN
				ARRAY['Baker Street', 'NW1']
			WHEN 'p10_platform_sign.jpg' THEN
				ARRAY['Platform 4', 'Northbound']
			END) AS w
 ORDER BY name, w;

-- lines come in reading order, one per line of text
SELECT name,
	   array_length(string_to_array(text, E'\n'), 1) AS lines,
	   pg_temp.squash(split_part(text, E'\n', 1)) AS first_line
  FROM ocr WHERE name IN ('p05_street_sign.jpg', 'p10_platform_sign.jpg')
 ORDER BY name;

-- no text: the empty string, not NULL
SELECT name, text = '' AS empty FROM ocr WHERE name = 'p35_blank_page.png';

-- NULL in, NULL out
SELECT infer.ocr(NULL) IS NULL AS ocr_null;

-- infer.ocr_classifier = '': no direction classification; upright text
-- reads the same, upside-down text is no longer read
SET infer.ocr_classifier = '';
SELECT name,
	   pg_temp.squash(infer.ocr(data)) = pg_temp.squash(text) AS same,
	   position('northbound' IN lower(infer.ocr(data))) > 0 AS northbound
  FROM img JOIN ocr USING (name)
 WHERE name IN ('p05_street_sign.jpg', 'p10_platform_sign.jpg')
 ORDER BY name;
RESET infer.ocr_classifier;

-- detect_text: a JSON array of boxes (4 corners) with scores
SELECT name,
	   jsonb_typeof(j) AS type,
	   jsonb_array_length(j) AS boxes,
	   (SELECT bool_and(jsonb_array_length(b -> 'box') = 4
					AND (b ->> 'score')::float BETWEEN 0.5 AND 1)
		  FROM jsonb_array_elements(j) AS b) AS boxes_ok
  FROM (SELECT name, infer.detect_text(data) AS j FROM img
		 WHERE name IN ('p05_street_sign.jpg', 'p35_blank_page.png')) AS d
 ORDER BY name;

-- the two boxes of the street sign: the street name above the district
SELECT (j -> 0 -> 'box' -> 0 ->> 1)::int < (j -> 1 -> 'box' -> 0 ->> 1)::int
		AS reading_order
  FROM (SELECT infer.detect_text(data) AS j FROM img
		 WHERE name = 'p05_street_sign.jpg') AS d;

-- COST 10000: cheap quals run before the inference call
EXPLAIN (COSTS OFF)
SELECT name FROM img WHERE infer.ocr(data) LIKE '%Baker%' AND name LIKE 'p05%';
SELECT name FROM img WHERE infer.ocr(data) LIKE '%Baker%' AND name LIKE 'p05%';

SELECT infer.drop_worker('regress');
