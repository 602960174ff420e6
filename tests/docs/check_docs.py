#!/usr/bin/env python3
"""check_docs.py TEMPLATE_DB FILE...: runs the ```sql blocks of Markdown files.

Called by tests/docs/run.sh, which has started the cluster (PGHOST, PGPORT,
PGUSER in the environment), the workers, and built TEMPLATE_DB with the
fixture (tests/docs/fixture.sql).  For each FILE with ```sql blocks:

  - a database docs_<name> is made from TEMPLATE_DB; when a block of the
    file runs CREATE EXTENSION pg_infer, the copy drops the extension first
    (and with it the registered workers), so the file starts as a new user
    would;
  - the file's blocks run in order in ONE psql session (ON_ERROR_STOP=1),
    from the repository root, with the endpoints tcp://127.0.0.1:5555 and
    :5556 replaced by those of the harness's two workers (DOCS_ENDPOINT1,
    DOCS_ENDPOINT2), and the placeholder folder /path/to/your/images by the
    OCR test images (DOCS_IMAGES, ../shared/data/ocr);
  - fence info words (after "sql"):
      error   the block must fail (its last statement's error counts);
      norun   not run; right above the fence must be an HTML comment
              "<!-- norun: why -->" (it may span lines);
      output  the plain ``` block right after it is the block's exact psql
              output (aligned, headers, "(N rows)"; notices not included),
              compared line by line, runs of blanks as one (the workers'
              real endpoints read as the docs' 5555 and 5556);
  - a block with an unknown flag, a norun block without its reason, an
    output block without its output, or a block whose last statement has
    no ';' fails without running; the file's other blocks still run;
  - roles the file created are dropped afterwards (roles are cluster-wide).

Prints one line per block that fails, "FILE:LINE: why", and per file
"ok   - FILE (N blocks)" or "FAIL - FILE"; last "docs: P passed, F failed"
counting blocks.  Exit status 1 when a block failed.
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^( {0,3})```(.*)$")
CREATE_EXT = re.compile(r"CREATE\s+EXTENSION\s+(IF\s+NOT\s+EXISTS\s+)?pg_infer\b",
                        re.IGNORECASE)
NORUN_NOTE = re.compile(r"<!--\s*norun:\s*\S.*-->", re.DOTALL)
PSQL_ERR = re.compile(r"^psql:[^:]*:(\d+): (ERROR|FATAL|PANIC):")
FLAGS = {"error", "norun", "output"}
# the endpoints the docs write, and stand for the harness's two workers
DOC_ENDPOINTS = ("tcp://127.0.0.1:5555", "tcp://127.0.0.1:5556")
# the placeholder of a folder of the reader's images: the OCR test images
DOC_IMAGES = "/path/to/your/images"


class Block:
    """One ```sql fence: its line (1-based, of the fence), flags, text."""

    def __init__(self, line, flags, text):
        self.line = line
        self.flags = flags
        self.text = text
        self.expected = None    # list of lines, for "output"


def parse(path):
    """The file's fenced blocks: (sql blocks, problems as (line, why))."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, problems, plain = [], [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, info = len(m.group(1)), m.group(2).split()
        start = i
        body = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        i += 1                  # the closing fence
        if info and info[0] == "sql":
            flags = set(info[1:])
            if flags - FLAGS:
                problems.append((start + 1, "unknown fence flag(s) %s (known: %s)"
                                 % (" ".join(sorted(flags - FLAGS)),
                                    " ".join(sorted(FLAGS)))))
            if "norun" in flags:
                above = start - 1
                while above >= 0 and not lines[above].strip():
                    above -= 1
                # the comment may span lines: from its "<!--" to the "-->"
                note = ""
                if above >= 0 and lines[above].rstrip().endswith("-->"):
                    top = above
                    while top > 0 and "<!--" not in lines[top]:
                        top -= 1
                    note = " ".join(lines[top:above + 1])
                if not NORUN_NOTE.search(note):
                    problems.append((start + 1, "a norun block needs a "
                                     "<!-- norun: why --> comment right above it"))
            blocks.append(Block(start + 1, flags, "\n".join(body)))
        elif not info:
            plain.append((start, body))
    # an "output" block's expected text: the plain block right after it
    for b in blocks:
        if "output" not in b.flags:
            continue
        after = [p for p in plain if p[0] > b.line - 1]
        nxt = after[0] if after else None
        if nxt is None or any(lines[k].strip() for k in
                              range(b.line + len(b.text.split("\n")) + 1, nxt[0])):
            problems.append((b.line, "an output block needs a plain ``` block "
                             "right after it"))
        else:
            b.expected = nxt[1]
    return blocks, problems


def ends_statement(text):
    """Whether a block's last line ends its statement (; or a \\ command)."""
    for ln in reversed(text.split("\n")):
        s = re.sub(r"--.*$", "", ln).strip()
        if not s:
            continue
        return s.endswith(";") or s.startswith("\\") or "\\g" in s
    return True


def psql(db, *args, **kw):
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db]
                          + list(args), capture_output=True, text=True, **kw)


def roles():
    r = psql("postgres", "-At", "-c", "SELECT rolname FROM pg_roles")
    return set(r.stdout.split())


def norm(lines):
    """Output lines as compared: runs of blanks as one blank and a header's
    rule as one dash (the columns' widths follow the endpoints), leading and
    trailing empty lines cut."""
    out = []
    for ln in lines:
        ln = " ".join(ln.split())
        out.append(re.sub(r"-+", "-", ln) if re.fullmatch(r"[-+ ]+", ln) else ln)
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def run_file(path, template, endpoints, tmpdir):
    """Runs one file; returns (passed, failed) block counts."""
    blocks, problems = parse(path)
    for b in blocks:
        if "norun" not in b.flags and not ends_statement(b.text):
            problems.append((b.line, "block does not end its statement (;)"))
    # a block with a problem fails without running; the others still run
    for line, why in sorted(problems):
        print("%s:%d: %s" % (path, line, why))
    bad = {line for line, _ in problems}
    runnable = [b for b in blocks if "norun" not in b.flags and b.line not in bad]
    if not runnable:
        if blocks:
            print("%s - %s (no block run)" % ("FAIL" if problems else "ok  ", path))
        return 0, len(problems)

    name = "docs_" + re.sub(r"[^a-z0-9]", "_", os.path.basename(path).lower()
                            .rsplit(".", 1)[0])
    fresh = any(CREATE_EXT.search(b.text) for b in runnable)
    setup = ['DROP DATABASE IF EXISTS "%s";' % name,
             'CREATE DATABASE "%s" TEMPLATE "%s";' % (name, template)]
    r = psql("postgres", "-c", setup[0], "-c", setup[1])
    if r.returncode == 0 and fresh:
        r = psql(name, "-c", "DROP EXTENSION pg_infer")
    if r.returncode != 0:
        print("%s: cannot make database %s: %s" % (path, name, r.stderr.strip()))
        print("FAIL - %s" % path)
        return 0, len(runnable) + len(problems)

    # the script: each block between markers; line map to find a failing block
    script, owner = [], {}

    def emit(text, block=None):
        for ln in text.split("\n"):
            script.append(ln)
            if block is not None:
                owner[len(script)] = block

    for n, b in enumerate(runnable):
        text = b.text
        for old, new in zip(DOC_ENDPOINTS, endpoints):
            text = text.replace(old, new)
        text = text.replace(DOC_IMAGES, os.environ["DOCS_IMAGES"])
        if "error" in b.flags:
            emit("\\set ON_ERROR_STOP 0\n\\set LAST_ERROR_SQLSTATE 00000")
        emit("\\echo @@BLOCK %d" % n)
        emit(text, b)
        if "error" in b.flags:
            emit("\\echo @@ERRSTATE :LAST_ERROR_SQLSTATE\n\\set ON_ERROR_STOP 1")
        emit("\\echo @@END %d" % n)
    spath = os.path.join(tmpdir, name + ".sql")
    with open(spath, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")
    try:
        r = psql(name, "-f", spath, timeout=900)
    except subprocess.TimeoutExpired:
        print("%s: timed out after 900 s" % path)
        print("FAIL - %s" % path)
        return 0, len(runnable) + len(problems)

    # per block: its stdout between the markers, and whether it errored
    outputs, errstate, seen = {}, {}, set()
    cur = None
    for ln in r.stdout.split("\n"):
        m = re.match(r"^@@(BLOCK|END|ERRSTATE) (\S+)$", ln)
        if m and m.group(1) == "BLOCK":
            cur = int(m.group(2))
            outputs[cur] = []
        elif m and m.group(1) == "END":
            seen.add(int(m.group(2)))
            cur = None
        elif m:
            errstate[cur] = m.group(2)
        elif cur is not None:
            outputs[cur].append(ln)
    failed_at = {}
    for ln in r.stderr.split("\n"):
        m = PSQL_ERR.match(ln)
        if m and int(m.group(1)) in owner:
            failed_at.setdefault(id(owner[int(m.group(1))]), []).append(ln)

    passed = failed = 0
    for n, b in enumerate(runnable):
        why = None
        errs = failed_at.get(id(b), [])
        if n not in seen:
            why = "did not run to its end"
            if errs:
                why = "failed: " + errs[0].split(": ", 1)[1]
            elif n == min(set(range(len(runnable))) - seen):
                why += " (psql: %s)" % (r.stderr.strip().split("\n")[-1:] or ["?"])[0]
            else:
                why = "not run (an earlier block failed)"
        elif "error" in b.flags:
            if errstate.get(n, "00000") == "00000":
                why = "was to fail (sql error) but did not"
        elif errs:
            why = "failed: " + errs[0].split(": ", 1)[1]
        if why is None and b.expected is not None:
            got = outputs.get(n, [])
            for doc_ep, real_ep in zip(DOC_ENDPOINTS, endpoints):
                got = [ln.replace(real_ep, doc_ep) for ln in got]
            got, want = norm(got), norm(b.expected)
            if got != want:
                why = "output differs:\n  expected:\n    %s\n  got:\n    %s" % (
                    "\n    ".join(want), "\n    ".join(got))
        if why:
            failed += 1
            print("%s:%d: %s" % (path, b.line, why))
        else:
            passed += 1
    failed += len(problems)
    skipped = len(blocks) - len(runnable) - len(bad)
    print("%s - %s (%d blocks run%s)" % ("ok  " if not failed else "FAIL", path,
                                         len(runnable),
                                         ", %d norun" % skipped if skipped else ""))
    if failed:
        with open(os.path.join(tmpdir, name + ".log"), "w", encoding="utf-8") as f:
            f.write(r.stdout + "\n--- stderr\n" + r.stderr)
        print("       psql's output: %s" % os.path.join(tmpdir, name + ".log"))
    return passed, failed


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    template, files = sys.argv[1], sys.argv[2:]
    endpoints = (os.environ["DOCS_ENDPOINT1"], os.environ["DOCS_ENDPOINT2"])
    tmpdir = os.environ.get("DOCS_TMP") or tempfile.mkdtemp()
    passed = failed = 0
    for path in files:
        before = roles()
        p, f = run_file(path, template, endpoints, tmpdir)
        passed, failed = passed + p, failed + f
        # roles are the cluster's: drop the ones this file made
        for role in sorted(roles() - before):
            for db in ("docs_" + re.sub(r"[^a-z0-9]", "_", os.path.basename(path)
                                        .lower().rsplit(".", 1)[0]), "postgres"):
                psql(db, "-c", 'DROP OWNED BY "%s"' % role)
            psql("postgres", "-c", 'DROP ROLE "%s"' % role)
    print("docs: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
