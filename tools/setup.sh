#!/usr/bin/env bash
# setup.sh: everything a fresh Debian 12 machine needs to build, test and
# demonstrate pg_infer.  Idempotent: each step checks before it acts.
#   1. Debian packages (PostgreSQL 15 server and server-dev, ZeroMQ,
#      protobuf-c, ONNX's proto and node tests, OpenBLAS, libjpeg-turbo,
#      libpng, libexif, the packages that carry the real demo images, and
#      PostgreSQL's manual, the text corpus of the semantic-search demo,
#      clang and its libFuzzer runtime for tests/fuzz, matplotlib for
#      bench/placement's plot, libinih and libmicrohttpd for the worker's
#      config file and metrics endpoint, Chromium for the dashboard test,
#      libpq and valgrind for the example application's test);
#   2. the Python tools (ONNX Runtime, RapidOCR) in build/venv;
#   3. the models (tools/fetch_models.sh) in build/models;
#   4. the real demo images in build/real-images, with their ground truth.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

packages=(
	gcc make python3 python3-venv
	postgresql-15 postgresql-server-dev-15
	libzmq3-dev protobuf-c-compiler libprotobuf-c-dev
	libonnx-dev libonnx-testdata
	libopenblas-dev libjpeg62-turbo-dev libpng-dev libexif-dev libssl-dev
	opencv-doc python3-skimage postgresql-doc-15
	clang libclang-rt-14-dev
	python3-matplotlib
	libinih-dev libmicrohttpd-dev chromium
	libpq-dev valgrind
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: installing Debian packages: ${missing[*]}"
	sudo_cmd=()
	[ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
	"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}"
fi

# Python tools, pinned in tools/requirements.txt; the stamp records which.
venv=build/venv
stamp=$venv/.stamp
want=$(sha256sum tools/requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	echo "setup: creating $venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check -r tools/requirements.txt
	echo "$want" > "$stamp"
fi

tools/fetch_models.sh build/models

# Real photographs and scans from Debian packages, with the project's copy of
# their hand-made ground truth (tools/data/real-images.tsv).
real=build/real-images
mkdir -p "$real"
while IFS=$'\t' read -r file kind _; do
	[ "$file" = file ] && continue
	src=$(find /usr/share/doc/opencv-doc/examples /usr/lib/python3/dist-packages/skimage/data \
		-name "$file" -print -quit)
	if [ -z "$src" ]; then
		echo "setup: $file ($kind) not found in opencv-doc or python3-skimage" >&2
		exit 1
	fi
	cp -u "$src" "$real/$file"
done < tools/data/real-images.tsv
cp tools/data/real-images.tsv "$real/manifest.tsv"
echo "setup: done"
