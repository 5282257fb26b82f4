#!/usr/bin/env bash
# The container image's own files besides the jars (dist/pom.xml runs this in prepare-package; Jib
# then lays OUT over scratch as one layer):
#   OUT/opt/java                   a Java runtime made by jlink from the build's JDK, of MODULES only
#   OUT/lib/x86_64-linux-gnu/*.so  the C libraries that runtime and the jars' native libraries link to,
#   OUT/lib64/ld-linux-x86-64.so.2 and the dynamic loader, copied from this machine (found with ldd)
#   OUT/opt/java/NATIVE-LIBRARIES  which files those are and the Debian packages they came from
#   OUT/etc                        passwd/group (root and the node's user 65532), nsswitch.conf, hosts
#   OUT/tmp, OUT/var/lib/limiter   empty: scratch space (Netty unpacks its native library there) and data
# So the image is specific to glibc on x86-64 and to the build machine's library versions.
#
# Usage: root-filesystem.sh JAVA_HOME MODULES ETC_DIR OUT CLASSPATH
set -euo pipefail

if [ $# -ne 5 ]; then
  echo "usage: $0 JAVA_HOME MODULES ETC_DIR OUT CLASSPATH" >&2
  exit 2
fi
java_home="$1"; modules="$2"; etc_dir="$3"; out="$4"; classpath="$5"
[ -x "$java_home/bin/jlink" ] || { echo "$0: no jlink in $java_home/bin (a JDK, not a JRE, must run the build)" >&2; exit 1; }
[ -d "$java_home/jmods" ] || { echo "$0: no $java_home/jmods: jlink needs the JDK's jmods" >&2; exit 1; }
command -v ldd >/dev/null || { echo "$0: ldd not found (Debian's libc-bin)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/opt" "$out/lib/x86_64-linux-gnu" "$out/lib64" "$out/etc" "$out/tmp" "$out/var/lib/limiter"

# No --compress: the image layer is gzipped as a whole, which makes a smaller layer than zip-compressed
# modules gzipped again, in a third of the time (measured: docs/production.md#the-container-image).
"$java_home/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
  --output "$out/opt/java"
# A Debian JDK links some files (lib/security/cacerts) to /etc: the image has only what is in it.
find "$out/opt/java" -type l | while read -r link; do cp --remove-destination -L "$link" "$link.tmp" && mv "$link.tmp" "$link"; done

# What ldd is asked about: the launcher, every library of the runtime, and the native libraries the
# jars unpack at run time (Netty's epoll and io_uring transports, Ratis's shaded Netty).
natives="$(mktemp -d)"
trap 'rm -rf "$natives"' EXIT
IFS=':' read -r -a jars <<< "$classpath"
for jar in "${jars[@]}"; do
  case "$jar" in *.jar) unzip -q -o "$jar" 'META-INF/native/*x86_64*.so' -d "$natives/$(basename "$jar")" 2>/dev/null || true ;; esac
done
mapfile -t objects < <(find "$out/opt/java" "$natives" -type f \( -name '*.so' -o -path '*/bin/*' \))

declare -A needed=()
for object in "${objects[@]}"; do
  # A line "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)", or the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)".
  while read -r name arrow path _; do
    if [ "$arrow" = "=>" ]; then
      case "$path" in
        "$out"/*) ;;                       # the runtime's own libraries (libjli.so, ...)
        not) # libjvm.so: the runtime's libraries find it loaded already; anything else is missing
          [ -n "$(find "$out/opt/java" -name "$name" -print -quit)" ] ||
            { echo "$0: $object needs $name, which this machine does not have" >&2; exit 1; } ;;
        /*) needed["$name"]="$path" ;;
      esac
    elif [ "${name#/}" != "$name" ]; then
      needed["$name"]="$name"
    fi
  done < <(ldd "$object" 2>/dev/null | grep -v 'linux-vdso' || true)
done
[ -n "${needed[libc.so.6]:-}" ] || { echo "$0: ldd found no libc.so.6: is this a glibc system?" >&2; exit 1; }

package_of() {
  local real="$1" candidate owner
  for candidate in "$real" "${real#/usr}" "/usr$real"; do
    owner="$(dpkg-query -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1-2)" || true
    if [ -n "$owner" ]; then
      echo "$owner $(dpkg-query -W -f='${Version}' "$owner" 2>/dev/null)"
      return
    fi
  done
  echo "(not from a Debian package)"
}

{
  echo "# The C libraries of this image, copied from the machine that built it (ldd of the runtime and the jars' native libraries)."
  echo "# java: $("$java_home/bin/java" -version 2>&1 | sed -n 2p)"
  [ -r /etc/os-release ] && echo "# built on: $(. /etc/os-release && echo "$PRETTY_NAME")"
  for name in $(printf '%s\n' "${!needed[@]}" | sort); do
    source_path="${needed[$name]}"
    if [ "${name#/}" != "$name" ]; then
      target="$out$name"   # the loader, at the path every binary names: /lib64/ld-linux-x86-64.so.2
    else
      target="$out/lib/x86_64-linux-gnu/$name"
    fi
    cp -L "$source_path" "$target"
    echo "${target#"$out"} $(package_of "$(readlink -f "$source_path")")"
  done
} > "$out/opt/java/NATIVE-LIBRARIES"

cp "$etc_dir"/passwd "$etc_dir"/group "$etc_dir"/nsswitch.conf "$etc_dir"/hosts "$out/etc/"
echo "$0: $(du -sh "$out" | cut -f1) in $out ($(( ${#needed[@]} )) C libraries)"
