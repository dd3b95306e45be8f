# Leitmotif's everyday commands. `make test` and `make demo` work on a fresh Debian machine with
# Swift: they install the Debian packages the project needs first (as root), or print the exact
# apt-get line to run (otherwise) and stop.

# C libraries the package links (OpenAL Soft, libvorbis/vorbisfile/vorbisenc, libmpg123, libFLAC, opusfile, libsndfile, SQLite,
# libsamplerate, libsoxr, SoundTouch, libebur128),
# pkg-config for SwiftPM to find them, lame for the benchmark's MP3 and the fixture script, CMake
# for the C example (Examples/c-game), and a real sound server for the device-loss test
# (PulseAudio with a null sink, recorded with parec); libsystemd's sd-bus for MPRIS, and a session
# bus of the tests' own (dbus-daemon) with playerctl as the desktop's client.
PACKAGES := pkg-config libopenal-dev libvorbis-dev libmpg123-dev libflac-dev libopusfile-dev libsndfile1-dev libsqlite3-dev libsamplerate0-dev libsoxr-dev libsoundtouch-dev libebur128-dev libsystemd-dev lame tmux cmake \
  pulseaudio pulseaudio-utils dbus-daemon playerctl

.PHONY: deps test test-tsan fuzz soak demo bench format fixtures assets sdk install uninstall deb c-api examples c-game docs

deps:
	@missing=$$(for package in $(PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q 'install ok installed' || echo $$package; \
	  done | tr '\n' ' ' | sed 's/ *$$//'); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	  else \
	    echo "missing Debian packages; install them with:"; \
	    echo "  sudo apt-get install -y $$missing"; \
	    exit 1; \
	  fi; \
	fi

# Swift 6's incremental build can keep a module compiled against an older layout of a type it
# reaches through the re-exporting Leitmotif module (swiftlang/swift#89636): the program then
# corrupts memory at random (a test process, the bench and a C program on the SDK crashed so).
# $(call fresh,DIR) throws the build folder DIR away when Sources or Package.swift changed since
# it was last built, so every build below is made from one set of sources.
define fresh
@stamp="$$(files=$$(find Sources Package.swift -type f | LC_ALL=C sort); { echo "$$files"; echo "$$files" | xargs -d '\n' cat; } | cksum)"; \
if [ "$$stamp" != "$$(cat $(1).sources 2>/dev/null)" ]; then \
  if [ -d $(1) ]; then echo "sources changed since $(1) was built: building it clean"; fi; \
  rm -rf $(1) && mkdir -p $(dir $(1)) && echo "$$stamp" > $(1).sources; \
fi
endef
DEBUG_BUILD = $(shell swift build --show-bin-path)

# The tests; the SDK and the examples first, because tests install the one and run the others.
test: deps sdk examples
	$(call fresh,$(DEBUG_BUILD))
	swift test

# The tests under the thread sanitizer, built in their own scratch path so the normal build stays.
# Pass test options through TEST_FLAGS, e.g. `make test-tsan TEST_FLAGS="--filter EventBus"`.
# Known false positive: Swift's Mutex on Linux hands a contended lock over in the kernel
# (FUTEX_LOCK_PI), which ThreadSanitizer cannot see, so two accesses inside the same
# `Mutex.withLock` can be reported as a "Swift access race" when the lock was contended. The ones
# seen are suppressed by name, each closure on its own (Tests/tsan-suppressions.txt says which).
test-tsan: deps
	TSAN_OPTIONS="suppressions=$(CURDIR)/Tests/tsan-suppressions.txt $(TSAN_OPTIONS)" \
	  swift test --sanitize=thread --scratch-path .build/tsan $(TEST_FLAGS)

# The fuzzers (libFuzzer, with AddressSanitizer): each target of Sources/LeitmotifFuzzTargets for
# FUZZ_SECONDS (default 60), from the committed seeds in Fuzz/Corpus/TARGET. New inputs collect in
# .build/fuzz-corpus/TARGET; an input that crashes, hangs (10 s) or leaks is written to
# Fuzz/Crashes/TARGET/, where `make test` replays it from then on (commit it with the fix).
# Leaks of the C libraries that are known upstream are suppressed (Fuzz/lsan-suppressions.txt).
# The driver is a package of its own (Fuzz/), built in its own scratch path.
# FUZZ_TARGETS picks some, e.g. `make fuzz FUZZ_TARGETS=vorbis FUZZ_SECONDS=600`.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= cue-file level-script vorbis mp3 flac opus wav tags playlist consent
fuzz: deps
	@mkdir -p .build
	@echo "building the fuzz driver (-sanitize=fuzzer,address) in .build/fuzz"
	@swift build --package-path Fuzz --scratch-path .build/fuzz -Xswiftc -sanitize=fuzzer,address \
	  > .build/fuzz-build.log 2>&1 || { grep -v "Cannot export local symbol" .build/fuzz-build.log; exit 1; }
	@status=0; for target in $(FUZZ_TARGETS); do \
	  mkdir -p .build/fuzz-corpus/$$target Fuzz/Crashes/$$target; \
	  LEITMOTIF_FUZZ_TARGET=$$target SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=Fuzz/lsan-suppressions.txt \
	    .build/fuzz/debug/LeitmotifFuzz \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=Fuzz/Crashes/$$target/ .build/fuzz-corpus/$$target Fuzz/Corpus/$$target \
	    > .build/fuzz-$$target.log 2>&1 || status=1; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' .build/fuzz-$$target.log); \
	  seconds=$$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' .build/fuzz-$$target.log); \
	  kept=$$(ls .build/fuzz-corpus/$$target | wc -l); \
	  found=$$(grep -m1 -E "^==[0-9]+==ERROR|^SUMMARY|Test unit written to" .build/fuzz-$$target.log); \
	  echo "fuzz $$target: $${runs:-?} inputs in $${seconds:-?} s, $$kept kept in .build/fuzz-corpus/$$target, $${found:-no crash, hang or leak}"; \
	done; \
	if [ $$status != 0 ]; then echo "a fuzzer found something: see .build/fuzz-TARGET.log and Fuzz/Crashes/"; fi; \
	exit $$status

# The soak: SOAK_MINUTES (default 30) of live playback under load, in release mode (see
# Sources/LeitmotifBench/SoakBenchmark.swift). It prints its figures; it is not a test.
SOAK_MINUTES ?= 30
soak: deps
	swift run -c release leitmotif-bench soak --minutes $(SOAK_MINUTES)

# The demo level: real time with a sound card, else rendered offline to demo-level.wav (and a
# timeline picture). DEMO_FLAGS passes options, e.g. `make demo DEMO_FLAGS="--library ~/Music"`.
# The command-line tool is built too: `--pick` runs its terminal picker. Both in release: the
# debug build measures music about 35 times slower (a new 2-minute WAV named in the cue file took
# 28 s to reload, against 0.8 s; a player's library scanned at 4x real time), and the release
# build takes about as long to make (2.2 min here). A release build made from other sources is
# thrown away first (`fresh`, above).
demo: deps
	$(call fresh,$(shell swift build -c release --show-bin-path))
	swift build -c release --product leitmotif
	swift run -c release leitmotif-demo $(DEMO_FLAGS)

# A release build made from other sources is thrown away first (`fresh`, above): a bench built
# incrementally across a layout change crashed at random (see the README).
bench: deps
	$(call fresh,$(shell swift build -c release --show-bin-path))
	swift build -c release --product leitmotif-bench
	swift run -c release leitmotif-bench all

# The reference documentation: the Leitmotif module's symbol graph (made by the compiler, no
# package plugin) and the catalogue in Sources/Leitmotif/Leitmotif.docc, through the toolchain's
# docc. Built in its own scratch path, so the symbol-graph flags do not make the normal build
# start over. The graph of Leitmotif holds the re-exported LeitmotifDecoding and LeitmotifOutput
# symbols too; docc takes one module, so only that graph is handed over. (docc 6.3's
# --experimental-transform-for-static-hosting-with-content, pages readable from file://, crashes
# on Linux in FoundationXML, so the archive is served instead.)
# The compiler writes a module's graph only when it compiles that module, and a doc comment changed
# in a lower layer does not make the umbrella compile again: the umbrella's one file is touched so
# that its graph (which holds the comments of everything it re-exports) is always written afresh.
# DOCC_FLAGS passes options, e.g. `make docs DOCC_FLAGS=--analyze`.
DOCS_GRAPHS := .build/docs-build/symbol-graphs
docs: deps
	touch Sources/Leitmotif/Leitmotif.swift
	swift build --scratch-path .build/docs-build --target Leitmotif \
	  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(DOCS_GRAPHS)
	rm -rf .build/docs-graphs .build/docs/Leitmotif.doccarchive && mkdir -p .build/docs-graphs .build/docs
	cp $(DOCS_GRAPHS)/Leitmotif.symbols.json .build/docs-graphs/
	docc convert Sources/Leitmotif/Leitmotif.docc --additional-symbol-graph-dir .build/docs-graphs \
	  --fallback-display-name Leitmotif --fallback-bundle-identifier org.leitmotif.Leitmotif \
	  --transform-for-static-hosting \
	  --output-path .build/docs/Leitmotif.doccarchive $(DOCC_FLAGS)
	@echo "The documentation is in .build/docs/Leitmotif.doccarchive. To read it:"
	@echo "  python3 -m http.server 8000 --directory .build/docs/Leitmotif.doccarchive"
	@echo "  then open http://localhost:8000/documentation/leitmotif/"
	@echo "(a browser does not load the pages' data from file:// URLs: serve the folder), or"
	@echo "  docc preview Sources/Leitmotif/Leitmotif.docc --additional-symbol-graph-dir .build/docs-graphs"

format:
	swift format --in-place --recursive Package.swift Sources Tests Demo Examples/hello-music

# Remakes the committed MP3 test files (they are small and made from sox tones; see the script).
fixtures:
	@$(MAKE) -s deps PACKAGES="sox lame"
	sh Tests/LeitmotifTests/Fixtures/make-mp3-fixtures.sh

# Remakes the bundled default music in Assets/music (composed and synthesised in code; see
# Assets/README.md). Deterministic: the same seed gives the same bytes. Then its shipped analyses
# (Assets/music/.leitmotif/analysis: loudness, tempo, beats, energy), so a player's first launch
# reads them instead of decoding every piece; a test fails when they are stale.
assets: deps
	swift run -c release leitmotif-compose --out Assets/music
	swift run -c release leitmotif cues analyze Assets/music

# The C API as a game installs it (SDK/ holds the parts): libleitmotif.so.MAJOR.MINOR.PATCH
# (soname libleitmotif.so.MAJOR) with the Swift runtime, Dispatch and FoundationEssentials linked in, so a
# game needs no Swift toolchain to run; include/leitmotif.h and leitmotif.hpp (RAII for C++);
# lib/pkgconfig/leitmotif.pc. Only the
# lm_ functions are exported (SDK/leitmotif.map). VERSION holds the version, and the header's
# LM_VERSION_* must say the same.
#   make sdk                      builds it (release) into .build/sdk/lib, when missing or stale
#   sudo make install             installs it into PREFIX (default /usr/local); `make uninstall`
#   make install PREFIX=~/sdk     anywhere; DESTDIR=... stages it (packagers)
#   make deb                      Debian packages libleitmotif0 and libleitmotif-dev in .build/deb
VERSION := $(shell cat VERSION)
MAJOR := $(firstword $(subst ., ,$(VERSION)))
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
SDK_LIBRARY := .build/sdk/lib/libleitmotif.so.$(VERSION)
# LeitmotifC and every Swift target it depends on (Package.swift): the objects the library holds.
SDK_TARGETS := LeitmotifC Leitmotif LeitmotifDesktop LeitmotifCues LeitmotifPlayers LeitmotifLibrary LeitmotifAnalysis \
  LeitmotifEngine LeitmotifOutput LeitmotifDecoding

sdk: deps
	@header=$$(sed -n 's/^#define LM_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' include/leitmotif.h | paste -sd.); \
	if [ "$$header" != "$(VERSION)" ]; then \
	  echo "VERSION says $(VERSION) but include/leitmotif.h's LM_VERSION_* say $$header: make them agree"; exit 1; \
	fi
	$(call fresh,.build/sdk)
	swift build -c release --target LeitmotifC --static-swift-stdlib --scratch-path .build/sdk
	@if [ ! -f $(SDK_LIBRARY) ] || [ -n "$$(find .build/sdk/release/ SDK -newer $(SDK_LIBRARY) \( -name '*.o' -o -path 'SDK/*' \) | head -1)" ]; then \
	  echo "linking $(SDK_LIBRARY)"; \
	  sh SDK/link-library.sh .build/sdk/release $(SDK_LIBRARY) libleitmotif.so.$(MAJOR) $(SDK_TARGETS) || exit 1; \
	fi
	@echo "$(SDK_LIBRARY): $$(du -k $(SDK_LIBRARY) | cut -f1) KiB, needs $$(readelf -d $(SDK_LIBRARY) | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | paste -sd' ')"

install: sdk
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 644 include/leitmotif.h include/leitmotif.hpp $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(SDK_LIBRARY) $(DESTDIR)$(LIBDIR)/libleitmotif.so.$(VERSION)
	ln -sf libleitmotif.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libleitmotif.so.$(MAJOR)
	ln -sf libleitmotif.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libleitmotif.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	  -e 's|@VERSION@|$(VERSION)|' SDK/leitmotif.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/leitmotif.pc
	@# The dynamic linker's cache, for a system folder such as /usr/local/lib (not when staging).
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	@echo "installed Leitmotif $(VERSION) in $(DESTDIR)$(PREFIX): $$(du -ck $(DESTDIR)$(INCLUDEDIR)/leitmotif.h $(DESTDIR)$(INCLUDEDIR)/leitmotif.hpp $(DESTDIR)$(LIBDIR)/libleitmotif.so.$(VERSION) $(DESTDIR)$(LIBDIR)/pkgconfig/leitmotif.pc | tail -1 | cut -f1) KiB"

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/leitmotif.h $(DESTDIR)$(INCLUDEDIR)/leitmotif.hpp $(DESTDIR)$(LIBDIR)/pkgconfig/leitmotif.pc \
	  $(DESTDIR)$(LIBDIR)/libleitmotif.so $(DESTDIR)$(LIBDIR)/libleitmotif.so.$(MAJOR) \
	  $(DESTDIR)$(LIBDIR)/libleitmotif.so.$(VERSION)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

deb: sdk
	sh SDK/build-deb.sh $(VERSION) $(SDK_LIBRARY) .build/deb

# The C API for working on it: the SDK installed into .build/prefix, for the C example below.
#   PKG_CONFIG_PATH=$(CURDIR)/.build/prefix/lib/pkgconfig pkg-config --cflags --libs leitmotif
c-api:
	@$(MAKE) -s install PREFIX=$(CURDIR)/.build/prefix

# The examples (Examples/): hello-music, a Swift package of its own that depends on this one by
# path (built in .build/examples/hello-music), and c-game, built with CMake through pkg-config
# against the SDK installed into .build/prefix (`make c-api`), in .build/examples/c-game.
# `make test` builds them first; the tests run them. hello-music's build starts afresh when
# Sources/ changed (`fresh`): besides the layout bug, SwiftPM does not see a source file added to
# or removed from this package when it builds it as hello-music's dependency (the build then
# fails to find a new type).
examples: c-api
	$(call fresh,.build/examples/hello-music)
	swift build --package-path Examples/hello-music --scratch-path .build/examples/hello-music
	PKG_CONFIG_PATH=$(CURDIR)/.build/prefix/lib/pkgconfig cmake -S Examples/c-game -B .build/examples/c-game \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-Werror > .build/examples-cmake.log || { cat .build/examples-cmake.log; exit 1; }
	cmake --build .build/examples/c-game

# The C example, run: rendered offline to .build/c-game.wav by default; C_GAME_FLAGS="" plays it live.
C_GAME_FLAGS ?= --offline .build/c-game.wav
c-game: examples
	.build/examples/c-game/c-game $(C_GAME_FLAGS)
