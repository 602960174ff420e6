-- security_roles: who may run inference and who may change the pool
-- (docs/security.md).  infer_monitor reads the registries and the pool's
-- state; infer_user also runs the ML functions; infer_admin also adds and
-- drops workers and models;
-- a role granted neither gets nothing, not even through a batched plan.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
\set SHOW_CONTEXT never

-- the roles exist, and PUBLIC holds nothing in the schema
SELECT rolname, rolcanlogin FROM pg_roles
 WHERE rolname IN ('infer_monitor', 'infer_user', 'infer_admin') ORDER BY rolname;
SELECT pg_has_role('infer_admin', 'infer_user', 'MEMBER') AS admin_is_user,
       pg_has_role('infer_user', 'infer_monitor', 'MEMBER') AS user_is_monitor;
SELECT count(*) AS public_function_grants
  FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
 WHERE p.pronamespace = 'infer'::regnamespace AND a.grantee = 0;
SELECT has_schema_privilege('public', 'infer', 'USAGE') AS public_usage;

CREATE ROLE regress_plain;
CREATE ROLE regress_user IN ROLE infer_user;
CREATE ROLE regress_admin IN ROLE infer_admin;
CREATE ROLE regress_monitor IN ROLE infer_monitor;
-- a role with the schema but without EXECUTE on the ML functions
CREATE ROLE regress_schema_only;
GRANT USAGE ON SCHEMA infer TO regress_schema_only;
GRANT SELECT ON infer.model_registry, infer.worker_registry TO regress_schema_only;

SELECT infer.add_worker('regress', current_setting('regress.worker_endpoint'));
CREATE TABLE public.sec_img (id int, data bytea);
INSERT INTO public.sec_img
SELECT i, pg_read_binary_file(current_setting('regress.data_dir') || '/p02_receipt_bakery.png')
  FROM generate_series(1, 3) i;
GRANT SELECT ON public.sec_img TO regress_plain, regress_user, regress_admin,
	regress_schema_only, regress_monitor;

-- a plain role: no inference, no registration, no registries
SET ROLE regress_plain;
SELECT infer.similarity('{1,0}', '{1,0}');
:sqlstate
SELECT count(*) FROM infer.workers;
:sqlstate
SELECT infer.add_worker('evil', 'tcp://127.0.0.1:5999');
:sqlstate
SELECT infer.create_model('evil', 'x.onnx', 'raw');
:sqlstate
RESET ROLE;

-- schema usage alone does not let a role run a model, batched (the plan
-- below) or per row
EXPLAIN (COSTS OFF)
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
SET ROLE regress_schema_only;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
:sqlstate
SET infer.enable_batching = off;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
:sqlstate
RESET infer.enable_batching;
SELECT infer.add_worker('evil', 'tcp://127.0.0.1:5999');
:sqlstate
RESET ROLE;

-- infer_monitor: the registries and the pool's state, no inference
SET ROLE regress_monitor;
SELECT name, status IS NOT NULL AS has_status FROM infer.workers ORDER BY name;
SELECT count(*) > 0 AS sees_models FROM infer.models;
SELECT count(*) >= 0 AS sees_stats FROM infer.stats;
SELECT count(*) >= 0 AS sees_progress FROM infer.progress;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
:sqlstate
SET infer.enable_batching = off;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
:sqlstate
RESET infer.enable_batching;
SELECT infer.similarity('{1,0}', '{1,0}');
:sqlstate
SELECT infer.stats_reset();
:sqlstate
SELECT infer.add_worker('evil', 'tcp://127.0.0.1:5999');
:sqlstate
RESET ROLE;

-- infer_user: inference and the registries, nothing more
SET ROLE regress_user;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
SELECT round(infer.similarity('{1,0}', '{1,1}')::numeric, 4) AS cos;
SELECT name FROM infer.workers ORDER BY name;
SELECT count(*) > 0 AS sees_models FROM infer.models;
SELECT infer.add_worker('evil', 'tcp://127.0.0.1:5999');
:sqlstate
SELECT infer.drop_worker('regress');
:sqlstate
SELECT infer.create_model('evil', 'x.onnx', 'raw');
:sqlstate
SELECT infer.drop_model('ppocr_cls');
:sqlstate
SELECT infer.load_model('ppocr_cls', 'regress');
:sqlstate
-- the registries cannot be written around the functions' checks
INSERT INTO infer.worker_registry (name, endpoint) VALUES ('evil', 'tcp://127.0.0.1:5999');
:sqlstate
DELETE FROM infer.model_registry WHERE name = 'ppocr_cls';
:sqlstate
-- the view's state function watches registered workers only: an endpoint
-- of the caller's gets no live state (no slot of the pool is taken)
SELECT status IS NULL AS not_watched
  FROM infer._worker_state('evil', 'tcp://127.0.0.1:5999');
SELECT status IS NOT NULL AS watched
  FROM infer._worker_state('regress', current_setting('regress.worker_endpoint'));
RESET ROLE;

-- infer_admin: workers and models, through the functions' checks
SET ROLE regress_admin;
SELECT infer.add_worker('regress_admin_w', 'tcp://127.0.0.1:5998');
SELECT infer.create_model('regress_admin_m', 'admin.onnx', 'raw');
SELECT infer.create_model('regress_escape', '../etc/passwd', 'raw');
:sqlstate
SELECT name, file FROM infer.models WHERE name LIKE 'regress%' ORDER BY name;
SELECT infer.drop_model('regress_admin_m');
SELECT infer.drop_worker('regress_admin_w');
SELECT infer.load_model('ppocr_cls', 'regress');
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
-- still no direct writes
INSERT INTO infer.worker_registry (name, endpoint) VALUES ('evil', 'tcp://127.0.0.1:5999');
:sqlstate
RESET ROLE;

-- a session of a role that may not use schema infer: its first statement,
-- which has the planner look the ML functions up, plans and runs (it was
-- 42501 on schema infer); once the role takes infer_user (NOINHERIT: only
-- by SET ROLE) its calls are batched
SELECT current_user AS orig_user \gset
CREATE ROLE regress_login LOGIN NOINHERIT IN ROLE infer_user;
GRANT SELECT ON public.sec_img TO infer_user;
\c - regress_login
SELECT 1 AS one;
SET ROLE infer_user;
EXPLAIN (COSTS OFF) SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img;
SELECT id, infer.classify('ppocr_cls', data) FROM public.sec_img ORDER BY id;
\c - :orig_user
REVOKE SELECT ON public.sec_img FROM infer_user;
DROP ROLE regress_login;

SELECT name FROM infer.workers ORDER BY name;
SELECT infer.drop_worker('regress');
DROP TABLE public.sec_img;
REVOKE ALL ON SCHEMA infer FROM regress_schema_only;
REVOKE ALL ON infer.model_registry, infer.worker_registry FROM regress_schema_only;
DROP ROLE regress_plain, regress_user, regress_admin, regress_schema_only,
	regress_monitor;
