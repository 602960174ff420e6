-- text_similarity: infer.similarity(a real[], b real[]), the cosine of two
-- vectors, and its errors; it needs no worker.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'

-- IMMUTABLE, STRICT, PARALLEL SAFE; infer.embed is VOLATILE, PARALLEL
-- SAFE, COST 10000
SELECT p.oid::regprocedure AS function, p.prorettype::regtype AS returns,
       p.proisstrict AS strict, p.provolatile AS volatile,
       p.proparallel AS parallel, p.procost AS cost
  FROM pg_proc p
 WHERE p.oid IN ('infer.similarity(real[],real[])'::regprocedure,
                 'infer.embed(text,text)'::regprocedure)
 ORDER BY p.proname;

-- the same direction, opposite, orthogonal, and a 60 degree angle
SELECT infer.similarity('{1,2,3}', '{2,4,6}') AS same,
       infer.similarity('{1,2,3}', '{-1,-2,-3}') AS opposite,
       infer.similarity('{1,0}', '{0,5}') AS orthogonal,
       round(infer.similarity('{1,0}', '{0.5,0.8660254}')::numeric, 6) AS cos60;
-- single elements, tiny and huge values (sums in double)
SELECT infer.similarity('{3}', '{0.5}') AS one,
       infer.similarity('{1e-30,1e-30}', '{2e-30,2e-30}') AS tiny,
       infer.similarity('{1e30,-1e30}', '{1e30,-1e30}') AS huge;
-- any lower bound of the arrays
SELECT infer.similarity('[0:1]={1,1}', '{1,1}') AS bounds;

-- NULL in, NULL out
SELECT infer.similarity(NULL, '{1}') IS NULL AS a_null,
       infer.similarity('{1}', NULL) IS NULL AS b_null;

-- errors: lengths, NULL elements, zero and empty vectors, NaN, infinity,
-- more than one dimension
SELECT infer.similarity('{1,2}', '{1,2,3}');
:sqlstate
SELECT infer.similarity('{1,NULL}', '{1,2}');
:sqlstate
SELECT infer.similarity('{1,2}', '{NULL,2}');
:sqlstate
SELECT infer.similarity('{0,0,0}', '{1,2,3}');
:sqlstate
SELECT infer.similarity('{1,2,3}', '{0,0,0}');
:sqlstate
SELECT infer.similarity('{}', '{}');
:sqlstate
SELECT infer.similarity('{1,NaN}', '{1,2}');
:sqlstate
SELECT infer.similarity('{1,Infinity}', '{1,2}');
:sqlstate
SELECT infer.similarity('{{1,2},{3,4}}', '{1,2,3,4}');
:sqlstate
