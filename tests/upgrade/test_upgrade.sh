#!/usr/bin/env bash
# test_upgrade.sh: ALTER EXTENSION pg_infer UPDATE from every released
# version (issue 9).  A released version is one whose full script
# sql/pg_infer--V.sql is kept although V is not the control file's
# default_version; the update scripts sql/pg_infer--A--B.sql lead from
# it to the default.  For each released V, in a throwaway cluster
# (tools/testenv.sh, pg_infer in shared_preload_libraries; the installed
# extension: `make install` first):
#   - CREATE EXTENSION pg_infer VERSION 'V', with a worker and a model
#     registered as a user would;
#   - ALTER EXTENSION pg_infer UPDATE reaches the default version;
#   - every object of the extension (describe.sql: functions with their
#     definitions and privileges, tables, views, columns, constraints,
#     the schema's privileges, the configuration tables) is as a fresh
#     CREATE EXTENSION of the default version makes it, and so are the
#     models it registers itself;
#   - the user's worker and model are still registered, and pg_dump of
#     the updated database restores into a fresh one;
#   - the bundled models a user dropped, or registered again under the
#     same name with another file, stay as the user left them across the
#     update and across pg_dump and restore (plain format through psql,
#     custom format through pg_restore); likewise on the default version.
# Prints "upgrade: N passed, M failed"; exits 1 on any failure.
set -u
cd "$(dirname "$0")/../.." || exit 1

# shellcheck source=tests/integration/testlib.sh
. tests/integration/testlib.sh
use_cluster_cleanup

default=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" sql/pg_infer.control)
released=()
for f in sql/pg_infer--*.sql; do
	v=${f#sql/pg_infer--}
	v=${v%.sql}
	case $v in *--*) continue ;; esac
	[ "$v" = "$default" ] || released+=("$v")
done
if [ "${#released[@]}" -eq 0 ]; then
	fail "released versions: none found beside $default"
	echo "upgrade: $passed passed, $failed failed"
	exit 1
fi

TESTENV_EXTRA_CONF="shared_preload_libraries = 'pg_infer'"
if ! testenv_start_cluster "$tmp/pg" >"$tmp/cluster.log" 2>&1; then
	cat "$tmp/cluster.log"
	echo "upgrade: 0 passed, 1 failed"
	exit 1
fi

# describe DB: the extension's objects (describe.sql) and the models it
# registers itself, one line each.
describe() {
	q -d "$1" -f tests/upgrade/describe.sql
	q -d "$1" -c "SELECT name, file, task, input_height, input_width, mean,
	                     std, color_order, resize_mode, labels, labels_file,
	                     version, compute_precision, bundled
	                FROM infer.model_registry ORDER BY name" \
	  -c "SELECT 'dropped ' || name FROM infer.dropped_bundled_models ORDER BY name"
}

q -d postgres -c "CREATE DATABASE fresh" || exit 1
q -d fresh -c "CREATE EXTENSION pg_infer" || exit 1
if ! describe fresh >"$tmp/fresh.txt" 2>&1; then
	fail "describe a fresh $default" "$(cat "$tmp/fresh.txt")"
	echo "upgrade: $passed passed, $failed failed"
	exit 1
fi
check "fresh install is version $default" \
	"$(q -d fresh -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_infer'")" \
	"^$default\$"

# registry DB: the model registrations and the dropped bundled models.
registry() {
	q -d "$1" -c "SELECT name || ' ' || file || ' ' || version || ' ' || bundled
	                FROM infer.model_registry ORDER BY name" \
	  -c "SELECT 'dropped ' || name FROM infer.dropped_bundled_models ORDER BY name"
}

# user_bundled_changes DB: drops the bundled prompt_task, registers
# minilm again with another file and ppocr_cls with its file and other
# labels, adds m_user.
user_bundled_changes() {
	q -d "$1" >/dev/null <<'EOF'
SELECT infer.drop_model('prompt_task');
SELECT infer.drop_model('minilm');
SELECT infer.create_model('minilm', 'my_minilm/model.onnx', 'embed_text', version => '2');
SELECT infer.drop_model('ppocr_cls');
SELECT infer.create_model('ppocr_cls', 'ch_ppocr_mobile_v2.0_cls_infer.onnx', 'classify',
	input_height => 48, input_width => 192, labels => '{up,down}', version => 'mine');
SELECT infer.create_model('m_user', 'some_model.onnx', 'raw');
EOF
}

# check_dump_restore NAME DB: pg_dump of DB restored into three new
# databases (plain through psql; custom through pg_restore; directory
# through pg_restore --jobs 2, which loads the two tables at once) has
# DB's registry (registry), which holds the changes of
# user_bundled_changes.
check_dump_restore() {
	local name=$1 db=$2 want out
	want=$(registry "$db" 2>&1)
	check "$name: the registry before pg_dump" "$want" \
		'^minilm my_minilm/model\.onnx 2 false$' '^m_user some_model\.onnx 1 false$' \
		'^ppocr_cls ch_ppocr_mobile_v2\.0_cls_infer\.onnx mine false$' \
		'^ppocr_det ch_PP-OCRv4_det_infer\.onnx 1 true$' '^dropped prompt_task$' \
		'^dropped minilm$' '^dropped ppocr_cls$'
	check_not "$name: prompt_task dropped" "$want" '^prompt_task '
	# the user's minilm dropped too: the bundled one stays away
	q -d "$db" -c "SELECT infer.drop_model('minilm')" >/dev/null
	want=$(registry "$db" 2>&1)
	check_not "$name: minilm dropped" "$want" '^minilm '
	q -d postgres -c "CREATE DATABASE ${db}_plain" -c "CREATE DATABASE ${db}_custom" \
		-c "CREATE DATABASE ${db}_jobs" || exit 1
	if "$TESTENV_PG_BIN/pg_dump" -d "$db" -f "$tmp/$db.plain.sql" 2>"$tmp/$db.dump.err" &&
		out=$(q -d "${db}_plain" -f "$tmp/$db.plain.sql" 2>&1 >/dev/null) &&
		"$TESTENV_PG_BIN/pg_dump" -Fc -d "$db" -f "$tmp/$db.custom" 2>>"$tmp/$db.dump.err" &&
		out=$("$TESTENV_PG_BIN/pg_restore" --exit-on-error -d "${db}_custom" "$tmp/$db.custom" 2>&1) &&
		"$TESTENV_PG_BIN/pg_dump" -Fd -d "$db" -f "$tmp/$db.dir" 2>>"$tmp/$db.dump.err" &&
		out=$("$TESTENV_PG_BIN/pg_restore" --exit-on-error --jobs 2 -d "${db}_jobs" "$tmp/$db.dir" 2>&1); then
		for how in plain custom jobs; do
			out=$(registry "${db}_$how" 2>&1)
			if [ "$out" = "$want" ]; then
				pass "$name: restored ($how) = the dumped registry"
			else
				fail "$name: restored ($how) differs from the dumped registry" \
					"$(diff <(echo "$want") <(echo "$out"))"
			fi
		done
	else
		fail "$name: pg_dump / restore" "$(cat "$tmp/$db.dump.err"; echo "$out")"
	fi
}

# a schema infer that a role other than a superuser owns: CREATE EXTENSION,
# and the update of a 0.1 installed into it, are refused (its owner could
# swap what the SECURITY DEFINER functions call)
q -d postgres -c "CREATE ROLE regress_schema_owner" -c "CREATE DATABASE owned" \
	-c "CREATE DATABASE owned_01" || exit 1
for db in owned owned_01; do
	q -d "$db" -c "CREATE SCHEMA infer AUTHORIZATION regress_schema_owner" || exit 1
done
out=$(q -d owned -v VERBOSITY=verbose -c "CREATE EXTENSION pg_infer" 2>&1)
check "a schema infer owned by a role that is not a superuser: CREATE EXTENSION refused" \
	"$out $(q -d owned -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_infer'")" \
	'ERROR:  42501: schema "infer" is owned by role "regress_schema_owner", which is not a superuser' \
	' 0$'
out=$(q -d owned_01 -v VERBOSITY=verbose -c "CREATE EXTENSION pg_infer VERSION '${released[0]}'" \
	-c "ALTER EXTENSION pg_infer UPDATE" 2>&1)
check "... and the update of ${released[0]} installed into it" \
	"$out $(q -d owned_01 -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_infer'")" \
	'ERROR:  42501: schema "infer" is owned by role "regress_schema_owner", which is not a superuser' \
	" ${released[0]//./\\.}\$"

q -d postgres -c "CREATE DATABASE changed" || exit 1
q -d changed -c "CREATE EXTENSION pg_infer" || exit 1
user_bundled_changes changed
check_dump_restore "$default" changed

for v in "${released[@]}"; do
	db="from_${v//./_}"
	q -d postgres -c "CREATE DATABASE $db" || exit 1
	out=$(q -d "$db" 2>&1 <<EOF
CREATE EXTENSION pg_infer VERSION '$v';
SELECT infer.add_worker('w_user', 'tcp://127.0.0.1:1');
SELECT infer.create_model('m_user', 'some_model.onnx', 'classify',
	input_height => 48, input_width => 192, labels => '{a,b}');
SELECT extversion FROM pg_extension WHERE extname = 'pg_infer';
EOF
)
	check "CREATE EXTENSION VERSION '$v'" "$out" "^$v\$"
	out=$(q -d "$db" -c "ALTER EXTENSION pg_infer UPDATE" \
		-c "SELECT extversion FROM pg_extension WHERE extname = 'pg_infer'" 2>&1)
	check "ALTER EXTENSION UPDATE from $v reaches $default" "$out" "^$default\$"
	if ! describe "$db" >"$tmp/$db.all" 2>&1; then
		fail "describe the database updated from $v" "$(cat "$tmp/$db.all")"
	elif grep -v -e '^w_user|' -e '^m_user|' "$tmp/$db.all" >"$tmp/$db.txt" &&
		diff -u "$tmp/fresh.txt" "$tmp/$db.txt" >"$tmp/$db.diff"; then
		pass "objects after update from $v = fresh $default ($(wc -l <"$tmp/fresh.txt") lines)"
	else
		fail "objects after update from $v differ from a fresh $default" \
			"$(cat "$tmp/$db.diff")"
	fi
	out=$(q -d "$db" -c "SELECT name || ' ' || endpoint FROM infer.worker_registry" \
		-c "SELECT name || ' ' || file || ' ' || array_to_string(labels, ',')
		      FROM infer.model_registry WHERE name = 'm_user'" 2>&1)
	check "user's worker and model kept across the update from $v" "$out" \
		'^w_user tcp://127\.0\.0\.1:1$' '^m_user some_model\.onnx a,b$'
	# the updated database dumps and restores (configuration tables)
	q -d postgres -c "CREATE DATABASE ${db}_restored" || exit 1
	if "$TESTENV_PG_BIN/pg_dump" -d "$db" -f "$tmp/$db.sql" 2>"$tmp/$db.dump.err" &&
		out=$(q -d "${db}_restored" -f "$tmp/$db.sql" 2>&1 >/dev/null); then
		out=$(q -d "${db}_restored" \
			-c "SELECT count(*) FROM infer.worker_registry WHERE name = 'w_user'" \
			-c "SELECT count(*) FROM infer.model_registry WHERE name = 'm_user'" 2>&1)
		check "pg_dump of the database updated from $v restores its registrations" \
			"$out" '^1$'
		check_not "pg_dump restore from $v: both registrations" "$out" '^0$'
	else
		fail "pg_dump / restore of the database updated from $v" \
			"$(cat "$tmp/$db.dump.err"; echo "$out")"
	fi
	# bundled models changed before the update
	q -d postgres -c "CREATE DATABASE ${db}_changed" || exit 1
	q -d "${db}_changed" -c "CREATE EXTENSION pg_infer VERSION '$v'" || exit 1
	user_bundled_changes "${db}_changed"
	q -d "${db}_changed" -c "ALTER EXTENSION pg_infer UPDATE" || exit 1
	check_dump_restore "updated from $v" "${db}_changed"
done

echo "upgrade: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
