#!/bin/sh
# Builds the Debian packages of the C API with dpkg-deb (the Makefile's `deb` target):
#   libleitmotif0     the library, /usr/lib/MULTIARCH/libleitmotif.so.MAJOR(.MINOR.PATCH)
#   libleitmotif-dev  the headers, the libleitmotif.so link and leitmotif.pc (pkg-config finds it
#                     with no PKG_CONFIG_PATH)
# Usage: SDK/build-deb.sh VERSION LIBRARY OUTPUT_FOLDER
# libleitmotif0's Depends come from the libraries it was linked against (its NEEDED entries),
# each through the shlibs file of the Debian package that holds it, as dpkg-shlibdeps does it.
set -eu

version=$1 library=$2 out=$3
major=${version%%.*}
architecture=$(dpkg --print-architecture)
multiarch=$(gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
debian_version="$version-1"
here=$(dirname "$0")

# The package (and minimum version) behind each library the .so needs.
depends=""
for soname in $(readelf -d "$library" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
  path=$(ldconfig -p | awk -v name="$soname" '$1 == name && /x86-64|64bit/ { print $NF; exit }')
  [ -n "$path" ] || path=$(ldconfig -p | awk -v name="$soname" '$1 == name { print $NF; exit }')
  [ -n "$path" ] || { echo "build-deb.sh: $soname is not in the linker's cache" >&2; exit 1; }
  package=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$package" ] || package=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
  [ -n "$package" ] || { echo "build-deb.sh: no Debian package holds $path" >&2; exit 1; }
  # A shlibs line is "LIBRARY SOVERSION DEPENDENCY": libopenal.so.1 is "libopenal 1 libopenal1 (>= 1:1.19.1)".
  base=${soname%%.so*} soversion=${soname#*.so.}
  dependency=$(cat "/var/lib/dpkg/info/$package:$architecture.shlibs" "/var/lib/dpkg/info/$package.shlibs" 2>/dev/null |
    awk -v base="$base" -v so="$soversion" '$1 == base && $2 == so { $1 = ""; $2 = ""; sub(/^  */, ""); print; exit }')
  [ -n "$dependency" ] || dependency=$package
  case ", $depends, " in *", $dependency, "*) ;; *) depends="${depends:+$depends, }$dependency" ;; esac
done

rm -rf "$out" && mkdir -p "$out"

# libleitmotif0
root="$out/libleitmotif$major"
install -d "$root/DEBIAN" "$root/usr/lib/$multiarch" "$root/usr/share/doc/libleitmotif$major"
install -m 644 "$library" "$root/usr/lib/$multiarch/libleitmotif.so.$version"
ln -s "libleitmotif.so.$version" "$root/usr/lib/$multiarch/libleitmotif.so.$major"
install -m 644 "$here/../LICENSE" "$root/usr/share/doc/libleitmotif$major/copyright"
echo "libleitmotif $major libleitmotif$major (>= $version)" > "$root/DEBIAN/shlibs"
printf 'activate-noawait ldconfig\n' > "$root/DEBIAN/triggers"
cat > "$root/DEBIAN/control" <<CONTROL
Package: libleitmotif$major
Version: $debian_version
Architecture: $architecture
Multi-Arch: same
Section: libs
Priority: optional
Maintainer: Leitmotif developers <leitmotif@localhost>
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Depends: $depends
Description: game music that follows the game (C API library)
 Leitmotif mixes a game's music on one sample clock: cue files map gameplay
 events to crossfades, stingers, ducks and beat-quantized transitions, over
 the game's own music and the player's music library. This package holds the
 shared library, with the Swift runtime linked in.
CONTROL

# libleitmotif-dev
dev="$out/libleitmotif-dev"
install -d "$dev/DEBIAN" "$dev/usr/include" "$dev/usr/lib/$multiarch/pkgconfig" "$dev/usr/share/doc/libleitmotif-dev"
install -m 644 "$here/../include/leitmotif.h" "$here/../include/leitmotif.hpp" "$dev/usr/include/"
ln -s "libleitmotif.so.$major" "$dev/usr/lib/$multiarch/libleitmotif.so"
sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|/usr/lib/$multiarch|" -e 's|@INCLUDEDIR@|/usr/include|' \
  -e "s|@VERSION@|$version|" "$here/leitmotif.pc.in" > "$dev/usr/lib/$multiarch/pkgconfig/leitmotif.pc"
install -m 644 "$here/../LICENSE" "$dev/usr/share/doc/libleitmotif-dev/copyright"
cat > "$dev/DEBIAN/control" <<CONTROL
Package: libleitmotif-dev
Version: $debian_version
Architecture: $architecture
Multi-Arch: same
Section: libdevel
Priority: optional
Maintainer: Leitmotif developers <leitmotif@localhost>
Installed-Size: $(du -sk "$dev/usr" | cut -f1)
Depends: libleitmotif$major (= $debian_version)
Description: game music that follows the game (C API development files)
 Leitmotif mixes a game's music on one sample clock. This package holds the
 C header leitmotif.h, the C++ header leitmotif.hpp, the link to the library
 and its pkg-config file.
CONTROL

for package in "$root" "$dev"; do
  dpkg-deb --root-owner-group --build "$package" "$out" >/dev/null
done
ls "$out"/*.deb | while read -r deb; do echo "$deb: $(du -k "$deb" | cut -f1) KiB"; done
echo "Depends of libleitmotif$major: $depends"
