/*
 * leitmotif.h: Leitmotif's C API (libleitmotif.so; SwiftPM's own build calls it libLeitmotifC.so), C99, usable from C++.
 *
 * Install it:  make sdk && sudo make install   (libleitmotif.so, this header, leitmotif.pc in
 *                                                /usr/local; PREFIX=... elsewhere; make deb for
 *                                                Debian packages)
 * Build with:  cc game.c $(pkg-config --cflags --libs leitmotif)
 *
 * ## Versions
 *
 * Semantic versions: LM_VERSION_MAJOR/MINOR/PATCH below are this header's, lm_version() is the
 * library's. Within a major version the library only adds (functions, enum values, lm_config
 * fields at the end, which struct_size governs), so a program built against an older header of
 * the same major runs with a newer library; the library's soname (libleitmotif.so.MAJOR)
 * changes with the major version. lm_engine_create checks this when the game starts: a header
 * of another major version, or newer than the library, is refused with LM_ERROR_VERSION.
 *
 * ## Conventions (they hold for every function below)
 *
 * Errors: every function returns an lm_error (LM_OK is 0). A NULL, destroyed or made-up engine
 * handle is LM_ERROR_INVALID_HANDLE; a NULL pointer where one is required, a string that is not
 * valid UTF-8, or a number out of its stated range is LM_ERROR_INVALID_ARGUMENT. None of these
 * crash the process. After an error, lm_engine_last_error(engine) says what failed and why;
 * lm_last_error() does the same for the calling thread's last failed call on any engine, or on
 * none (lm_engine_create, an invalid handle).
 *
 * Handles: an lm_engine * is an opaque token, never a pointer to memory: do not dereference
 * it. It encodes a slot and a generation, so a handle used after lm_engine_destroy is detected
 * (LM_ERROR_INVALID_HANDLE), even when a new engine took its slot.
 *
 * Strings in: every const char * argument is NUL-terminated UTF-8, read during the call only
 * (Leitmotif copies what it keeps). Strings out: what describes the music (lm_now_playing,
 * lm_get_state) is copied into the caller's buffers; error names are static; error messages
 * and a report's strings are owned by Leitmotif, never freed by the caller, and each function
 * says how long they stay valid.
 *
 * Threads: each function's comment says from which threads it may be called. "Any thread" means
 * concurrently with every other function on the same engine, lm_engine_destroy excepted: a
 * call that races with lm_engine_destroy of the same engine either completes normally or
 * returns LM_ERROR_INVALID_HANDLE, never crashes. Callbacks say on which thread they run.
 * Every call finds its engine in the handle table under a short lock (a lookup, no I/O); the
 * calls that "never block" take no other lock than that one.
 *
 * Audio callbacks: a game that renders offline from its sound card's callback, or posts from
 * its audio thread, may call these there; they open and read no file, and wait on nothing that
 * decodes or does I/O:
 *   lm_post, lm_set_parameter  no allocation either (after the first call of the process);
 *   lm_render                  files are opened ahead on the engine's loader thread, as soon as
 *                              a change is scheduled; a step waits for the loader only when
 *                              what it must play now is still opening (a cue posted just before
 *                              for a file not open yet: that file's open, about a millisecond
 *                              for the bundled music); it allocates while the director acts;
 *   lm_error_name, lm_version, lm_get_sample_rate, lm_engine_last_error, lm_last_error.
 * Not from an audio callback: everything else. lm_engine_create, lm_engine_destroy, lm_start
 * (offline, it opens the first music), lm_preload and the library calls do I/O; lm_now_playing,
 * lm_get_state, lm_get_parameter and the commands take locks the director holds while it
 * decides, and allocate.
 *
 * Platforms: 64-bit Linux (a handle's 64 bits carry a tag, a generation and a slot).
 */
#ifndef LEITMOTIF_H
#define LEITMOTIF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. lm_version() returns the library's, to compare at run time. */
#define LM_VERSION_MAJOR 0
#define LM_VERSION_MINOR 3
#define LM_VERSION_PATCH 0
#define LM_VERSION ((LM_VERSION_MAJOR * 10000) + (LM_VERSION_MINOR * 100) + LM_VERSION_PATCH)

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

typedef enum lm_error {
  LM_OK = 0,
  /* NULL, destroyed (stale) or never-issued engine handle. */
  LM_ERROR_INVALID_HANDLE = 1,
  /* A NULL pointer where one is required, bad UTF-8, an out-of-range number, an unknown enum
     value, a struct_size too small, an unknown parameter name. */
  LM_ERROR_INVALID_ARGUMENT = 2,
  /* The cue file is missing or invalid (the message lists every problem with line and column). */
  LM_ERROR_CUE_FILE = 3,
  /* No output could be opened (a named device that does not exist, an unsupported format). */
  LM_ERROR_OUTPUT = 4,
  /* The music library refused (no usage description to ask with, or an index error). */
  LM_ERROR_LIBRARY = 5,
  /* The event bus was full: this event was dropped (and is reported as LM_REPORT_DROPPED). */
  LM_ERROR_BUS_FULL = 6,
  /* The call does not fit the engine's mode: lm_render on a real-time engine, lm_update on an
     offline or own-thread engine, lm_engine_destroy or lm_flush_reports from inside one of the
     engine's own callbacks. */
  LM_ERROR_WRONG_MODE = 7,
  /* The engine table is full (65535 engines alive at once). */
  LM_ERROR_TOO_MANY_ENGINES = 8,
  /* The program was built against a leitmotif.h this library cannot serve: another major
     version, or a newer one (the message names both versions). */
  LM_ERROR_VERSION = 9,
  /* Something the system does not have: no session bus for the desktop calls (a server, a
     container). The game plays on without it. */
  LM_ERROR_UNAVAILABLE = 10,
  /* A music file could not be kept in memory (lm_preload): it does not open or decode to its
     end, or it would not fit the preload budget. It still plays, streamed. The message names
     the file and why. */
  LM_ERROR_AUDIO_FILE = 11
} lm_error;

/* The enumerator's name ("LM_ERROR_BUS_FULL"), a static string; "LM_ERROR_UNKNOWN" for other
   values. Any thread. */
const char *lm_error_name(lm_error error);

/* The library's version as LM_VERSION computes it. Any thread. */
int lm_version(void);

/* ---------------------------------------------------------------------------------------------
 * Creating and destroying an engine
 * ------------------------------------------------------------------------------------------- */

/* An engine: its output, the music director for one cue file, its queue player, and the
   player's music library. Opaque; see "Handles" above. */
typedef struct lm_engine lm_engine;

typedef enum lm_output_kind {
  /* The system's default device; headless (real time, no sound) where there is no sound card. */
  LM_OUTPUT_DEFAULT_DEVICE = 0,
  /* An OpenAL playback device by name (lm_config.device_name). */
  LM_OUTPUT_NAMED_DEVICE = 1,
  /* No sound, in real time, even where a sound card exists (servers, tests). */
  LM_OUTPUT_HEADLESS = 2,
  /* Nothing plays by itself: lm_render mixes on demand, faster than real time, and the same
     samples every run. */
  LM_OUTPUT_OFFLINE = 3
} lm_output_kind;

typedef enum lm_clocking {
  /* The director runs on a thread of its own ("lm.director"). */
  LM_CLOCKING_OWN_THREAD = 0,
  /* The game calls lm_update once per frame; the director's work happens in that call. */
  LM_CLOCKING_PUMPED = 1
} lm_clocking;

/* How far ahead of OpenAL's mixer a real-time engine keeps the music (offline and headless
   engines mix on demand and ignore it). Since 0.2. */
typedef enum lm_latency {
  /* A device period and 32 ms queued; the streaming thread wakes once a period. An immediate
     action over playing music (a stinger, play, a media key) is heard after about 47 ms (median
     on OpenAL's wave backend, 48 kHz, 1024-frame periods); a wake-up ~30 ms late costs nothing. */
  LM_LATENCY_STANDARD = 0,
  /* A device period and 10.7 ms queued; the streaming thread wakes twice a period and when a
     command comes: about 30 ms, for twice the wake-ups and less room. After an underrun the
     engine keeps 10.7 ms more queued, up to the standard amount, and says so in a notice. */
  LM_LATENCY_LOW = 1
} lm_latency;

typedef enum lm_diagnostic_severity {
  LM_DIAGNOSTIC_NOTICE = 0,
  LM_DIAGNOSTIC_WARNING = 1,
  LM_DIAGNOSTIC_ERROR = 2
} lm_diagnostic_severity;

/* Receives the engine's notices, warnings and errors (the library never prints). `message` is
   valid during the call only. Runs on any thread: the thread calling lm_engine_create (while it
   opens the output), the engine's notification thread ("lm.notify"), or, offline, the thread
   calling lm_render. Must be thread-safe and return quickly; it must not call
   lm_engine_destroy. */
typedef void (*lm_diagnostic_fn)(lm_diagnostic_severity severity, const char *message, void *user_data);

/* How to make an engine. Start from lm_config_defaults() (or zero it with memset and set
   struct_size to sizeof(lm_config)), then set the fields you need: the zero value of every
   field is its default. struct_size lets later versions add fields at the end: a library reads
   only the fields a caller's struct_size covers. */
typedef struct lm_config {
  size_t struct_size;
  /* Required: whose consent to the music library this is (the answer is remembered per id),
     e.g. "com.example.mygame". Non-empty UTF-8. */
  const char *application_id;
  /* The sentence the player reads when asked for their music library; NULL: nobody can be
     asked (lm_library_request_authorization then fails with LM_ERROR_LIBRARY). */
  const char *usage_description;
  /* Required: the cue file (JSON5), e.g. "Assets/cues.json5". */
  const char *cue_file;
  lm_output_kind output;
  /* LM_OUTPUT_NAMED_DEVICE only: the OpenAL device name. */
  const char *device_name;
  /* LM_OUTPUT_OFFLINE only: mixing rate, 8000 to 192000 (0: 48000) ... */
  int sample_rate;
  /* ... and frames per mix, 16 to 8192 (0: 256): the most a change can lag its event. */
  int render_frames;
  /* Real-time engines: who advances the director. Offline engines ignore it (lm_render does). */
  lm_clocking clocking;
  /* The player's music folder for `library` sources, any bytes (need not be UTF-8);
     NULL: XDG_MUSIC_DIR, else ~/Music. */
  const char *library_folder;
  /* Events the bus holds before posts are dropped, 2 to 1048576 (0: 4096). */
  int bus_capacity;
  /* Reload the cue file when it changes (real-time engines): nonzero yes. */
  int watch_cue_file;
  /* Optional: receives diagnostics from the start (see lm_diagnostic_fn). */
  lm_diagnostic_fn diagnostic_callback;
  void *diagnostic_user_data;
  /* Since 0.2 (a 0.1 struct_size ends before it: standard): see lm_latency. */
  lm_latency latency;
} lm_config;

/* A config with every field at its default and struct_size set: `lm_config config =
   lm_config_defaults();`, then the fields you need. Clean at -Wall -Wextra in C and C++, where
   `= {0}` is a missing-field-initializers warning in C++. (Inline: not a library function.) */
static inline lm_config lm_config_defaults(void) {
  lm_config config;
  memset(&config, 0, sizeof config);
  config.struct_size = sizeof config;
  return config;
}

/* Makes an engine: opens the output, reads the cue file and the bundled music's tags. Does I/O:
   call it while the game loads, not in its frame loop. The music does not start until lm_start
   (or the first lm_update / lm_render).
   On success *out is the new handle; on failure *out is NULL and lm_last_error() says why
   (LM_ERROR_CUE_FILE lists every problem of the file).
   Errors: LM_ERROR_INVALID_ARGUMENT, LM_ERROR_CUE_FILE, LM_ERROR_OUTPUT, LM_ERROR_TOO_MANY_ENGINES,
   LM_ERROR_VERSION (see "Versions" above).
   Thread safety: any thread.
   lm_engine_create is a macro that passes this header's LM_VERSION on to
   lm_engine_create_versioned, which checks it against the library's before anything else.
   Bindings from other languages, which do not see macros, call lm_engine_create_versioned with
   the version of the header they were written against. */
lm_error lm_engine_create_versioned(const lm_config *config, lm_engine **out, int header_version);
#define lm_engine_create(config, out) lm_engine_create_versioned((config), (out), LM_VERSION)

/* Stops the director and the music, closes the output and invalidates the handle: every later
   call with it returns LM_ERROR_INVALID_HANDLE. Waits for a callback of this engine that is
   running on another thread to return; no callback of this engine starts after it returns.
   Strings the engine handed out become invalid.
   Thread safety: any thread, but not from inside one of this engine's callbacks (reports,
   beats, markers, diagnostics, consent, system music, and the prompt and scan progress that
   lm_library_request_authorization and lm_library_scan call): LM_ERROR_WRONG_MODE. A second destroy of the same handle is LM_ERROR_INVALID_HANDLE. */
lm_error lm_engine_destroy(lm_engine *engine);

/* The message of the last failed call on `engine` made by the calling thread ("" if none; a
   fixed sentence for an invalid handle). Never NULL. Owned by the engine: valid until the
   calling thread's next call on this engine (any lm_* function taking it) or lm_engine_destroy.
   Thread safety: any thread; each thread sees its own last error. */
const char *lm_engine_last_error(lm_engine *engine);

/* The message of the calling thread's last failed call of any lm_* function ("" if none). Never
   NULL. Owned by the library: valid until the calling thread's next lm_* call. Use it when
   lm_engine_create failed (there is no engine to ask). Thread safety: any thread (per thread). */
const char *lm_last_error(void);

/* ---------------------------------------------------------------------------------------------
 * Music from memory or the game's own archive (a pak file)
 * A mount puts files under a path the game chooses, e.g. "/pak/music"; everything Leitmotif
 * opens at that path then comes from the mount, not the disk: the cue file (lm_config.cue_file),
 * its assets folder (bundled music, listed from the mount so tag selections work), queue items
 * and one-shot players. Mount before lm_engine_create when the cue file or its music is mounted.
 * The table is the process's, not one engine's. A relative path is taken against the current
 * directory when it is mounted. Mounting over, inside or around a mount is LM_ERROR_INVALID_ARGUMENT.
 * Not from an audio callback (they take a lock and copy). Any other thread.
 * ------------------------------------------------------------------------------------------- */

/* Mounts a copy of `size` bytes at `data` as one file at `path` (e.g. "/pak/music/boss.ogg" or
   "/pak/cues.json5"). The copy is Leitmotif's: free your buffer when this returns. */
lm_error lm_mount_memory(const char *path, const void *data, size_t size);

/* How Leitmotif reads the files of a mounted folder: the game's own reader of its archive.
   Called on Leitmotif's loader and decoding threads (and the thread that calls lm_engine_create
   or reloads the cue file), possibly on several threads at once; each opened file is used by one
   thread at a time. They must not call back into Leitmotif. */
typedef struct lm_file_callbacks {
  size_t struct_size;
  /* Opens `name` (one of the mount's names, e.g. "battle/drums.ogg"), setting *size_bytes to its
     length. Returns the game's handle of the open file, NULL when it cannot (the open then fails
     as a missing file would). */
  void *(*open)(const char *name, int64_t *size_bytes, void *user_data);
  /* Copies up to `count` bytes from byte `offset` of the file into `buffer`: returns the number
     copied, 0 at or past the end, -1 on an error (reported as a read error naming the file). */
  int64_t (*read)(void *file, int64_t offset, void *buffer, size_t count, void *user_data);
  /* Closes the game's handle (once per successful open). May be NULL. */
  void (*close)(void *file, void *user_data);
  void *user_data;
} lm_file_callbacks;

/* Mounts a folder at `path` holding `name_count` files named by `names` (relative paths without
   "..", e.g. "music/boss.ogg"), read through `callbacks` (copied; user_data must stay valid
   until lm_unmount succeeds). */
lm_error lm_mount_files(const char *path, const char *const *names, size_t name_count,
                        const lm_file_callbacks *callbacks);

/* Removes the mount at `path` (as mounted). LM_ERROR_INVALID_ARGUMENT when nothing is mounted
   there, or when files of it are still open (music playing from it: stop it, or destroy the
   engines that play it, first). After it succeeds no callback of the mount is called again. */
lm_error lm_unmount(const char *path);

/* ---------------------------------------------------------------------------------------------
 * The game's side: events, parameters, the clock
 * ------------------------------------------------------------------------------------------- */

typedef enum lm_value_type {
  LM_VALUE_NUMBER = 0,
  LM_VALUE_STRING = 1,
  LM_VALUE_BOOL = 2
} lm_value_type;

/* One named value of an event's payload, e.g. { "threat", LM_VALUE_NUMBER, 2 }. Only the field
   of `type` is read: `number` (finite), `string` (UTF-8) or `boolean` (nonzero is true). */
typedef struct lm_value {
  const char *key;
  lm_value_type type;
  double number;
  const char *string;
  int boolean;
} lm_value;

/* Payload values, clean in C and C++ at -Wextra: `lm_value payload[] = {lm_number("threat", 2),
   lm_string("weapon", "axe")};`. (Inline: not library functions.) */
static inline lm_value lm_number(const char *key, double number) {
  lm_value value;
  memset(&value, 0, sizeof value);
  value.key = key;
  value.type = LM_VALUE_NUMBER;
  value.number = number;
  return value;
}
static inline lm_value lm_string(const char *key, const char *string) {
  lm_value value;
  memset(&value, 0, sizeof value);
  value.key = key;
  value.type = LM_VALUE_STRING;
  value.string = string;
  return value;
}
static inline lm_value lm_bool(const char *key, int boolean) {
  lm_value value;
  memset(&value, 0, sizeof value);
  value.key = key;
  value.type = LM_VALUE_BOOL;
  value.boolean = boolean;
  return value;
}

/* Starts the music: enters `state` (NULL: the cue file's start state) and, with own-thread
   clocking, the director's thread. Idempotent (a second call does nothing). Offline engines
   start at the current render position, and open the first music before returning (file I/O),
   so that lm_render need not. Thread safety: any thread. */
lm_error lm_start(lm_engine *engine, const char *state);

/* The bytes one lm_post carries: the cue's name, each key and each string value, plus 4 bytes,
   plus per value 3 bytes and its datum (a number 8, a string 2, a boolean 1). A post with
   `threat` and `kind: "patrol"` after "enemy.spotted" takes 4 + 13 + (3 + 6 + 8) + (3 + 4 + 2 +
   6) = 49. Each slot of the bus keeps this much, once: bus_capacity * LM_POST_CAPACITY bytes
   (1 MiB by default). */
#define LM_POST_CAPACITY 256

/* Posts cue `cue` with `count` payload values (`payload` may be NULL when count is 0). Never
   blocks, never allocates and never waits for the director: the strings are copied into a
   fixed slot of a lock-free bus (safe from an audio callback). The director acts on it at its
   next step: own thread, within 5 ms; pumped, at the next lm_update; offline, at the start of
   the next lm_render.
   Errors: LM_ERROR_BUS_FULL (the event was dropped), LM_ERROR_INVALID_ARGUMENT (empty cue, bad
   UTF-8, a NULL key or string, a non-finite number, an unknown type, a post bigger than
   LM_POST_CAPACITY). A failed call allocates for its message.
   Thread safety: any thread, concurrently with everything. */
lm_error lm_post(lm_engine *engine, const char *cue, const lm_value *payload, size_t count);

/* Sets game parameter `name` (declared in the cue file's `parameters`) to `value` (finite;
   clamped to the range the file gives it) over `ramp_seconds` (0 to 86400: a day, as in the cue file). Applied at
   the director's next step; the last set before a step wins. Never allocates (safe from an
   audio callback): the value waits in the parameter's own slot. Errors:
   LM_ERROR_INVALID_ARGUMENT (unknown name, non-finite value, negative ramp). Thread safety: any
   thread; takes a short lock the director's step also takes for a moment (to copy the slots,
   never while it decides or opens anything). */
lm_error lm_set_parameter(lm_engine *engine, const char *name, double value, double ramp_seconds);

/* Reads parameter `name`'s current value (mid-ramp values included). A value just set without
   a ramp reads back at once, before the director's next step applies it. Any thread. */
lm_error lm_get_parameter(lm_engine *engine, const char *name, double *out_value);

/* Pumped clocking: applies the events and parameters posted since the last call and moves ramps
   along. Call it once per frame from the game loop. No I/O. Errors: LM_ERROR_WRONG_MODE on an
   own-thread engine (its thread does this) and on an offline engine (lm_render does this).
   Thread safety: any thread; two threads calling it at once take turns. */
lm_error lm_update(lm_engine *engine);

/* Offline engines: renders `frames` frames of interleaved stereo float32 (2 * frames floats)
   into `buffer`, owned by the caller and written during the call only. Before each mix the
   director is advanced to the audio time of the frame it starts at (events posted before the
   call take effect at its first frame); the render is split into mixes of the engine's
   render_frames, and shorter ones where a beat-grid transition must land on its exact frame.
   Frames are counted from the engine's creation: the audio time is frames rendered / rate.
   It opens and reads no file: the engine's loader thread opens each file as soon as the change
   that needs it is scheduled, and a mix whose frame has come before its file is open waits for
   it, so the samples are the same however fast the loader was (see "Audio callbacks" above).
   Without lm_start, the first call starts the music, and waits for its first file.
   Errors: LM_ERROR_WRONG_MODE on a real-time engine; LM_ERROR_INVALID_ARGUMENT for a NULL
   buffer with frames above 0 (frames 0 is fine, with any buffer, NULL too, and does nothing).
   Thread safety: any thread; calls on one engine are serialized. */
lm_error lm_render(lm_engine *engine, float *buffer, size_t frames);

/* The engine's mixing rate in Hz. Any thread. */
lm_error lm_get_sample_rate(lm_engine *engine, int *out_sample_rate);

/* ---------------------------------------------------------------------------------------------
 * What is playing
 * ------------------------------------------------------------------------------------------- */

typedef enum lm_playback_state {
  LM_PLAYBACK_STOPPED = 0,
  LM_PLAYBACK_PLAYING = 1,
  LM_PLAYBACK_PAUSED = 2,
  /* The output device went away; playback resumes by itself when it is back. */
  LM_PLAYBACK_INTERRUPTED = 3,
  LM_PLAYBACK_SEEKING_FORWARD = 4,
  LM_PLAYBACK_SEEKING_BACKWARD = 5
} lm_playback_state;

/* The capacities of lm_now_playing_info's strings, the terminating NUL included. */
#define LM_TEXT_CAPACITY 256
#define LM_PATH_CAPACITY 4096

/* Set struct_size to sizeof(lm_now_playing_info) before the call; the library writes only the
   fields it covers. The strings are the caller's: copied into these arrays, NUL-terminated,
   "" when absent, so they stay valid whatever another thread does with the engine. A longer
   one is cut to fit (text at a UTF-8 character boundary) and `truncated` says so. */
typedef struct lm_now_playing_info {
  size_t struct_size;
  /* Nonzero when an item is the now-playing one; when zero the strings below are "". The item
     is the one heard: while a state change waits for its beat or bar, the music before it. */
  int has_item;
  /* Nonzero when a string below was cut to fit its array. */
  int truncated;
  /* The item's title tag, else its file name. */
  char title[LM_TEXT_CAPACITY];
  char artist[LM_TEXT_CAPACITY];
  /* The file's path, its exact bytes (a name need not be UTF-8: open it as it is). */
  char path[LM_PATH_CAPACITY];
  /* The cue file's source it came from ("" if the director did not queue it). */
  char source[LM_TEXT_CAPACITY];
  /* Nonzero for one of the player's own songs (from their library or picks). */
  int is_user_music;
  lm_playback_state playback_state;
  /* The position in the item's file, and its length (negative: unknown). */
  double position_seconds;
  double duration_seconds;
  /* The speed (0 when not playing) and the player's volume (0 to 1). */
  float rate;
  float volume;
  /* The state whose music is heard now ("" before the music starts). */
  char audible_state[LM_TEXT_CAPACITY];
} lm_now_playing_info;

/* Fills `out` with what plays now. Thread safety: any thread. */
lm_error lm_now_playing(lm_engine *engine, lm_now_playing_info *out);

/* The music state the rules see (`current`: set when a rule changes it, even while the music
   waits for the beat grid) and the one heard now (`audible`), copied into the caller's buffers
   of `current_size` and `audible_size` bytes (NUL included; a name cut to fit at a UTF-8
   boundary), "" before the music starts. A buffer may be NULL with size 0 (not wanted).
   Errors: LM_ERROR_INVALID_ARGUMENT for a non-NULL buffer of size 0 or a NULL one of a size.
   Thread safety: any thread. */
lm_error lm_get_state(lm_engine *engine, char *current, size_t current_size, char *audible, size_t audible_size);

/* ---------------------------------------------------------------------------------------------
 * The player (the director's queue player; the director may change these too, by its rules)
 * All of these return at once (the engine's threads do the work) and are safe from any thread.
 * ------------------------------------------------------------------------------------------- */

/* Starts or resumes the queue (an empty queue stays stopped). */
lm_error lm_player_play(lm_engine *engine);
/* Pauses with a short fade; lm_player_play resumes from the same frame. */
lm_error lm_player_pause(lm_engine *engine);
/* The speed: 0 pauses; 1/256 to 4 plays at that speed. Otherwise LM_ERROR_INVALID_ARGUMENT. */
lm_error lm_player_set_rate(lm_engine *engine, float rate);
/* The tempo: speed that keeps the pitch (a time-stretcher, SoundTouch, in each music voice), in
   [0.5, 2], 1 as written; it multiplies with the rate (tape speed). Beats, bars and positions
   follow the stretched time. The cue file's `tempo` actions and parameters set it too.
   Otherwise LM_ERROR_INVALID_ARGUMENT. Does not start playback. */
lm_error lm_player_set_tempo(lm_engine *engine, float tempo);
/* Seeks the now-playing item to `seconds` (finite, 0 or more): the music fades out over 10 ms
   (a cut would click) and goes on from exactly that frame of the file, fading in over 10 ms; the
   jump is heard about 10 ms after the mix frame the call reaches. A time at or past the item's
   end ends it: the music goes on as when the item plays to its end (the state's next item, or
   the same one again when it repeats, with the state's `between` transition from where it was). */
lm_error lm_player_seek(lm_engine *engine, double seconds);
/* The player's gain, 0 to 1 (anything else: LM_ERROR_INVALID_ARGUMENT). */
lm_error lm_player_set_volume(lm_engine *engine, float volume);

/* ---------------------------------------------------------------------------------------------
 * The game's commands: what a rule of the cue file could do, without a cue
 * Each is checked at once (an unknown state or source, a value out of range:
 * LM_ERROR_INVALID_ARGUMENT), then applied at the director's next step, in the order called,
 * and reported as fired by the rule "(game)". They never block; any thread.
 * ------------------------------------------------------------------------------------------- */

/* When a change lands: at once, or on the playing music's next beat, next bar, or its end. */
typedef enum lm_moment {
  LM_AT_NOW = 0,
  LM_AT_BEAT = 1,
  LM_AT_BAR = 2,
  LM_AT_END = 3
} lm_moment;

/* Stops the music, fading out over fade_seconds (0 to 86400): from then on no state holds
   (lm_get_state gives "", and the rules see none); lm_resume starts the stopped state's music
   again, fading in over fade_seconds. */
lm_error lm_stop(lm_engine *engine, double fade_seconds);
lm_error lm_resume(lm_engine *engine, double fade_seconds);

/* Moves to `state` (the rules are not asked), crossfading over `seconds` (0 to 86400: 0 is a cut)
   with an equal-power curve at `at` on the outgoing music's grid. */
lm_error lm_set_state(lm_engine *engine, const char *state, double seconds, lm_moment at);

/* Plays the cue file's source `source` once over the music, at `at` (LM_AT_NOW, LM_AT_BEAT or
   LM_AT_BAR; LM_AT_END is LM_ERROR_INVALID_ARGUMENT, as `at: "end"` is an error on a stinger in the
   cue file), with `volume` 0 to 1. */
lm_error lm_play_stinger(lm_engine *engine, const char *source, lm_moment at, float volume);

/* Decodes the music file at `path` (as the cue file's sources give it: relative to its assets
   folder, where the file is there; or any other path, a relative one from the working folder) whole
   into memory: from now on every voice that plays it reads it from there, the same samples as
   streamed, with nothing opened or decoded when it starts. For stingers and short loops that fire
   again and again; the engine already keeps the cue file's own stingers of 20 s or less in memory.
   Preloading it again holds it once more (a changed file is decoded afresh); each lm_unload lets
   go of one hold. Nothing of the file stays open: a file preloaded from a mount plays on from
   memory after lm_unmount. At most 64 MiB of decoded audio per engine (lm_set_preload_budget).
   Blocking: it reads and decodes the file on the calling thread (milliseconds for a stinger):
   while a level loads, not from an audio callback. Errors: LM_ERROR_AUDIO_FILE (the message names the file and why; it still plays,
   streamed), LM_ERROR_INVALID_ARGUMENT (NULL, empty or not UTF-8). */
lm_error lm_preload(lm_engine *engine, const char *path);

/* Lets go of one hold on a file lm_preload kept in memory; with the last, its memory is given back
   once no voice reads it. LM_ERROR_INVALID_ARGUMENT when it was not preloaded. Any thread. */
lm_error lm_unload(lm_engine *engine, const char *path);

/* The most memory the engine's preloaded audio may take, in bytes (default 64 MiB: 5.8 minutes of
   48 kHz stereo). Lowering it unloads nothing: it applies to the next lm_preload (the cue file's
   stingers are preloaded when the engine is made, and again when the cue file reloads). */
lm_error lm_set_preload_budget(lm_engine *engine, size_t bytes);

typedef enum lm_skip_direction {
  LM_SKIP_NEXT = 0,
  LM_SKIP_PREVIOUS = 1,
  /* Back to the start of the playing item. */
  LM_SKIP_BEGINNING = 2
} lm_skip_direction;

/* Moves through the playing state's queue, with the state's own item transition. */
lm_error lm_skip(lm_engine *engine, lm_skip_direction direction);

/* The music's volume as the cue file's `volume` action sets it, 0 to 1, over ramp_seconds (0 to
   86400); it multiplies the player's gain (lm_player_set_volume) and the parameters' drives. */
lm_error lm_set_music_volume(lm_engine *engine, float volume, double ramp_seconds);

/* The engine's master volume, 0 to 1, over everything it plays (music and stingers alike: the
   game's "music volume" slider, or a fade to silence before the game quits), in a straight line
   over ramp_seconds (0 to 86400; 0 glides over a few milliseconds, so that a jump does not
   click). Applied by the mixer at once, not at the director's next step; it sits above every
   other volume. */
lm_error lm_set_master_volume(lm_engine *engine, float volume, double ramp_seconds);

/* ---------------------------------------------------------------------------------------------
 * The player's music library: consent
 * ------------------------------------------------------------------------------------------- */

typedef enum lm_authorization {
  /* Nobody has asked the player yet (or nobody could). */
  LM_AUTHORIZATION_NOT_DETERMINED = 0,
  /* The player said no. */
  LM_AUTHORIZATION_DENIED = 1,
  /* A policy (or LEITMOTIF_LIBRARY_ACCESS=restricted) forbids access; the player is not asked. */
  LM_AUTHORIZATION_RESTRICTED = 2,
  /* The player said yes. */
  LM_AUTHORIZATION_AUTHORIZED = 3
} lm_authorization;

/* Asks the player, in the game's own UI: show `application_name` and `usage_description` and
   return 1 for yes, 0 for no, -1 when nobody can be asked. Strings valid during the call only.
   Runs on the thread that called lm_library_request_authorization. */
typedef int (*lm_prompt_fn)(const char *application_name, const char *usage_description, void *user_data);

/* The current answer for the engine's application id (re-read when it changes on disk).
   Reads two small files: not in the frame loop. Thread safety: any thread. */
lm_error lm_library_authorization_status(lm_engine *engine, lm_authorization *out_status);

/* Asks the player when nobody has yet, through `prompt` (NULL: on the controlling terminal,
   /dev/tty), remembers the answer per application id, and writes the status to *out_status
   (may be NULL). When the status is already known nobody is asked. Blocks while the prompt
   waits; then re-reads the cue file's library sources (I/O): not in the frame loop.
   Errors: LM_ERROR_LIBRARY when the config had no usage_description (nobody is asked).
   Thread safety: any thread. */
lm_error lm_library_request_authorization(
  lm_engine *engine, lm_prompt_fn prompt, void *user_data, lm_authorization *out_status);

/* Called with the new status each time the player's consent changes: their answer to a
   request, `leitmotif access allow|deny|reset`, an administrator's policy. A change arrives
   within a second (a background check twice a second, which runs only while a callback is
   set). Runs on a thread of Leitmotif's, never the game's; it may call any lm_* function
   except lm_engine_destroy of this engine. NULL removes the callback. Any thread. */
typedef void (*lm_authorization_fn)(lm_authorization status, void *user_data);
lm_error lm_set_authorization_callback(lm_engine *engine, lm_authorization_fn callback, void *user_data);

/* ---------------------------------------------------------------------------------------------
 * The player's music library: scanning, queries, playlists, picks and queues
 * Every call here needs the player's consent (LM_ERROR_LIBRARY with the reason otherwise: ask
 * with lm_library_request_authorization first) and does I/O on the library's index (SQLite):
 * call them from a menu or a loading thread, not the frame loop. Any thread.
 * Songs are named by their persistent id: a 64-bit number that stays the same across scans
 * while the file stays (a file moved or renamed within the folder keeps it).
 * ------------------------------------------------------------------------------------------- */

/* What a scan changed. */
typedef struct lm_scan_result {
  size_t struct_size;
  /* Songs new in the index, changed (re-read), moved or renamed, gone, and the same as before. */
  int added;
  int updated;
  int moved;
  int removed;
  int unchanged;
  /* Files that could not be read as music (damaged, empty, not audio); not retried until they
     change. */
  int failed;
  /* Playlist files (M3U, M3U8, PLS) imported. */
  int playlists;
  double duration_seconds;
} lm_scan_result;

/* Told after each file a scan reads, on the thread that called lm_library_scan: files read so
   far, and how many it will read in all. */
typedef void (*lm_scan_progress_fn)(int files_read, int files_to_read, void *user_data);

/* Scans the player's music folder (lm_config.library_folder) into the index: a first scan reads
   and analyses every song (loudness and tempo, about 1 % of the music's length: minutes for a
   large library), later ones only what changed. Then re-reads the cue file's library sources,
   so that the new songs can play. Blocks until done: call it from a loading thread. `progress`
   may be NULL; `out` may be NULL. Errors: LM_ERROR_LIBRARY (no consent, and nothing was read;
   another scan held the index for 30 s; the index cannot be written). */
lm_error lm_library_scan(lm_engine *engine, lm_scan_progress_fn progress, void *user_data, lm_scan_result *out);

/* The properties a predicate compares (MediaPlayer's MPMediaItemProperty keys). */
typedef enum lm_media_property {
  LM_PROPERTY_PERSISTENT_ID = 0,
  /* Text, compared ignoring case and diacritics ("beyonce" finds "Beyonce" with its accent). */
  LM_PROPERTY_TITLE = 1,
  LM_PROPERTY_ARTIST = 2,
  LM_PROPERTY_ALBUM_TITLE = 3,
  LM_PROPERTY_ALBUM_ARTIST = 4,
  LM_PROPERTY_GENRE = 5,
  LM_PROPERTY_COMPOSER = 6,
  /* Numbers: seconds, counts, the year, the rating 0 to 5. */
  LM_PROPERTY_PLAYBACK_DURATION = 7,
  LM_PROPERTY_ALBUM_TRACK_NUMBER = 8,
  LM_PROPERTY_DISC_NUMBER = 9,
  /* The BPM tag, else the tempo the scan detected. */
  LM_PROPERTY_BEATS_PER_MINUTE = 10,
  LM_PROPERTY_YEAR = 11,
  LM_PROPERTY_PLAY_COUNT = 12,
  LM_PROPERTY_SKIP_COUNT = 13,
  LM_PROPERTY_RATING = 14,
  /* A flag: 1 or 0. */
  LM_PROPERTY_IS_COMPILATION = 15,
  /* Dates, as seconds since 1970. */
  LM_PROPERTY_LAST_PLAYED_DATE = 16,
  LM_PROPERTY_DATE_ADDED = 17,
  /* The file's path, matched exactly (its bytes). */
  LM_PROPERTY_PATH = 18,
  /* The scan's analysis: integrated loudness in LUFS, and energy 0 to 1. */
  LM_PROPERTY_LOUDNESS = 19,
  LM_PROPERTY_ENERGY = 20,
  /* Text: the MOOD tag (Vorbis MOOD, ID3 TMOO or TXXX:MOOD), as a bundled source selects by it.
     Since 0.3. */
  LM_PROPERTY_MOOD = 21
} lm_media_property;

/* How a predicate compares: equal-to (any property) and contains (text and the path), as in
   MediaPlayer; the four ranges for numbers only. A comparison that does not suit its property
   is LM_ERROR_INVALID_ARGUMENT, naming both. */
typedef enum lm_comparison {
  LM_COMPARE_EQUAL_TO = 0,
  LM_COMPARE_CONTAINS = 1,
  LM_COMPARE_LESS_THAN = 2,
  LM_COMPARE_LESS_THAN_OR_EQUAL_TO = 3,
  LM_COMPARE_GREATER_THAN = 4,
  LM_COMPARE_GREATER_THAN_OR_EQUAL_TO = 5
} lm_comparison;

/* One condition on a song (MediaPlayer's MPMediaPropertyPredicate). Text properties and the
   path read `text` (UTF-8); the persistent id reads `id`; the others read `number`. A `text` given
   to a number or the id is LM_ERROR_INVALID_ARGUMENT quoting it (never read as 0). */
typedef struct lm_predicate {
  lm_media_property property;
  lm_comparison comparison;
  const char *text;
  double number;
  uint64_t id;
} lm_predicate;

/* Predicates, clean in C and C++ at -Wextra: `lm_predicate filter[] = {lm_predicate_text(
   LM_PROPERTY_ARTIST, LM_COMPARE_CONTAINS, "daft"), lm_predicate_number(LM_PROPERTY_BEATS_PER_MINUTE,
   LM_COMPARE_GREATER_THAN, 120)};`. (Inline: not library functions.) */
static inline lm_predicate lm_predicate_text(lm_media_property property, lm_comparison comparison, const char *text) {
  lm_predicate predicate;
  memset(&predicate, 0, sizeof predicate);
  predicate.property = property;
  predicate.comparison = comparison;
  predicate.text = text;
  return predicate;
}
static inline lm_predicate lm_predicate_number(lm_media_property property, lm_comparison comparison, double number) {
  lm_predicate predicate;
  memset(&predicate, 0, sizeof predicate);
  predicate.property = property;
  predicate.comparison = comparison;
  predicate.number = number;
  return predicate;
}
static inline lm_predicate lm_predicate_id(uint64_t persistent_id) {
  lm_predicate predicate;
  memset(&predicate, 0, sizeof predicate);
  predicate.property = LM_PROPERTY_PERSISTENT_ID;
  predicate.comparison = LM_COMPARE_EQUAL_TO;
  predicate.id = persistent_id;
  return predicate;
}

/* The order of a query's songs: by title (the default), or grouped by album (then disc and
   track), artist, album artist, composer or genre. A leading "The " or "A " is ignored, and
   titles starting with a digit or a sign come last, as in MediaPlayer's sections. */
typedef enum lm_sort {
  LM_SORT_TITLE = 0,
  LM_SORT_ALBUM = 1,
  LM_SORT_ARTIST = 2,
  LM_SORT_ALBUM_ARTIST = 3,
  LM_SORT_COMPOSER = 4,
  LM_SORT_GENRE = 5
} lm_sort;

/* A query of the player's songs (MediaPlayer's MPMediaQuery). Start from lm_query_defaults():
   every song, by title. */
typedef struct lm_query {
  size_t struct_size;
  /* Conditions that must all hold (AND); NULL with a count of 0: none. */
  const lm_predicate *predicates;
  size_t predicate_count;
  /* A picker's search box: songs whose title, artist or album title contains it (ignoring case
     and diacritics). NULL or "": no search. */
  const char *search_text;
  /* Nonzero: only that playlist's songs, in the playlist's own order (lm_library_playlists);
     `sort` is then ignored. */
  uint64_t playlist_id;
  lm_sort sort;
  /* Skip this many matching songs: with the capacity of lm_library_query, a page of them. */
  size_t offset;
} lm_query;

static inline lm_query lm_query_defaults(void) {
  lm_query query;
  memset(&query, 0, sizeof query);
  query.struct_size = sizeof query;
  return query;
}

/* One song, copied into the caller's memory: strings NUL-terminated, "" when the tag is absent,
   cut to fit at a UTF-8 character boundary (then `truncated` is nonzero). */
typedef struct lm_media_item {
  size_t struct_size;
  uint64_t persistent_id;
  int truncated;
  /* The title tag, else the file name. */
  char title[LM_TEXT_CAPACITY];
  char artist[LM_TEXT_CAPACITY];
  char album_title[LM_TEXT_CAPACITY];
  char album_artist[LM_TEXT_CAPACITY];
  char genre[LM_TEXT_CAPACITY];
  /* The file's path, its exact bytes (a name need not be UTF-8). */
  char path[LM_PATH_CAPACITY];
  /* Negative when unknown. */
  double duration_seconds;
  /* The BPM tag, else the tempo the scan detected; 0 when neither is known. */
  double beats_per_minute;
  /* 0 when unknown. */
  int year;
  int album_track_number;
  /* 0 to 5, and how often the player played and skipped it (lm_library_* never change these). */
  int rating;
  int play_count;
  int skip_count;
  /* Nonzero when the scan measured its loudness (loudness_lufs is then valid). */
  int has_loudness;
  double loudness_lufs;
  /* The MOOD tag, empty when there is none. (Added in 0.3: a program built against an older
     header passes the smaller struct_size and gets the fields before it.) */
  char mood[LM_TEXT_CAPACITY];
} lm_media_item;

/* Runs `query` (NULL: every song, by title) and copies the matching songs from `offset` on into
   `items`, at most `capacity` of them. Set items[0].struct_size to sizeof(lm_media_item): it is
   the array's stride, so that a program built against an older header gets only the fields it
   knows. *out_count (may be NULL) is how many were copied, *out_total (may be NULL) how many
   match in all, whatever the offset and capacity: call with items NULL and capacity 0 to count.
   Errors: LM_ERROR_LIBRARY (no consent, the index cannot be read), LM_ERROR_INVALID_ARGUMENT (a
   predicate that does not suit its property, an unknown playlist id, bad UTF-8). */
lm_error lm_library_query(lm_engine *engine, const lm_query *query, lm_media_item *items, size_t capacity,
                          size_t *out_count, size_t *out_total);

/* One of the player's playlists (the M3U, M3U8 and PLS files the scan found). */
typedef struct lm_playlist {
  size_t struct_size;
  uint64_t persistent_id;
  /* The songs of it that are in the index. */
  int item_count;
  int truncated;
  /* Its file's name without the extension. */
  char name[LM_TEXT_CAPACITY];
} lm_playlist;

/* The playlists, by name, into `playlists` (at most `capacity`; stride playlists[0].struct_size
   as for lm_library_query); *out_total (may be NULL) says how many there are. Errors:
   LM_ERROR_LIBRARY. */
lm_error lm_library_playlists(lm_engine *engine, lm_playlist *playlists, size_t capacity, size_t *out_count,
                              size_t *out_total);

/* The player's pick in the game's own picker, drawn from lm_library_query (MediaPlayer's
   didPick; on didCancel do not call it): these songs, in this order, are the music of the cue
   file's `picks` sources from the next time a state that plays one starts (what plays now goes
   on; lm_set_queue plays them at once). A count of 0 clears the picks: those sources' fallbacks
   take over. The picks are this engine's (not saved). Errors: LM_ERROR_LIBRARY,
   LM_ERROR_INVALID_ARGUMENT (an id the index does not have: the message names it). */
lm_error lm_set_picks(lm_engine *engine, const uint64_t *persistent_ids, size_t count);

/* How the game's queue repeats (MediaPlayer's repeat modes). */
typedef enum lm_repeat_mode {
  /* Start over after the last song (the default a soundtrack wants). */
  LM_REPEAT_ALL = 0,
  /* Play it once; then the music stops (lm_resume starts the state's own music). */
  LM_REPEAT_NONE = 1,
  /* Repeat each song (lm_skip moves on). */
  LM_REPEAT_ONE = 2
} lm_repeat_mode;

/* Plays these songs now, in this order, in place of the current state's music (a playlist the
   player chose in the game's menu), crossfading over `seconds` (0 to 86400: 0 is a cut) with an
   equal-power curve at `at` on the playing music's grid. `seconds` is for going into the queue;
   from song to song the current state's `between` applies (the cue file's; 3 s equal-power by
   default, at most half of either song). They are levelled to the score's
   loudness like every song of the player's. The state the rules see stays what it was, and a
   rule that moves to another state brings that state's own music. A count of 0 hands the music
   back to the current state now (with `seconds` and `at`). Reported as fired by "(game)", then
   LM_REPORT_NOW_PLAYING; lm_now_playing's source is "(game)". Looks the songs up in the index
   (I/O): not in the frame loop. Errors: LM_ERROR_LIBRARY, LM_ERROR_INVALID_ARGUMENT (an unknown
   id, a bad moment or repeat mode). */
lm_error lm_set_queue(lm_engine *engine, const uint64_t *persistent_ids, size_t count, double seconds, lm_moment at,
                      lm_repeat_mode repeat);

/* How the game's queue is shuffled (MediaPlayer's shuffle modes). Since 0.3. */
typedef enum lm_shuffle_mode {
  /* In the order given. */
  LM_SHUFFLE_OFF = 0,
  /* Song by song: it starts at a random song and plays each once. */
  LM_SHUFFLE_SONGS = 1,
  /* Album by album: each album's songs together, in the order given (a song with no album
     goes alone). */
  LM_SHUFFLE_ALBUMS = 2
} lm_shuffle_mode;

/* lm_set_queue, shuffled as `shuffle` says. With LM_REPEAT_ALL each lap is shuffled afresh and
   never begins with the song (or album) that ended the lap before. The orders come from the cue
   file's `seed` and the queues shuffled before on this engine, so an offline render repeats; to
   turn shuffle on or off for the queue playing, set the queue again. LM_SHUFFLE_OFF is
   lm_set_queue. Errors: those of lm_set_queue, and LM_ERROR_INVALID_ARGUMENT for a bad shuffle
   mode. Since 0.3. */
lm_error lm_set_queue_shuffled(lm_engine *engine, const uint64_t *persistent_ids, size_t count, double seconds,
                               lm_moment at, lm_repeat_mode repeat, lm_shuffle_mode shuffle);

/* ---------------------------------------------------------------------------------------------
 * Notifications
 * ------------------------------------------------------------------------------------------- */

typedef enum lm_report_kind {
  /* A rule fired; text lists what it did. */
  LM_REPORT_FIRED = 0,
  /* No rule acted on the event; text says why. */
  LM_REPORT_IGNORED = 1,
  /* The music moved to `state`. */
  LM_REPORT_STATE_CHANGED = 2,
  /* A change waits for the beat grid or the end of the item. */
  LM_REPORT_SCHEDULED = 3,
  /* A source gave nothing; the director played another instead. */
  LM_REPORT_FALLBACK = 4,
  LM_REPORT_STINGER = 5,
  /* A new item plays in the current state. */
  LM_REPORT_NOW_PLAYING = 6,
  /* The bus was full: events were dropped. */
  LM_REPORT_DROPPED = 7,
  /* The cue file changed and its new rules are in force. */
  LM_REPORT_RELOADED = 8,
  /* The cue file changed but is invalid: the last good one stays (text lists the problems). */
  LM_REPORT_RELOAD_FAILED = 9,
  /* Something went wrong applying an action. */
  LM_REPORT_PROBLEM = 10,
  /* The music ran out: the last song of a queue that does not repeat (LM_REPEAT_NONE, or a
     state's `repeat: "none"`) played to its end. `state` is the state that stays current, `title`
     the song that ended. Silence until a rule changes state or lm_resume; lm_now_playing then
     says LM_PLAYBACK_STOPPED with no item (has_item 0: nothing is heard). Since 0.3. */
  LM_REPORT_MUSIC_ENDED = 11
} lm_report_kind;

/* What the director did, and why. Every string is valid during the callback only. */
typedef struct lm_report {
  size_t struct_size;
  /* Director time in seconds: audio time, 0 being the first frame of the start state's music
     (on a real-time engine that frame is mixed about a quarter of a second after lm_start, so
     a cue posted a wall-clock second after lm_start reports a little under 1 s: 0.85 s on the
     headless device in a trial, the mixer running that much ahead of the wall clock). */
  double time_seconds;
  lm_report_kind kind;
  /* The cue this answers and its bus sequence (NULL and 0 for the director's own doing). */
  const char *cue;
  uint64_t sequence;
  /* LM_REPORT_STATE_CHANGED, LM_REPORT_FALLBACK, LM_REPORT_MUSIC_ENDED: the state; else NULL. */
  const char *state;
  /* The whole report in a line, as `leitmotif cues simulate` prints it. */
  const char *text;
  /* LM_REPORT_FIRED: the rule's name ("(game)" for lm_stop and the other commands); else NULL. */
  const char *rule;
  /* LM_REPORT_STATE_CHANGED, LM_REPORT_NOW_PLAYING, LM_REPORT_STINGER, LM_REPORT_MUSIC_ENDED: the
     item's title (its title tag, else its file name); else NULL. */
  const char *title;
  /* When the director decided it, and when it sounds (audio time, as time_seconds). A state
     change that waited for the bar is reported when the director reaches its time (offline, on
     its frame), with time_seconds = sounding_seconds, and was decided earlier; a
     LM_REPORT_SCHEDULED report is made when decided and says when the change will sound.
     In real time a report comes before its change is heard: by the director's scheduling lead
     (48 ms at 1024-frame periods) plus what the output still holds (the OpenAL queue and the
     device's buffer: a trial on the headless device measured 150 to 165 ms in all). To act on
     the moment music is heard, ask for reports then (lm_set_report_timing), or use the beat and
     marker callbacks: they are called then. */
  double decided_seconds;
  double sounding_seconds;
} lm_report;

/* Called with every report, in order, one at a time, on the director's notification queue (or,
   with LM_REPORTS_WHEN_HEARD, on its audible thread): a thread of Leitmotif's, never the game's
   (offline engines too). It must not block for long; it
   may call any lm_* function except lm_engine_destroy and lm_flush_reports of this engine. */
typedef void (*lm_report_fn)(const lm_report *report, void *user_data);

/* Sets (or, with NULL, removes) the report callback. Reports made after the call reach it.
   Thread safety: any thread. */
lm_error lm_set_report_callback(lm_engine *engine, lm_report_fn callback, void *user_data);

/* When the report callback is called. */
typedef enum lm_report_timing {
  /* When the director decides (the default): in real time ahead of the music it speaks of (see
     lm_report.decided_seconds). For logs, and to know a change is coming. */
  LM_REPORTS_WHEN_DECIDED = 0,
  /* When the report's time_seconds is heard (OpenAL's playback position reaches it, as for the
     beat callback; at most a second late when the device stalls): to change the game's screen
     on the change itself. In order, on Leitmotif's audible thread. Offline, where the director
     steps on the frames lm_render renders, the same as LM_REPORTS_WHEN_DECIDED.
     lm_flush_reports waits for these too (the time the output holds). */
  LM_REPORTS_WHEN_HEARD = 1
} lm_report_timing;

/* Chooses when the report callback is called. Call it before lm_start (LM_ERROR_WRONG_MODE
   after: a change while music plays would lose or repeat reports in flight); an unknown value is
   LM_ERROR_INVALID_ARGUMENT. Thread safety: any thread. Since 0.3. */
lm_error lm_set_report_timing(lm_engine *engine, lm_report_timing timing);

/* A beat of the music, as it is heard. Strings are valid during the callback only. */
typedef struct lm_beat {
  size_t struct_size;
  /* Director time in seconds (as lm_report.time_seconds) of the beat: when it sounds. */
  double time_seconds;
  /* The mix frame it sounds on (frames since the engine started). */
  int64_t mix_frame;
  /* The bar, from 1 at the item's first downbeat (0: a pickup before it), and the beat in it,
     from 1 (the downbeat) to beats_per_bar. Counted in the file: a loop's bars come again. */
  int32_t bar;
  int32_t beat;
  int32_t beats_per_bar;
  /* The item's title (its title tag, else its file name). */
  const char *title;
} lm_beat;

/* Called with every beat of the music when it is heard: in real time within about one device
   period of OpenAL playing it; on an offline engine, once the lm_render call that renders past
   it has mixed it (lm_flush_reports waits for them too). Always in order, on a thread of
   Leitmotif's, never the game's. The grid is the one `at: "beat"` uses (the item's BPM tag or detected tempo, else the cue
   file's tempo); a crossfade's outgoing music stops beating when the fade begins; stingers have
   no beats. It must not block for long; it may call any lm_* function except
   lm_engine_destroy. */
typedef void (*lm_beat_fn)(const lm_beat *beat, void *user_data);

/* Sets (or, with NULL, removes) the beat callback. Any thread. */
lm_error lm_set_beat_callback(lm_engine *engine, lm_beat_fn callback, void *user_data);

/* A named cue point of the music as it is heard (a marker): the playing item's source's `cues`
   in the cue file, else its file's CUE_<NAME> tags. */
typedef struct lm_marker {
  size_t struct_size;
  /* Director time in seconds (as lm_report.time_seconds): when it sounds. */
  double time_seconds;
  /* The mix frame it sounds on. */
  int64_t mix_frame;
  /* Where it is in the item's file, in seconds. */
  double file_seconds;
  /* Its name, in lower case ("exit", "chorus"). */
  const char *name;
  /* The item's title (its title tag, else its file name). */
  const char *title;
} lm_marker;

/* Called with every marker when it is heard, as lm_beat_fn is called with beats (the same
   thread, in order with them, the same rules). Strings valid during the call only. */
typedef void (*lm_marker_fn)(const lm_marker *marker, void *user_data);

/* Sets (or, with NULL, removes) the marker callback. Any thread. */
lm_error lm_set_marker_callback(lm_engine *engine, lm_marker_fn callback, void *user_data);

/* Sets (or removes) the diagnostic callback (see lm_config.diagnostic_callback). Any thread. */
lm_error lm_set_diagnostic_callback(lm_engine *engine, lm_diagnostic_fn callback, void *user_data);

/* ---------------------------------------------------------------------------------------------
 * The desktop: media keys, "now playing", and the player's own music apps (MPRIS)
 * Linux desktops (GNOME, KDE, playerctl, every media key) speak MPRIS on the session bus. The
 * calls below need that bus: without one (a server, a container) they return
 * LM_ERROR_UNAVAILABLE, once per call, and nothing else of the engine changes. The bus is
 * talked to on threads of Leitmotif's ("lm.mpris", "lm.system-music"): no call here waits on it.
 * ------------------------------------------------------------------------------------------- */

/* Shows the engine's music on the desktop's media controls as an MPRIS player
   ("org.mpris.MediaPlayer2.<name>", with ".instance<pid>" when taken): title, artist, album,
   length, cover (the file's own, else a cover.jpg or folder.png beside it), BPM, status, position and volume,
   following the music within 100 ms. The media keys do what the cue file's `mediaKeys` say
   (default: play, pause and stop pause and resume the game's music; next and previous skip the
   player's own songs only). `identity`: the name the desktop shows (NULL: "Leitmotif");
   `desktop_entry`: the game's .desktop file name without ".desktop", for its icon (NULL: none).
   A second call replaces the first. Errors: LM_ERROR_UNAVAILABLE (no session bus),
   LM_ERROR_INVALID_ARGUMENT. Any thread. */
lm_error lm_desktop_publish(lm_engine *engine, const char *identity, const char *desktop_entry);

/* Takes the game off the desktop's media controls (no effect when it is not there). Waits for
   the bus thread to end. Any thread but a callback's (LM_ERROR_WRONG_MODE). */
lm_error lm_desktop_unpublish(lm_engine *engine);

/* Starts following the player's own music apps (the system music player: every other MPRIS
   player on the bus) and carrying out the cue file's `systemMusic`: leave them, pause them while
   the game's music plays (and resume them when it stops or the engine is destroyed), or duck the
   game's music under them. Waits up to a second for the running apps to say what they play
   (call it while the game loads, not in its frame loop). Errors: LM_ERROR_UNAVAILABLE (no
   session bus). Any thread. */
lm_error lm_system_music_start(lm_engine *engine);

/* Stops following them; the apps the game paused are resumed first. Any thread but a
   callback's (LM_ERROR_WRONG_MODE). */
lm_error lm_system_music_stop(lm_engine *engine);

/* A music app as lm_system_music_apps and the callback see it. Strings are copied into the
   arrays (NUL-terminated, "" when the app does not say; cut at a UTF-8 boundary to fit, and
   `truncated` says so). */
typedef struct lm_system_music_app {
  size_t struct_size;
  /* Its MPRIS bus name, which the commands take: "org.mpris.MediaPlayer2.vlc". */
  char bus_name[LM_TEXT_CAPACITY];
  /* The name it shows ("VLC media player"). */
  char identity[LM_TEXT_CAPACITY];
  lm_playback_state playback_state;
  /* Nonzero when it names what it plays; the item's fields below are "" / negative otherwise. */
  int has_item;
  int truncated;
  char title[LM_TEXT_CAPACITY];
  /* The artists, joined with ", ". */
  char artist[LM_TEXT_CAPACITY];
  char album[LM_TEXT_CAPACITY];
  /* mpris:artUrl and xesam:url as the app gave them. */
  char art_url[LM_PATH_CAPACITY];
  char url[LM_PATH_CAPACITY];
  /* Seconds into the item now, and its length (negative: unknown). */
  double position_seconds;
  double duration_seconds;
  /* 0 to 1; negative when the app does not say. */
  double volume;
  /* Nonzero when the app takes commands at all, and each of them. */
  int can_control;
  int can_play;
  int can_pause;
  int can_go_next;
  int can_go_previous;
  int can_seek;
  /* Nonzero when lm_system_music_open takes file:// URIs. */
  int can_open_files;
} lm_system_music_app;

/* Copies the player's music apps into `apps` (at most `capacity`; set apps[0].struct_size to
   sizeof(lm_system_music_app): it is the array's stride) and their number into *out_count (which
   may be more than capacity). `apps` may be NULL with capacity 0 to count them. Errors:
   LM_ERROR_WRONG_MODE (lm_system_music_start was not called). Any thread. */
lm_error lm_system_music_apps(lm_engine *engine, lm_system_music_app *apps, size_t capacity, size_t *out_count);

typedef enum lm_remote_command {
  LM_COMMAND_PLAY = 0,
  LM_COMMAND_PAUSE = 1,
  LM_COMMAND_TOGGLE_PLAY_PAUSE = 2,
  LM_COMMAND_STOP = 3,
  LM_COMMAND_NEXT = 4,
  LM_COMMAND_PREVIOUS = 5,
  /* `seconds` forward (negative: back) from where the app is. */
  LM_COMMAND_SEEK_BY = 6,
  /* To `seconds` into the item. */
  LM_COMMAND_SET_POSITION = 7
} lm_remote_command;

/* Sends `command` to the app `bus_name` (NULL: the one playing, else the one that played last).
   Returns at once: a refusal or no answer comes to the system music callback as
   LM_SYSTEM_MUSIC_COMMAND_FAILED. Errors: LM_ERROR_INVALID_ARGUMENT (no such app, a bad
   command or seconds), LM_ERROR_WRONG_MODE (not started). Any thread. */
lm_error lm_system_music_command(lm_engine *engine, const char *bus_name, lm_remote_command command, double seconds);

/* Hands `uri` (a file:// URL of one of the player's songs, say) to the app to play (MPRIS
   OpenUri). As lm_system_music_command otherwise. */
lm_error lm_system_music_open(lm_engine *engine, const char *bus_name, const char *uri);

typedef enum lm_system_music_event {
  LM_SYSTEM_MUSIC_APPEARED = 0,
  LM_SYSTEM_MUSIC_CHANGED = 1,
  LM_SYSTEM_MUSIC_DISAPPEARED = 2,
  LM_SYSTEM_MUSIC_COMMAND_FAILED = 3
} lm_system_music_event;

/* Called on every change of the player's music apps, on Leitmotif's "lm.system-music" thread:
   `app` is the app (for DISAPPEARED only bus_name and identity are set; for COMMAND_FAILED
   only bus_name); `message` says what failed (COMMAND_FAILED), else "". Both are valid during
   the call only. It must return quickly; it may call any lm_* function except
   lm_engine_destroy, lm_system_music_stop and lm_desktop_unpublish. */
typedef void (*lm_system_music_fn)(lm_system_music_event event, const lm_system_music_app *app, const char *message,
                                   void *user_data);

/* Sets (or, with NULL, removes) the system music callback. Any thread. */
lm_error lm_set_system_music_callback(lm_engine *engine, lm_system_music_fn callback, void *user_data);

/* Waits until every report made so far has reached the report callback (and, offline, every
   beat and marker rendered so far their callbacks). Any thread but the callback's own
   (LM_ERROR_WRONG_MODE). */
lm_error lm_flush_reports(lm_engine *engine);

#ifdef __cplusplus
}
#endif

#endif /* LEITMOTIF_H */
