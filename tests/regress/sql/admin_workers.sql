-- admin_workers: registering, listing and dropping inference workers.
-- Errors show message, detail and hint; :sqlstate prints the SQLSTATE of
-- the last error (the file and line of the raising code are left out).
-- SHOW_CONTEXT never: PL/pgSQL line numbers are not what is tested.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
\set SHOW_CONTEXT never

-- nothing registered after CREATE EXTENSION
SELECT count(*) FROM infer.workers;

SELECT infer.add_worker('w_tcp', 'tcp://127.0.0.1:5555');
SELECT infer.add_worker('w_host', 'tcp://gpu-01.example.org:65535');
SELECT infer.add_worker('w_ipc', 'ipc:///tmp/infer-worker.sock');
SELECT infer.add_worker('w_v6', 'tcp://[::1]:5556');
SELECT name, endpoint, added <= now() AS added_ok
  FROM infer.workers ORDER BY name;

-- endpoints that are not tcp://host:port or ipc://path
SELECT infer.add_worker('bad', '127.0.0.1:5555');
:sqlstate
SELECT infer.add_worker('bad', 'tcp://127.0.0.1');
:sqlstate
SELECT infer.add_worker('bad', 'tcp://127.0.0.1:0');
:sqlstate
SELECT infer.add_worker('bad', 'tcp://127.0.0.1:70000');
:sqlstate
SELECT infer.add_worker('bad', 'tcp://*:5555');
:sqlstate
SELECT infer.add_worker('bad', 'ipc://');
:sqlstate
SELECT infer.add_worker('bad', 'http://127.0.0.1:5555');
:sqlstate
SELECT infer.add_worker('', 'tcp://127.0.0.1:5557');
:sqlstate

-- duplicates: the name, then the endpoint under another name
SELECT infer.add_worker('w_tcp', 'tcp://127.0.0.1:6000');
:sqlstate
SELECT infer.add_worker('w_other', 'tcp://127.0.0.1:5555');
:sqlstate

-- STRICT: a NULL argument registers nothing
SELECT infer.add_worker(NULL, 'tcp://127.0.0.1:6001');
SELECT infer.add_worker('w_null', NULL);
SELECT count(*) FROM infer.workers;

-- dropping: an unknown name gets the registered ones in the hint
SELECT infer.drop_worker('nope');
:sqlstate
SELECT infer.drop_worker('w_host');
SELECT infer.drop_worker('w_host');
:sqlstate
SELECT infer.drop_worker('w_ipc');
SELECT infer.drop_worker('w_v6');
SELECT name, endpoint FROM infer.workers ORDER BY name;
SELECT infer.drop_worker('w_tcp');
SELECT infer.drop_worker('w_tcp');
:sqlstate
SELECT count(*) FROM infer.workers;

-- a dropped name and endpoint can be registered again
SELECT infer.add_worker('w_tcp', 'tcp://127.0.0.1:5555');
SELECT name, endpoint FROM infer.workers;
SELECT infer.drop_worker('w_tcp');

-- the registry is a configuration table: pg_dump keeps its rows
SELECT c.relname, e.extcondition[array_position(e.extconfig, c.oid)] AS condition
  FROM pg_extension e, pg_class c
 WHERE e.extname = 'pg_infer' AND c.oid = ANY (e.extconfig)
 ORDER BY c.relname;

-- only infer_admin (and superusers) change the registry; infer_user may
-- read it (docs/security.md; security_roles tests the rest)
CREATE ROLE regress_infer_user IN ROLE infer_user;
SET ROLE regress_infer_user;
SELECT infer.add_worker('w_user', 'tcp://127.0.0.1:5558');
:sqlstate
SELECT infer.drop_worker('w_tcp');
:sqlstate
SELECT count(*) FROM infer.workers;
RESET ROLE;
DROP ROLE regress_infer_user;
