#!/bin/sh
# Links libleitmotif.so, the C API a game installs, from the objects that
#   swift build -c release --target LeitmotifC --static-swift-stdlib --scratch-path .build/sdk
# compiled (the Makefile's `sdk` target runs both). Usage:
#   SDK/link-library.sh BUILD_FOLDER OUTPUT SONAME TARGET...
# BUILD_FOLDER is SwiftPM's release folder, OUTPUT the library to write, SONAME its soname
# (libleitmotif.so.MAJOR), TARGET... LeitmotifC and every Swift target it depends on.
# LINK_MAP=FILE also writes the linker's map: which archive member of the Swift runtime or
# Foundation each object pulled in, and why (how to see what drags in CoreFoundation and ICU).
#
# Why not SwiftPM's own link of the LeitmotifC product: SwiftPM links a dynamic library against
# the toolchain's shared Swift runtime (it ignores --static-swift-stdlib there), and a game must
# not need the toolchain. So the Swift runtime, Dispatch and FoundationEssentials are linked in statically
# here, from the toolchain's swift_static folder, all of their symbols kept local
# (--exclude-libs ALL), and only the lm_ functions exported (SDK/leitmotif.map). What stays
# dynamic is Debian's: OpenAL Soft, the decoders, SQLite, libsoxr, libsamplerate, libebur128, libsystemd,
# libstdc++ and glibc. --no-undefined makes a missing object or runtime library fail here, not
# in the game.
set -eu

build=$1 output=$2 soname=$3
shift 3

swiftc=$(command -v swiftc)
toolchain_bin=$(dirname "$(readlink -f "$swiftc")")
resources=$("$swiftc" -print-target-info | sed -n 's/.*"runtimeResourcePath": *"\([^"]*\)".*/\1/p')
static="${resources%/swift}/swift_static/linux"
[ -f "$static/libswiftCore.a" ] || { echo "link-library.sh: no static Swift runtime in $static" >&2; exit 1; }

objects=$(for target in "$@"; do find "$build/$target.build" -name '*.o'; done | sort)
[ -n "$objects" ] || { echo "link-library.sh: no objects under $build (build the targets first)" >&2; exit 1; }

# The libraries the Swift modules asked for (their autolink entries): the Swift ones come from
# swift_static, in one group because they refer to each other in every order; the rest are the
# system's, linked dynamically.
swift_libraries="" system_libraries=""
for flag in $("$toolchain_bin/swift-autolink-extract" $objects -o - | tr ' ' '\n' | awk 'NF && !seen[$0]++'); do
  name=${flag#-l}
  if [ -f "$static/lib$name.a" ]; then swift_libraries="$swift_libraries $flag"; else system_libraries="$system_libraries $flag"; fi
done

mkdir -p "$(dirname "$output")"
rm -f "$output.unstripped"
"$toolchain_bin/clang" -shared -o "$output.unstripped" \
  "$static/x86_64/swiftrt.o" $objects \
  -L "$static" -Wl,--start-group $swift_libraries -ldispatch -lBlocksRuntime -Wl,--end-group \
  $system_libraries -lstdc++ -lm -ldl -lpthread \
  -Wl,--no-undefined -Wl,--exclude-libs,ALL -Wl,--gc-sections -Wl,--build-id -Wl,-z,relro -Wl,-z,now \
  ${LINK_MAP:+-Wl,-Map,$LINK_MAP} -Wl,-soname,"$soname" -Wl,--version-script,"$(dirname "$0")/leitmotif.map" 2>&1 |
  grep -v "the use of \`mktemp' is dangerous" >&2 || true
[ -f "$output.unstripped" ] || { echo "link-library.sh: the link failed" >&2; exit 1; }
strip --strip-unneeded -o "$output" "$output.unstripped"
rm -f "$output.unstripped"

# The promise of the version script, checked: every exported definition is an lm_ function.
exported=$(nm -D --defined-only --extern-only "$output" | awk '{print $3}' | grep -v '^LEITMOTIF_' || true)
stray=$(printf '%s\n' "$exported" | grep -v '^lm_' || true)
[ -z "$stray" ] || { echo "link-library.sh: $output exports more than lm_ functions:" >&2; echo "$stray" >&2; exit 1; }
