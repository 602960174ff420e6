-- describe.sql: one line per object of the pg_infer extension, with what
-- makes it what it is: a function's full definition and privileges, a
-- relation's kind, columns, constraints, storage, view query and
-- privileges, the triggers on its tables, the schema's privileges, and the
-- extension's configuration tables (pg_extension_config_dump).
-- test_upgrade.sh compares its output
-- after ALTER EXTENSION ... UPDATE with a fresh CREATE EXTENSION.
\pset format unaligned
\pset tuples_only on
WITH ext AS (
	SELECT oid, extconfig, extcondition FROM pg_extension
	 WHERE extname = 'pg_infer'
), members AS (
	SELECT d.classid, d.objid, d.objsubid
	  FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
	   AND d.deptype = 'e'
)
SELECT line FROM (
	SELECT 'function ' || pg_get_functiondef(p.oid) || ' acl=' ||
		   coalesce(p.proacl::text, '-') AS line
	  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass
								   AND p.oid = m.objid
	UNION ALL
	SELECT 'relation ' || c.oid::regclass::text || ' kind=' || c.relkind::text ||
		   ' acl=' || coalesce(c.relacl::text, '-') ||
		   coalesce(' view=' || pg_get_viewdef(c.oid), '') ||
		   ' columns=' || coalesce((
			   SELECT string_agg(a.attname || ' ' ||
								 format_type(a.atttypid, a.atttypmod) ||
								 CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
								 ' storage=' || a.attstorage::text ||
								 coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '') ||
								 coalesce(' acl=' || a.attacl::text, ''),
								 ', ' ORDER BY a.attnum)
				 FROM pg_attribute a
				 LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid
										AND ad.adnum = a.attnum
				WHERE a.attrelid = c.oid AND a.attnum > 0
				  AND NOT a.attisdropped), '') ||
		   ' constraints=' || coalesce((
			   SELECT string_agg(co.conname || ' ' || pg_get_constraintdef(co.oid),
								 ', ' ORDER BY co.conname)
				 FROM pg_constraint co WHERE co.conrelid = c.oid), '') ||
		   ' indexes=' || coalesce((
			   SELECT string_agg(pg_get_indexdef(i.indexrelid), ', '
								 ORDER BY pg_get_indexdef(i.indexrelid))
				 FROM pg_index i WHERE i.indrelid = c.oid), '')
	  FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass
									AND c.oid = m.objid
	UNION ALL
	SELECT 'other ' || pg_describe_object(m.classid, m.objid, m.objsubid)
	  FROM members m
	 WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_class'::regclass)
	UNION ALL
	SELECT 'schema infer acl=' || coalesce(n.nspacl::text, '-')
	  FROM pg_namespace n WHERE n.nspname = 'infer'
	UNION ALL
	SELECT 'config ' || c::regclass::text || ' ' || coalesce(w, '')
	  FROM ext, unnest(ext.extconfig, ext.extcondition) AS u(c, w)
	UNION ALL
	SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled=' ||
		   t.tgenabled::text
	  FROM members m JOIN pg_trigger t ON m.classid = 'pg_class'::regclass
									  AND t.tgrelid = m.objid
	 WHERE NOT t.tgisinternal
	UNION ALL
	SELECT 'comment ' || pg_describe_object(m.classid, m.objid, m.objsubid) ||
		   ' ' || d.description
	  FROM members m JOIN pg_description d ON d.classoid = m.classid
										  AND d.objoid = m.objid
										  AND d.objsubid = m.objsubid
) s
ORDER BY line;
