#!/usr/bin/env python3
"""demo_search.py DOCDIR [MAX]: SQL that loads a text corpus for the search demo.

The corpus is real prose: the paragraphs (<p> elements) of chapters of the
PostgreSQL 15 manual as Debian's postgresql-doc-15 ships it (DOCDIR, normally
/usr/share/doc/postgresql-doc-15/html): the tutorial, data definition,
queries, indexes, concurrency control, backup, reliability and the WAL.
Paragraphs of 120 to 1500 characters, white space collapsed, in file order,
at most MAX (default 600).  Prints

    CREATE TABLE demo_docs (id int PRIMARY KEY, page text, body text);
    COPY demo_docs FROM stdin; ...

for psql.  Only the Python standard library is used.
"""
import glob
import html.parser
import os
import re
import sys

CHAPTERS = ("tutorial", "ddl", "queries", "indexes", "mvcc", "backup", "wal")


class Paragraphs(html.parser.HTMLParser):
    """Collects the text of each <p> element (nested markup flattened)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.buf = []
        self.out = []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            if self.depth == 0:
                self.buf = []
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "p" and self.depth > 0:
            self.depth -= 1
            if self.depth == 0:
                self.out.append(" ".join("".join(self.buf).split()))

    def handle_data(self, data):
        if self.depth > 0:
            self.buf.append(data)


def copy_escape(s):
    """Text in COPY's text format."""
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    docdir = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) == 3 else 600
    files = sorted(f for f in glob.glob(os.path.join(docdir, "*.html"))
                   if re.match(r"(%s)[-.]" % "|".join(CHAPTERS), os.path.basename(f)))
    if not files:
        sys.exit("demo_search: no PostgreSQL manual pages in %s "
                 "(Debian package postgresql-doc-15)" % docdir)
    rows = []
    for f in files:
        p = Paragraphs()
        with open(f, encoding="utf-8") as fh:
            p.feed(fh.read())
        for para in p.out:
            if 120 <= len(para) <= 1500 and len(rows) < limit:
                rows.append((os.path.basename(f)[:-5], para))
    print("CREATE TABLE demo_docs (id int PRIMARY KEY, page text NOT NULL, body text NOT NULL);")
    print("COPY demo_docs (id, page, body) FROM stdin;")
    for i, (page, body) in enumerate(rows, 1):
        print("%d\t%s\t%s" % (i, copy_escape(page), copy_escape(body)))
    print("\\.")


if __name__ == "__main__":
    main()
