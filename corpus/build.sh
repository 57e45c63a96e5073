#!/usr/bin/env bash
# Build the atomx acceptance corpus: real programs from Debian 12 source
# packages, each variant linked with -Wl,--emit-relocs (relocations kept).
#
#   corpus/build.sh            build every variant (cached; a rerun does nothing)
#   corpus/build.sh --list     print the variant names, one a line
#   corpus/build.sh --only P   build only program P (or only variant P)
#
# Output: $ATOMX_CORPUS_DIR/bin/<prog>-<compiler>-<opt>[-nopie]
# (default ATOMX_CORPUS_DIR=$HOME/.cache/atomx-corpus)
# ATOMX_CORPUS_PARALLEL variants build at once (default 2), each with
# make -j$ATOMX_CORPUS_JOBS (default nproc).
set -euo pipefail

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts" && pwd)
CORPUS_DIR=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}
JOBS=${ATOMX_CORPUS_JOBS:-$(nproc 2>/dev/null || echo 2)}
SRC_DIR=$CORPUS_DIR/src
BUILD_DIR=$CORPUS_DIR/build
BIN_DIR=$CORPUS_DIR/bin
STAMP_DIR=$CORPUS_DIR/stamps
LOG_DIR=$CORPUS_DIR/logs

# --------------------------------------------------------------------------
# The variants: program compiler opt [nopie]
# Every program is built with gcc -O2 and clang -O2; a few also at -O0/-O3,
# and a few as non-PIE executables.
# --------------------------------------------------------------------------
VARIANTS=(
  "gzip gcc O2"      "gzip clang O2"
  "bzip2 gcc O2"     "bzip2 clang O2"   "bzip2 gcc O3"    "bzip2 gcc O2 nopie"
  "xz gcc O2"        "xz clang O2"
  "pbzip2 gcc O2"    "pbzip2 clang O2"
  "lua gcc O2"       "lua clang O2"     "lua gcc O0"      "lua gcc O3"   "lua clang O2 nopie"
  "sqlite3 gcc O2"   "sqlite3 clang O2"
  "lzip gcc O2"      "lzip clang O2"    "lzip gcc O0"     "lzip clang O3"
  "muparser gcc O2"  "muparser clang O2" "muparser clang O0" "muparser gcc O2 nopie"
  "bc gcc O2"        "bc clang O2"
)

# program -> Debian source package(s) it is built from
declare -A PKGS=(
  [gzip]=gzip [bzip2]=bzip2 [xz]=xz-utils [pbzip2]="pbzip2 bzip2"
  [lua]=lua5.4 [sqlite3]=sqlite3 [lzip]=lzip [muparser]=muparser
  [bc]=bc
)

# Debian packages the build needs (tcl: tclsh generates the sqlite amalgamation;
# bc: configure --with-readline insists on flex, ed makes libmath.h, and
# libreadline-dev/libncurses-dev are what it links)
TOOLS=(gcc g++ clang make dpkg-dev binutils xz-utils bzip2 tcl file
       flex ed libreadline-dev libncurses-dev)

die() { echo "build.sh: ERROR: $*" >&2; exit 1; }
log() { echo "build.sh: $*"; }

variant_name() { # prog compiler opt [nopie]
  local n="$1-$2-$3"
  [[ ${4:-} == nopie ]] && n+=-nopie
  echo "$n"
}

# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------
ONLY=
while (($#)); do
  case $1 in
    --list)
      for v in "${VARIANTS[@]}"; do variant_name $v; done
      exit 0 ;;
    --only)
      [[ $# -ge 2 ]] || die "--only needs a program or variant name"
      ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#--only=}; shift ;;
    -h|--help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done

if [[ -n $ONLY ]]; then
  found=
  for v in "${VARIANTS[@]}"; do
    set -- $v
    if [[ $1 == "$ONLY" || $(variant_name $v) == "$ONLY" ]]; then found=1; fi
  done
  [[ -n $found ]] || die "--only '$ONLY': no such program or variant (see --list)"
fi

# --------------------------------------------------------------------------
# Host setup: tools and deb-src (only touched when something is missing)
# --------------------------------------------------------------------------
APT_UPDATED=
apt_update() {
  [[ -n $APT_UPDATED ]] && return 0
  log "apt-get update"
  as_root apt-get update -qq >"$LOG_DIR/apt-update.log" 2>&1 \
    || { cat "$LOG_DIR/apt-update.log" >&2; die "apt-get update failed"; }
  APT_UPDATED=1
}

as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "'$*' needs root: run as root or install sudo"; fi
}

ensure_tools() {
  local missing=() p
  for p in "${TOOLS[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] \
      || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing build tools: ${missing[*]}"
  "$SCRIPTS/apt_install.sh" "${missing[@]}" || die "cannot install ${missing[*]}"
}

has_sources_index() {
  local out
  out=$(apt-cache showsrc --only-source bzip2 2>/dev/null || true)
  grep -q '^Package:' <<<"$out"
}

# URI of the first configured Debian archive matching a pattern (mirror that
# host), or nothing: a machine may list no security archive, or no .list file.
configured_uri() { # regex
  { grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      | sed -E 's/\[[^]]*\]//' | awk '{print $2}'
    grep -hsiE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources | sed -E 's/^[^:]*:[[:space:]]*//' | tr ' ' '\n'
  } | grep -E "$1" | head -1 || true
}

ensure_deb_src() {
  has_sources_index && return 0
  local f=/etc/apt/sources.list.d/atomx-corpus-src.sources
  if ! grep -rqsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    local codename main sec keyring
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    main=$(configured_uri '/debian/?$'); main=${main:-http://deb.debian.org/debian}
    sec=$(configured_uri '/debian-security/?$'); sec=${sec:-http://deb.debian.org/debian-security}
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    log "adding deb-src entries ($main, $sec) in $f"
    as_root tee "$f" >/dev/null <<EOF
Types: deb-src
URIs: ${main%/}
Suites: $codename $codename-updates
Components: main
Signed-By: $keyring

Types: deb-src
URIs: ${sec%/}
Suites: $codename-security
Components: main
Signed-By: $keyring
EOF
  fi
  APT_UPDATED=
  apt_update
  has_sources_index || die "no Debian source index even after adding deb-src and apt-get update"
}

# --------------------------------------------------------------------------
# Sources: apt-get source --download-only + dpkg-source -x, cached per package.
# The tree is at $SRC_DIR/<pkg>/tree, its version in $SRC_DIR/<pkg>/version.
# --------------------------------------------------------------------------
SRC_READY=
fetch_source() { # pkg
  local pkg=$1 d=$SRC_DIR/$1
  [[ -f $d/.done && -d $d/tree ]] && return 0
  if [[ -z $SRC_READY ]]; then ensure_deb_src; SRC_READY=1; fi
  rm -rf "$d"; mkdir -p "$d/dl"
  local try ok=
  for try in 1 2 3; do
    if (cd "$d/dl" && apt-get source --download-only -qq "$pkg") >"$d/download.log" 2>&1; then ok=1; break; fi
    sleep $((try * 3))
  done
  [[ -n $ok ]] || { grep -E '^(E|Err):' "$d/download.log" >&2 || tail -5 "$d/download.log" >&2
                    die "apt-get source $pkg failed"; }
  local dsc
  dsc=$(ls "$d"/dl/*.dsc | head -1)
  (cd "$d" && dpkg-source --no-check -x "$dsc" tree) >"$d/extract.log" 2>&1 \
    || { tail -5 "$d/extract.log" >&2; die "dpkg-source -x $dsc failed"; }
  sed -n 's/^Version: //p' "$dsc" | head -1 >"$d/version"
  touch "$d/.done"
  log "source $pkg $(cat "$d/version")"
}

src_tree() { echo "$SRC_DIR/$1/tree"; }
src_version() { cat "$SRC_DIR/$1/version"; }

# Fresh copy of a source tree into the variant's build dir, every file with the
# same mtime so that make never tries to rerun autotools on patched inputs.
fresh_copy() { # pkg dest
  rm -rf "$2"; mkdir -p "$(dirname "$2")"
  cp -a "$(src_tree "$1")" "$2"
  find "$2" -exec touch -h -d '2000-01-01 00:00:00' {} +
}

# Compile many sources in parallel: cc_many COMPILER FLAGS... -- FILES...
cc_many() {
  local args=()
  while [[ $1 != -- ]]; do args+=("$1"); shift; done; shift
  printf '%s\n' "$@" | xargs -P "$JOBS" -I{} sh -c 'f="$1"; shift; o=$(basename "${f%.*}").o; echo "  $* -c $f -o $o"; exec "$@" -c "$f" -o "$o"' _ {} "${args[@]}"
}

# --------------------------------------------------------------------------
# Recipes. Each runs in an empty directory $B with CC CXX CFLAGS CXXFLAGS
# LDFLAGS exported, and must leave the executable at $B/out/<prog>.
# --------------------------------------------------------------------------
build_gzip() {
  fresh_copy gzip src && cd src
  ./configure --disable-dependency-tracking --disable-silent-rules \
    CC="$CC" CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS"
  make -j"$JOBS"
  install -D -m755 gzip "$B/out/gzip"
}

bzip2_lib_objs() { # compile libbz2 sources of the bzip2 tree in cwd
  local t; t=$(src_tree bzip2)
  cc_many "$CC" $CFLAGS -D_FILE_OFFSET_BITS=64 -I"$t" -- \
    "$t"/blocksort.c "$t"/huffman.c "$t"/crctable.c "$t"/randtable.c \
    "$t"/compress.c "$t"/decompress.c "$t"/bzlib.c
}

build_bzip2() {
  mkdir obj && cd obj
  bzip2_lib_objs
  cc_many "$CC" $CFLAGS -D_FILE_OFFSET_BITS=64 -- "$(src_tree bzip2)"/bzip2.c
  "$CC" $CFLAGS $LDFLAGS -o bzip2 *.o
  install -D -m755 bzip2 "$B/out/bzip2"
}

build_pbzip2() {
  # pbzip2 (C++, pthreads) with the bzip2 library compiled in, so the
  # compression code is part of the executable too.
  local t extra=; t=$(src_tree pbzip2)
  # pre-C++11 code ("%"PRIuMAX"): clang makes that an error unless told
  [[ $CXX == clang* ]] && extra=-Wno-reserved-user-defined-literal
  mkdir obj && cd obj
  bzip2_lib_objs
  cc_many "$CXX" $CXXFLAGS $extra -pthread -D_POSIX_PTHREAD_SEMANTICS -D_LARGEFILE64_SOURCE \
    -D_FILE_OFFSET_BITS=64 -DUSE_STACKSIZE_CUSTOMIZATION -I"$(src_tree bzip2)" -- \
    "$t"/pbzip2.cpp "$t"/BZ2StreamScanner.cpp "$t"/ErrorContext.cpp
  "$CXX" $CXXFLAGS $LDFLAGS -pthread -o pbzip2 *.o
  install -D -m755 pbzip2 "$B/out/pbzip2"
}

build_xz() {
  # liblzma linked statically into xz, so the codec is part of the executable.
  fresh_copy xz-utils src && cd src
  ./configure --disable-dependency-tracking --disable-silent-rules \
    --disable-shared --enable-static --disable-nls --disable-doc --disable-scripts \
    --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links \
    CC="$CC" CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS"
  make -j"$JOBS" -C src/liblzma
  make -j"$JOBS" -C src/xz
  install -D -m755 src/xz/xz "$B/out/xz"
}

build_lua() {
  # Upstream's "make linux" without readline, as direct compiler commands.
  local t f srcs=()
  t=$(src_tree lua5.4)/src
  for f in "$t"/*.c; do [[ $(basename "$f") == luac.c ]] || srcs+=("$f"); done
  mkdir obj && cd obj
  # Debian's luaconf.h wants the header debian/rules generates
  echo "#define DEB_HOST_MULTIARCH \"$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)\"" \
    >lua5.4-deb-multiarch.h
  # Lua seeds its string hashes with the time and addresses (ASLR), indexes
  # its cache of C strings by their address, and table.sort picks random
  # pivots after a bad partition: its own build options fix all three (one
  # cache line of 2 strings, hit or missed alike wherever the strings lie),
  # so that every run -- Valgrind's included -- hashes, probes and sorts
  # alike and the oracles can compare every procedure.
  cc_many "$CC" $CFLAGS -std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX \
    '-Dluai_makeseed(L)=0x5eedu' '-Dl_randomizePivot()=0u' -DSTRCACHE_N=1 -DSTRCACHE_M=2 \
    -I"$PWD" -- "${srcs[@]}"
  "$CC" $CFLAGS $LDFLAGS -o lua *.o -lm -ldl
  install -D -m755 lua "$B/out/lua"
}

sqlite3_amalgamation() {
  # sqlite3.c + shell.c generated once from the source package (needs tclsh);
  # compiler independent, cached next to the source.
  local a=$SRC_DIR/sqlite3/amalgamation
  [[ -f $a/.done ]] && return 0
  rm -rf "$a"; mkdir -p "$a"
  fresh_copy sqlite3 "$a/src"
  ( cd "$a" && mkdir bld && cd bld
    ../src/configure --disable-tcl --disable-readline CC=gcc CFLAGS=-O0
    make sqlite3.c shell.c
    cp sqlite3.c sqlite3.h sqlite3ext.h shell.c "$a/" ) >"$a/gen.log" 2>&1 \
    || { tail -20 "$a/gen.log" >&2; die "generating the sqlite3 amalgamation failed"; }
  rm -rf "$a/src" "$a/bld"
  touch "$a/.done"
}

build_sqlite3() {
  local a=$SRC_DIR/sqlite3/amalgamation
  mkdir obj && cd obj
  cc_many "$CC" $CFLAGS -I"$a" -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS4 \
    -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_MATH_FUNCTIONS \
    -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_SOUNDEX -DSQLITE_ENABLE_COLUMN_METADATA \
    -DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_DEFAULT_FOREIGN_KEYS=0 \
    -DHAVE_USLEEP -DHAVE_FDATASYNC -- "$a"/sqlite3.c "$a"/shell.c
  "$CC" $CFLAGS $LDFLAGS -o sqlite3 sqlite3.o shell.o -lpthread -ldl -lm
  install -D -m755 sqlite3 "$B/out/sqlite3"
}

build_lzip() {
  fresh_copy lzip src && cd src
  ./configure CXX="$CXX" CPPFLAGS= CXXFLAGS="$CXXFLAGS" LDFLAGS="$LDFLAGS"
  make -j"$JOBS" lzip
  install -D -m755 lzip "$B/out/lzip"
}

build_muparser() {
  # The muparser library (C++, throws mu::ParserError) linked into its
  # interactive calculator sample (samples/example1), without OpenMP.
  local t; t=$(src_tree muparser)
  mkdir obj && cd obj
  cc_many "$CXX" $CXXFLAGS -I"$t/include" -- \
    "$t"/src/muParser.cpp "$t"/src/muParserBase.cpp "$t"/src/muParserBytecode.cpp \
    "$t"/src/muParserCallback.cpp "$t"/src/muParserError.cpp "$t"/src/muParserInt.cpp \
    "$t"/src/muParserTest.cpp "$t"/src/muParserTokenReader.cpp "$t"/samples/example1/example1.cpp
  "$CXX" $CXXFLAGS $LDFLAGS -o muparser *.o
  install -D -m755 muparser "$B/out/muparser"
}

build_bc() {
  # GNU bc configured as debian/rules does (--with-readline, and the three
  # defines it adds to CFLAGS), so it links libreadline (and through it
  # libtinfo) as shared libraries, as Debian's /usr/bin/bc does. Only lib/
  # and bc/ are built: not dc, not the docs. bc.c and scan.c come generated
  # in the tarball; libmath.h is made by the Makefile (a first bc compiles
  # libmath.b, then ed edits its output).
  fresh_copy bc src && cd src
  ./configure --disable-dependency-tracking --disable-silent-rules --with-readline \
    CC="$CC" CPPFLAGS="-D_POSIX_SOURCE -DDOT_IS_LAST -DDONTEXIT" CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS"
  make -j"$JOBS" -C lib
  make -j"$JOBS" -C bc bc
  install -D -m755 bc/bc "$B/out/bc"
}

# --------------------------------------------------------------------------
# One variant
# --------------------------------------------------------------------------
verify_binary() { # file nopie
  local f=$1 sections dyn type
  sections=$(readelf -S -W "$f") dyn=$(readelf -d "$f")
  grep -q '\.rela\.text[[:space:]]' <<<"$sections" || die "$f has no .rela.text (LDFLAGS did not reach the link)"
  grep -q '\.symtab[[:space:]]' <<<"$sections" || die "$f has no .symtab (stripped?)"
  grep -q '\.debug_info[[:space:]]' <<<"$sections" || die "$f has no debug info"
  grep -q NEEDED <<<"$dyn" || die "$f is not dynamically linked"
  type=$(readelf -h "$f" | awk '/Type:/{print $2}')
  if [[ $2 == nopie ]]; then
    [[ $type == EXEC ]] || die "$f should be non-PIE (ET_EXEC) but is $type"
  else
    [[ $type == DYN ]] || die "$f should be PIE (ET_DYN) but is $type"
  fi
}

build_variant() { # prog compiler opt [nopie]
  local prog=$1 comp=$2 opt=$3 pie=${4:-} name pkg ver=
  name=$(variant_name "$@")
  local cc cxx
  case $comp in
    gcc) cc=gcc; cxx=g++ ;;
    clang) cc=clang; cxx=clang++ ;;
    *) die "unknown compiler $comp" ;;
  esac
  local cflags="-$opt -g" ldflags="-Wl,--emit-relocs"
  if [[ $pie == nopie ]]; then cflags+=" -fno-pie"; ldflags+=" -no-pie"; fi

  for pkg in ${PKGS[$prog]}; do fetch_source "$pkg"; ver+="$pkg=$(src_version "$pkg") "; done
  [[ $prog == sqlite3 ]] && sqlite3_amalgamation

  local stamp_text
  stamp_text=$(printf '%s\n' "variant=$name" "sources=$ver" \
    "CC=$cc: $($cc --version | head -1)" "CXX=$cxx: $($cxx --version | head -1)" \
    "CFLAGS=$cflags" "CXXFLAGS=$cflags" "LDFLAGS=$ldflags" \
    "recipe=$( { declare -f "build_$prog" fresh_copy cc_many bzip2_lib_objs sqlite3_amalgamation; } | sha256sum | cut -c1-16)")
  local stamp=$STAMP_DIR/$name.stamp out=$BIN_DIR/$name
  if [[ -f $stamp && -x $out && $(cat "$stamp") == "$stamp_text" ]]; then
    echo "cached  $name"
    return 0
  fi

  local B=$BUILD_DIR/$name logf=$LOG_DIR/$name.log t0=$SECONDS
  rm -rf "$B"; mkdir -p "$B"
  # Run in the background and wait: a subshell that is an `if`/`||` operand
  # would silently ignore `set -e` inside the recipe.
  local rc=0
  ( set -euo pipefail; cd "$B"
    export B CC=$cc CXX=$cxx CFLAGS=$cflags CXXFLAGS=$cflags LDFLAGS=$ldflags LC_ALL=C
    unset CPPFLAGS MAKEFLAGS
    "build_$prog" ) >"$logf" 2>&1 </dev/null &
  wait $! || rc=$?
  if ((rc != 0)); then
    echo "---- last lines of $logf ----" >&2
    tail -25 "$logf" >&2
    die "building $name failed (full log: $logf)"
  fi
  [[ -x $B/out/$prog ]] || die "building $name produced no $B/out/$prog (log: $logf)"
  verify_binary "$B/out/$prog" "$pie"
  mkdir -p "$BIN_DIR"
  install -m755 "$B/out/$prog" "$out.tmp" && mv -f "$out.tmp" "$out"
  printf '%s\n' "$stamp_text" >"$stamp"
  rm -rf "$B"
  printf 'built   %-26s %4ds  %s %s | %s\n' "$name" $((SECONDS - t0)) "$cc" "$cflags" "$ldflags"
}

# --------------------------------------------------------------------------
mkdir -p "$SRC_DIR" "$BUILD_DIR" "$BIN_DIR" "$STAMP_DIR" "$LOG_DIR"
ensure_tools
T0=$SECONDS

selected=()
for v in "${VARIANTS[@]}"; do
  set -- $v
  if [[ -n $ONLY && $1 != "$ONLY" && $(variant_name $v) != "$ONLY" ]]; then continue; fi
  selected+=("$v")
done

# Sources first, one at a time (apt, downloads, the sqlite amalgamation).
for v in "${selected[@]}"; do
  set -- $v
  for pkg in ${PKGS[$1]}; do fetch_source "$pkg"; done
  [[ $1 == sqlite3 ]] && sqlite3_amalgamation
done

# Then the variants, PARALLEL at a time (configure scripts and the single
# big sqlite3.c compile leave a core idle otherwise). The slowest programs
# are started first; --list keeps the table's order.
PARALLEL=${ATOMX_CORPUS_PARALLEL:-2}
order=()
for first in sqlite3 muparser xz gzip; do
  for v in "${selected[@]}"; do set -- $v; [[ $1 == "$first" ]] && order+=("$v"); done
done
for v in "${selected[@]}"; do
  set -- $v
  case $1 in sqlite3|muparser|xz|gzip) ;; *) order+=("$v") ;; esac
done

running=0 failed=0
for v in "${order[@]}"; do
  if ((running >= PARALLEL)); then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
  build_variant $v &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || failed=$((failed + 1))
  running=$((running - 1))
done
((failed == 0)) || die "$failed variant(s) failed to build (see the messages above and $LOG_DIR)"
log "${#selected[@]} variant(s) ready in $BIN_DIR ($((SECONDS - T0))s)"
