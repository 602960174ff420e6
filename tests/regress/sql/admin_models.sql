-- admin_models: the model registry, its validation and the OCR models the
-- extension registers.
\set sqlstate '\\echo SQLSTATE :LAST_ERROR_SQLSTATE'
-- SHOW_CONTEXT never: PL/pgSQL line numbers are not what is tested.
\set SHOW_CONTEXT never

-- the three PP-OCR models, registered by CREATE EXTENSION
SELECT name, file, task, input_height, input_width, mean, std, color_order,
       resize_mode, labels, labels_file, version
  FROM infer.models ORDER BY name;

-- a model with every default
SELECT infer.create_model('m_raw', 'my/model.onnx', 'raw');
SELECT name, file, task, input_height, input_width, mean, std, color_order,
       resize_mode, labels, labels_file, version, created <= now() AS created_ok
  FROM infer.models WHERE name = 'm_raw';
SELECT compute_precision FROM infer.model_registry WHERE name = 'm_raw';

-- a classifier with everything given, by name
SELECT infer.create_model(name => 'm_cls', file => 'cls.onnx',
	task => 'classify', input_height => 224, input_width => 224,
	mean => '{0.485,0.456,0.406}', std => '{0.229,0.224,0.225}',
	color_order => 'BGR', resize_mode => 'stretch',
	labels => '{cat,dog}', version => '2', compute_precision => 'bf16');
SELECT compute_precision FROM infer.model_registry WHERE name = 'm_cls';
SELECT name, task, input_height, input_width, mean, std, color_order,
       resize_mode, labels, version
  FROM infer.models WHERE name = 'm_cls';

-- one mean/std value stands for all channels
SELECT infer.create_model('m_one', 'one.onnx', 'embed_image',
	mean => '{0.5}', std => '{0.25}');
SELECT mean, std FROM infer.models WHERE name = 'm_one';

-- what create_model refuses
SELECT infer.create_model('m_raw', 'other.onnx', 'raw');
:sqlstate
SELECT infer.create_model('', 'x.onnx', 'raw');
:sqlstate
SELECT infer.create_model('m_x', '', 'raw');
:sqlstate
SELECT infer.create_model('m_x', '/etc/passwd', 'raw');
:sqlstate
SELECT infer.create_model('m_x', '../models/x.onnx', 'raw');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', labels_file => 'a/../../keys.txt');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'segment');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', NULL);
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', input_height => -1);
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', color_order => 'rgb');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', resize_mode => 'crop');
:sqlstate
-- the two other modes are known, but no worker implements them: refused
-- here rather than by every worker at the first row
SELECT infer.create_model('m_x', 'x.onnx', 'raw', resize_mode => 'keep_ratio_pad');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', resize_mode => 'limit_min_side');
:sqlstate
-- over the workers' 8192 pixels a side
SELECT infer.create_model('m_x', 'x.onnx', 'raw', input_height => 9000, input_width => 100);
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', compute_precision => 'fp64');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', compute_precision => NULL);
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', mean => '{0.5,0.5}');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', std => '{0.5,0,0.5}');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', mean => '{0.5,NULL,0.5}');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', mean => '{NaN}');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'raw', std => '{1,Infinity,1}');
:sqlstate
SELECT infer.create_model('m_x', 'x.onnx', 'classify', labels => '{a,NULL,c}');
:sqlstate
SELECT count(*) FROM infer.models WHERE name = 'm_x';

-- dropping
SELECT infer.drop_model('m_raw');
SELECT infer.drop_model('m_raw');
:sqlstate
SELECT infer.drop_model('m_cls');
SELECT infer.drop_model('m_one');
SELECT name FROM infer.models ORDER BY name;

-- the inference functions: STRICT, VOLATILE, PARALLEL SAFE, COST 10000
SELECT p.oid::regprocedure AS function, p.prorettype::regtype AS returns,
       p.proisstrict AS strict, p.provolatile AS volatile,
       p.proparallel AS parallel, p.procost AS cost
  FROM pg_proc p
 WHERE p.pronamespace = 'infer'::regnamespace AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')
 ORDER BY p.proname, p.oid::regprocedure::text COLLATE "C";

-- the settings and their defaults (they exist once the module is loaded)
LOAD 'pg_infer';
SELECT name, setting, unit, vartype, enumvals
  FROM pg_settings WHERE name LIKE 'infer.%' ORDER BY name;
SET infer.on_error = 'skip';
:sqlstate
SET infer.timeout = 0;
:sqlstate
SET infer.no_such_setting = 1;
:sqlstate
SET infer.max_pixels = -1;
:sqlstate
-- below 2.5 heartbeats (a state every 100 ms) every worker would be down
SET infer.worker_timeout = '100ms';
:sqlstate
SET infer.on_error = 'null';
SET infer.timeout = '2s';
SHOW infer.on_error;
SHOW infer.timeout;
RESET infer.on_error;
RESET infer.timeout;
