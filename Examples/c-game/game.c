/*
 * A small C game on Leitmotif's C API: a fixed-step 60 Hz game loop over a scripted minute of
 * play that posts cues and sets parameters from the loop, against the default cue file.
 *
 *   game [--cues FILE] [--seconds N]                  plays live (the default device; headless
 *                                                      without a sound card), pumped by the loop
 *   game --offline OUT.wav|OUT.raw [--cues FILE] ...  renders each frame's audio with lm_render
 *                                                      into its own buffer, as an audio callback
 *                                                      would, and writes it (WAV: float32 stereo);
 *                                                      --paced: one step every 1/60 s, as a
 *                                                      sound card calls its callback (else as
 *                                                      fast as it goes); each lm_render is timed
 *   game --self-test [--cues FILE]                    checks the API's error paths
 *
 * Build: make c-game (see README.md here).
 */
#define _POSIX_C_SOURCE 200809L /* clock_nanosleep in strict C99 */

#include <leitmotif.h>

#include "wav.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The game's clock: 60 steps a second. Offline, each step renders exactly one step of audio:
   48000 / 60 = 800 frames, so the sound and the game stay in step frame for frame. */
#define STEPS_PER_SECOND 60
#define SAMPLE_RATE 48000
#define FRAMES_PER_STEP (SAMPLE_RATE / STEPS_PER_SECOND)

/* ---- The scripted minute: what the player does, and when ---------------------------------- */

typedef struct scripted_event {
  double at_seconds;
  const char *cue;       /* a cue to post, or NULL for a parameter */
  const char *parameter; /* a parameter to set */
  double value;
  double ramp_seconds;
  lm_value payload[2];
  size_t payload_count;
} scripted_event;

static const scripted_event script[] = {
  {2, "level.start", NULL, 0, 0, {{"level", LM_VALUE_STRING, 0, "The Old Forest", 0}}, 1},
  {14, "area.dark", NULL, 0, 0, {{0}}, 0},
  {20, "enemy.spotted", NULL, 0, 0, {{"threat", LM_VALUE_NUMBER, 1, NULL, 0}, {"kind", LM_VALUE_STRING, 0, "wolf", 0}}, 2},
  {24, "area.light", NULL, 0, 0, {{0}}, 0},
  {30, "enemy.spotted", NULL, 0, 0, {{"threat", LM_VALUE_NUMBER, 3, NULL, 0}, {"kind", LM_VALUE_STRING, 0, "patrol", 0}}, 2},
  {33, NULL, "intensity", 0.8, 3, {{0}}, 0},
  {36, "player.hit", NULL, 0, 0, {{"damage", LM_VALUE_NUMBER, 20, NULL, 0}, {"critical", LM_VALUE_BOOL, 0, NULL, 1}}, 2},
  {38, NULL, "health", 0.2, 1, {{0}}, 0},
  {44, NULL, "health", 1, 2, {{0}}, 0},
  {48, "combat.end", NULL, 0, 0, {{0}}, 0},
  {56, "level.complete", NULL, 0, 0, {{0}}, 0},
};
static const size_t script_length = sizeof script / sizeof script[0];

/* ---- Output: reports arrive on Leitmotif's notification thread ----------------------------- */

static const char *report_kind_name(lm_report_kind kind) {
  switch (kind) {
  case LM_REPORT_FIRED: return "FIRED";
  case LM_REPORT_IGNORED: return "IGNORED";
  case LM_REPORT_STATE_CHANGED: return "STATE_CHANGED";
  case LM_REPORT_SCHEDULED: return "SCHEDULED";
  case LM_REPORT_FALLBACK: return "FALLBACK";
  case LM_REPORT_STINGER: return "STINGER";
  case LM_REPORT_NOW_PLAYING: return "NOW_PLAYING";
  case LM_REPORT_DROPPED: return "DROPPED";
  case LM_REPORT_RELOADED: return "RELOADED";
  case LM_REPORT_RELOAD_FAILED: return "RELOAD_FAILED";
  case LM_REPORT_PROBLEM: return "PROBLEM";
  case LM_REPORT_MUSIC_ENDED: return "MUSIC_ENDED";
  }
  return "?";
}

/* One line per report: `report TIME KIND STATE TEXT` (STATE is - when the report has none). The
   strings are valid during the call only: printed here, not kept. */
static void on_report(const lm_report *report, void *user_data) {
  (void)user_data;
  printf("report %.3f %s %s %s\n", report->time_seconds, report_kind_name(report->kind),
         report->state ? report->state : "-", report->text);
  /* The same as fields, no text to parse: who decided, what plays, and when it sounds. */
  if (report->rule || report->title || report->decided_seconds != report->sounding_seconds) {
    printf("fields %s rule=%s title=%s decided=%.3f sounding=%.3f\n", report_kind_name(report->kind),
           report->rule ? report->rule : "-", report->title ? report->title : "-", report->decided_seconds,
           report->sounding_seconds);
  }
  fflush(stdout);
}

/* The music's beats, as they are heard: a game would flash its lights here. Each downbeat is
   printed; every beat is counted. */
static long beats_heard = 0;
static void on_beat(const lm_beat *beat, void *user_data) {
  (void)user_data;
  beats_heard++;
  if (beat->beat == 1) {
    printf("downbeat %.3f bar %d (%d beats) frame %lld \"%s\"\n", beat->time_seconds, beat->bar, beat->beats_per_bar,
           (long long)beat->mix_frame, beat->title);
  }
}

/* The music's markers (named cue points of the cue file or the file's tags), as they are heard:
   a game would start a cutscene on one. */
static void on_marker(const lm_marker *marker, void *user_data) {
  (void)user_data;
  printf("marker %.3f \"%s\" at %.3f s of \"%s\" frame %lld\n", marker->time_seconds, marker->name,
         marker->file_seconds, marker->title, (long long)marker->mix_frame);
}

static void on_diagnostic(lm_diagnostic_severity severity, const char *message, void *user_data) {
  (void)user_data;
  static const char *names[] = {"notice", "warning", "error"};
  fprintf(stderr, "leitmotif %s: %s\n", names[severity <= LM_DIAGNOSTIC_ERROR ? severity : 2], message);
}

/* Stops with the call that failed and Leitmotif's reason. */
static void check(lm_engine *engine, lm_error error, const char *what) {
  if (error == LM_OK) return;
  fprintf(stderr, "game: %s failed: %s: %s\n", what, lm_error_name(error),
          engine ? lm_engine_last_error(engine) : lm_last_error());
  exit(1);
}


/* ---- The game -------------------------------------------------------------------------------- */

static void sleep_until(struct timespec *deadline) {
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) != 0) {}
}

/* How long the offline lm_render calls took: the slowest by the wall clock and by this
   thread's CPU time (which a busy machine's scheduling does not inflate), and how many took
   more than 2 ms, an eighth of a 16.7 ms step. */
typedef struct step_timing {
  long steps;
  long over_2ms_wall;
  double slowest_wall_ms, slowest_wall_at;
  double slowest_cpu_ms, slowest_cpu_at;
  double total_wall_ms;
} step_timing;

static double elapsed_ms(const struct timespec *from, const struct timespec *to) {
  return (double)(to->tv_sec - from->tv_sec) * 1e3 + (double)(to->tv_nsec - from->tv_nsec) / 1e6;
}

static void note_step(step_timing *timing, double wall_ms, double cpu_ms, double at) {
  timing->steps++;
  timing->total_wall_ms += wall_ms;
  if (wall_ms > 2) {
    timing->over_2ms_wall++;
    printf("game %.3f lm_render took %.3f ms (%.3f ms CPU)\n", at, wall_ms, cpu_ms);
  }
  if (wall_ms > timing->slowest_wall_ms) {
    timing->slowest_wall_ms = wall_ms;
    timing->slowest_wall_at = at;
  }
  if (cpu_ms > timing->slowest_cpu_ms) {
    timing->slowest_cpu_ms = cpu_ms;
    timing->slowest_cpu_at = at;
  }
}

static void print_step_times(const step_timing *timing) {
  if (timing->steps == 0) return;
  printf("game: lm_render steps: %ld, mean %.3f ms, slowest %.3f ms (wall, at %.3f s), %.3f ms (CPU, at %.3f s), "
         "%ld over 2 ms (wall)\n",
         timing->steps, timing->total_wall_ms / (double)timing->steps, timing->slowest_wall_ms,
         timing->slowest_wall_at, timing->slowest_cpu_ms, timing->slowest_cpu_at, timing->over_2ms_wall);
}

static void print_now_playing(lm_engine *engine, double game_seconds) {
  lm_now_playing_info info = {0};
  info.struct_size = sizeof info;
  check(engine, lm_now_playing(engine, &info), "lm_now_playing");
  if (!info.has_item) {
    printf("game %.3f now playing: nothing\n", game_seconds);
    return;
  }
  printf("game %.3f now playing: \"%s\" from %s, state %s, %.1f of %.1f s, volume %.2f\n", game_seconds,
         info.title, info.source[0] ? info.source : "-", info.audible_state[0] ? info.audible_state : "-",
         info.position_seconds, info.duration_seconds, info.volume);
}

static int run_game(const char *cues, const char *offline_path, int paced, double seconds) {
  lm_config config = lm_config_defaults();
  config.application_id = "org.leitmotif.c-game";
  config.usage_description = "The game plays your own songs while you explore.";
  config.cue_file = cues;
  config.diagnostic_callback = on_diagnostic;
  if (offline_path) {
    config.output = LM_OUTPUT_OFFLINE;
    config.sample_rate = SAMPLE_RATE;
    config.render_frames = 256;
  } else {
    config.output = LM_OUTPUT_DEFAULT_DEVICE;
    config.clocking = LM_CLOCKING_PUMPED; /* the loop below calls lm_update every step */
  }
  lm_engine *engine = NULL;
  check(NULL, lm_engine_create(&config, &engine), "lm_engine_create");
  check(engine, lm_set_report_callback(engine, on_report, NULL), "lm_set_report_callback");
  check(engine, lm_set_beat_callback(engine, on_beat, NULL), "lm_set_beat_callback");
  check(engine, lm_set_marker_callback(engine, on_marker, NULL), "lm_set_marker_callback");

  /* On the desktop's media controls (media keys as the cue file's mediaKeys say), and the
     player's own music app handled as its systemMusic says, where there is a session bus. Real
     time only: an offline render is not what the player hears now. Without a bus the calls say
     so (LM_ERROR_UNAVAILABLE) and the game plays on. */
  if (!offline_path) {
    lm_error desktop = lm_desktop_publish(engine, "Leitmotif C game", NULL);
    if (desktop == LM_OK) desktop = lm_system_music_start(engine);
    printf("game: desktop media controls: %s\n", desktop == LM_OK ? "on" : lm_engine_last_error(engine));
  }

  lm_authorization consent;
  check(engine, lm_library_authorization_status(engine, &consent), "lm_library_authorization_status");
  printf("game: music library %s\n", consent == LM_AUTHORIZATION_AUTHORIZED ? "authorized: your songs may play"
                                                                             : "not authorized: bundled music plays");

  FILE *out = NULL;
  int wav = 0;
  if (offline_path) {
    out = fopen(offline_path, "wb");
    if (!out) {
      perror(offline_path);
      return 1;
    }
    size_t length = strlen(offline_path);
    wav = length > 4 && strcmp(offline_path + length - 4, ".wav") == 0;
    if (wav) write_wav_header(out, 0, SAMPLE_RATE);
  }

  /* The game's audio buffer: one step of interleaved stereo, owned here and filled by lm_render. */
  static float audio[FRAMES_PER_STEP * 2];
  check(engine, lm_start(engine, NULL), "lm_start");

  long steps = (long)(seconds * STEPS_PER_SECOND);
  step_timing timing;
  memset(&timing, 0, sizeof timing);
  size_t next_event = 0;
  uint32_t frames_written = 0;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  for (long step = 0; step < steps; step++) {
    double now = (double)step / STEPS_PER_SECOND;
    /* Game logic: whatever the script says happens at this step. */
    while (next_event < script_length && script[next_event].at_seconds <= now) {
      const scripted_event *event = &script[next_event++];
      if (event->cue) {
        printf("game %.3f post %s\n", now, event->cue);
        check(engine, lm_post(engine, event->cue, event->payload, event->payload_count), "lm_post");
      } else {
        printf("game %.3f set %s %.2f over %.1f s\n", now, event->parameter, event->value, event->ramp_seconds);
        check(engine, lm_set_parameter(engine, event->parameter, event->value, event->ramp_seconds),
              "lm_set_parameter");
      }
    }
    if (step % (10 * STEPS_PER_SECOND) == 5 * STEPS_PER_SECOND) print_now_playing(engine, now);

    if (offline_path) {
      /* What an audio callback does: fill the device's buffer with the next frames. Each call
         is timed (wall clock and this thread's CPU time): an audio callback has a deadline. */
      struct timespec wall0, wall1, cpu0, cpu1;
      clock_gettime(CLOCK_MONOTONIC, &wall0);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
      check(engine, lm_render(engine, audio, FRAMES_PER_STEP), "lm_render");
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
      clock_gettime(CLOCK_MONOTONIC, &wall1);
      note_step(&timing, elapsed_ms(&wall0, &wall1), elapsed_ms(&cpu0, &cpu1), now);
      fwrite(audio, sizeof(float), FRAMES_PER_STEP * 2, out);
      frames_written += FRAMES_PER_STEP;
    } else {
      check(engine, lm_update(engine), "lm_update");
    }
    if (!offline_path || paced) {
      deadline.tv_nsec += 1000000000L / STEPS_PER_SECOND;
      if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
      }
      sleep_until(&deadline);
    }
  }

  check(engine, lm_flush_reports(engine), "lm_flush_reports");
  printf("game: %ld beats heard\n", beats_heard);
  if (offline_path) print_step_times(&timing);
  char current[64];
  check(engine, lm_get_state(engine, current, sizeof current, NULL, 0), "lm_get_state");
  printf("game: finished %.0f s in state %s\n", seconds, current[0] ? current : "-");
  if (out) {
    if (wav) write_wav_header(out, frames_written, SAMPLE_RATE);
    fclose(out);
    printf("game: rendered %u frames to %s\n", frames_written, offline_path);
  }
  check(engine, lm_engine_destroy(engine), "lm_engine_destroy");
  return 0;
}

/* ---- --self-test: the error paths ----------------------------------------------------------- */

static int failures = 0;
static int checks = 0;

static void expect(lm_error actual, lm_error expected, const char *what) {
  checks++;
  if (actual == expected) {
    printf("ok   %s: %s\n", what, lm_error_name(actual));
  } else {
    failures++;
    printf("FAIL %s: %s, expected %s (%s)\n", what, lm_error_name(actual), lm_error_name(expected), lm_last_error());
  }
}

static void expect_true(int condition, const char *what) {
  checks++;
  if (condition) {
    printf("ok   %s\n", what);
  } else {
    failures++;
    printf("FAIL %s\n", what);
  }
}

static lm_error destroy_result = LM_OK;
static int destroy_attempted = 0;

/* Tries to destroy its own engine from inside the callback: must be refused, not deadlock. */
static void destroying_report(const lm_report *report, void *user_data) {
  (void)report;
  if (destroy_attempted) return;
  destroy_attempted = 1;
  destroy_result = lm_engine_destroy((lm_engine *)user_data);
}

/* The engine the prompt tries to destroy (it must be refused: the request still runs), and how. */
static lm_engine *prompt_engine = NULL;
static lm_error prompt_destroyed = LM_OK;

static int prompt_yes(const char *name, const char *usage, void *user_data) {
  (void)name;
  (void)usage;
  (*(int *)user_data)++;
  if (prompt_engine) prompt_destroyed = lm_engine_destroy(prompt_engine);
  return 1;
}

/* The consent callback's last status, from Leitmotif's thread (-1: not called yet). */
static pthread_mutex_t consent_lock = PTHREAD_MUTEX_INITIALIZER;
static int consent_seen = -1;
static void on_consent(lm_authorization status, void *user_data) {
  (void)user_data;
  pthread_mutex_lock(&consent_lock);
  consent_seen = (int)status;
  pthread_mutex_unlock(&consent_lock);
}

/* A thread that keeps calling into an engine until it is destroyed under it: every call must
   complete (LM_OK, or LM_ERROR_BUS_FULL for a post) or see LM_ERROR_INVALID_HANDLE. */
typedef struct racer {
  lm_engine *engine;
  int kind;
  long calls;
  int unexpected;
} racer;

static void *race(void *argument) {
  racer *self = argument;
  float frames[64 * 2];
  for (;;) {
    lm_error error;
    lm_now_playing_info info = {0};
    info.struct_size = sizeof info;
    switch (self->kind) {
    case 0: error = lm_post(self->engine, "player.hit", NULL, 0); break;
    case 1: error = lm_now_playing(self->engine, &info); break;
    case 2: error = lm_render(self->engine, frames, 64); break;
    default: error = lm_set_parameter(self->engine, "health", 0.5, 0.1); break;
    }
    self->calls++;
    if (error == LM_ERROR_INVALID_HANDLE) return NULL;
    if (error != LM_OK && error != LM_ERROR_BUS_FULL) self->unexpected++;
  }
}

static lm_config offline_config(const char *cues) {
  lm_config config = lm_config_defaults();
  config.application_id = "org.leitmotif.c-game.self-test";
  config.usage_description = "Tests ask.";
  config.cue_file = cues;
  config.output = LM_OUTPUT_OFFLINE;
  return config;
}

static int self_test(const char *cues) {
  float buffer[512 * 2];
  lm_engine *engine = NULL;
  expect_true(lm_version() == LM_VERSION, "the library's version is the header's");

  /* Mounts. */
  static const char bytes[] = "not music";
  expect(lm_mount_memory(NULL, bytes, sizeof bytes), LM_ERROR_INVALID_ARGUMENT, "mount at a NULL path");
  expect(lm_mount_memory("/self-test/a.ogg", bytes, 0), LM_ERROR_INVALID_ARGUMENT, "mount 0 bytes");
  expect(lm_mount_memory("/self-test/a.ogg", bytes, SIZE_MAX), LM_ERROR_INVALID_ARGUMENT, "mount SIZE_MAX bytes");
  expect(lm_mount_memory("/self-test/a.ogg", NULL, 4), LM_ERROR_INVALID_ARGUMENT, "mount NULL data");
  expect(lm_mount_files("/self-test", NULL, 0, NULL), LM_ERROR_INVALID_ARGUMENT, "mount NULL callbacks");
  lm_file_callbacks no_reader;
  memset(&no_reader, 0, sizeof no_reader);
  no_reader.struct_size = sizeof no_reader;
  expect(lm_mount_files("/self-test", NULL, 0, &no_reader), LM_ERROR_INVALID_ARGUMENT, "mount without open/read");
  expect(lm_mount_memory("/self-test/a.ogg", bytes, sizeof bytes), LM_OK, "mount a buffer");
  expect(lm_mount_memory("/self-test", bytes, sizeof bytes), LM_ERROR_INVALID_ARGUMENT, "mount around a mount");
  lm_config mounted = offline_config("/self-test/a.ogg");
  expect(lm_engine_create(&mounted, &engine), LM_ERROR_CUE_FILE, "a mounted file that is not a cue file");
  expect(lm_unmount("/self-test/a.ogg"), LM_OK, "unmount");
  expect(lm_unmount("/self-test/a.ogg"), LM_ERROR_INVALID_ARGUMENT, "unmount twice");

  /* Creation. */
  expect(lm_engine_create(NULL, &engine), LM_ERROR_INVALID_ARGUMENT, "create with a NULL config");
  expect_true(strlen(lm_last_error()) > 0, "lm_last_error says why");
  lm_config config = offline_config(cues);
  config.struct_size = 0;
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with struct_size 0");
  config = offline_config("/nonexistent/cues.json5");
  expect(lm_engine_create(&config, &engine), LM_ERROR_CUE_FILE, "create with a missing cue file");
  expect_true(engine == NULL, "a failed create leaves *out NULL");
  config = offline_config(cues);
  config.application_id = "\xff\xfe";
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with a bad UTF-8 application id");
  config = offline_config(cues);
  config.render_frames = 100000;
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with render_frames out of range");
  config = offline_config(cues);
  config.output = (lm_output_kind)42;
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with an unknown output kind");
  config = offline_config(cues);
  config.latency = (lm_latency)7;
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with an unknown latency");
  config = offline_config(cues);
  config.latency = LM_LATENCY_LOW;
  expect(lm_engine_create(&config, &engine), LM_OK, "create with low latency (an offline engine ignores it)");
  expect(lm_engine_destroy(engine), LM_OK, "destroy it");
  engine = NULL;
  /* A game built against the 0.1 header passes a struct that ends before latency. */
  config = offline_config(cues);
  config.struct_size = offsetof(lm_config, latency);
  config.latency = (lm_latency)7; /* beyond the struct it says it has: never read */
  expect(lm_engine_create(&config, &engine), LM_OK, "create from a 0.1 lm_config (no latency field)");
  expect(lm_engine_destroy(engine), LM_OK, "destroy it");
  engine = NULL;
  config = offline_config(cues);
  config.struct_size = offsetof(lm_config, latency) - 1;
  expect(lm_engine_create(&config, &engine), LM_ERROR_INVALID_ARGUMENT, "create with a struct_size short of 0.1's");

  /* A program built against another major version's header, or a newer one, is refused. */
  config = offline_config(cues);
  expect(lm_engine_create_versioned(&config, &engine, LM_VERSION + 10000), LM_ERROR_VERSION,
         "create from a header of the next major version");
  expect_true(strstr(lm_last_error(), "another major version") != NULL, "the message says another major version");
  expect(lm_engine_create_versioned(&config, &engine, LM_VERSION + 100), LM_ERROR_VERSION,
         "create from a newer header of the same major version");
  expect(lm_engine_create_versioned(&config, &engine, -1), LM_ERROR_VERSION, "create from header version -1");
  expect_true(strcmp(lm_error_name(LM_ERROR_VERSION), "LM_ERROR_VERSION") == 0, "LM_ERROR_VERSION has its name");
  if (LM_VERSION_MINOR > 0 || LM_VERSION_PATCH > 0) {
    expect(lm_engine_create_versioned(&config, &engine, LM_VERSION_MAJOR * 10000), LM_OK,
           "create from an older header of the same major version");
    expect(lm_engine_destroy(engine), LM_OK, "destroy it");
    engine = NULL;
  }

  /* NULL and made-up handles. */
  expect(lm_post(NULL, "level.start", NULL, 0), LM_ERROR_INVALID_HANDLE, "post on a NULL handle");
  expect_true(strlen(lm_engine_last_error(NULL)) > 0, "lm_engine_last_error(NULL) is a message");
  expect(lm_player_play((lm_engine *)(uintptr_t)0x1234), LM_ERROR_INVALID_HANDLE, "play on a made-up handle");
  expect(lm_engine_destroy(NULL), LM_ERROR_INVALID_HANDLE, "destroy NULL");

  /* An offline engine: bad arguments. */
  config = offline_config(cues);
  expect(lm_engine_create(&config, &engine), LM_OK, "create an offline engine");
  expect(lm_post(engine, "\xc3\x28", NULL, 0), LM_ERROR_INVALID_ARGUMENT, "post a bad UTF-8 cue name");
  expect_true(strstr(lm_engine_last_error(engine), "UTF-8") != NULL, "the message names UTF-8");
  expect(lm_post(engine, "", NULL, 0), LM_ERROR_INVALID_ARGUMENT, "post an empty cue name");
  {
    /* A megabyte of name: refused, and the message quotes it cut, not whole. */
    size_t huge = 1 << 20;
    char *name = malloc(huge + 1);
    if (name) {
      memset(name, 'a', huge);
      name[huge] = 0;
      expect(lm_post(engine, name, NULL, 0), LM_ERROR_INVALID_ARGUMENT, "post a 1 MiB cue name");
      expect_true(strlen(lm_engine_last_error(engine)) < 2000, "the message quotes it cut");
      expect(lm_set_parameter(engine, name, 1, 0), LM_ERROR_INVALID_ARGUMENT, "set a 1 MiB parameter name");
      expect_true(strlen(lm_engine_last_error(engine)) < 2000, "that message quotes it cut too");
      free(name);
    }
  }
  expect(lm_post(engine, "player.hit", NULL, 1), LM_ERROR_INVALID_ARGUMENT, "post a count with a NULL payload");
  lm_value bad_key = {NULL, LM_VALUE_NUMBER, 1, NULL, 0};
  expect(lm_post(engine, "player.hit", &bad_key, 1), LM_ERROR_INVALID_ARGUMENT, "post a NULL payload key");
  lm_value not_a_number = {"damage", LM_VALUE_NUMBER, NAN, NULL, 0};
  expect(lm_post(engine, "player.hit", &not_a_number, 1), LM_ERROR_INVALID_ARGUMENT, "post a NaN payload number");
  lm_value bad_type = {"damage", (lm_value_type)7, 1, NULL, 0};
  expect(lm_post(engine, "player.hit", &bad_type, 1), LM_ERROR_INVALID_ARGUMENT, "post an unknown payload type");
  lm_value good = {"damage", LM_VALUE_NUMBER, 10, NULL, 0};
  expect(lm_post(engine, "player.hit", &good, 1), LM_OK, "post a good event");
  expect(lm_player_set_rate(engine, 9.0f), LM_ERROR_INVALID_ARGUMENT, "rate 9 (out of range)");
  expect(lm_player_set_rate(engine, -1.0f), LM_ERROR_INVALID_ARGUMENT, "rate -1");
  expect(lm_player_set_rate(engine, NAN), LM_ERROR_INVALID_ARGUMENT, "rate NaN");
  expect(lm_player_set_tempo(engine, 3.0f), LM_ERROR_INVALID_ARGUMENT, "tempo 3 (out of range)");
  expect(lm_player_set_tempo(engine, NAN), LM_ERROR_INVALID_ARGUMENT, "tempo NaN");
  expect(lm_player_set_tempo(engine, 1.0f), LM_OK, "tempo 1");
  expect(lm_player_set_volume(engine, 2.0f), LM_ERROR_INVALID_ARGUMENT, "volume 2");
  expect(lm_player_seek(engine, -1.0), LM_ERROR_INVALID_ARGUMENT, "seek to -1 s");
  expect(lm_set_parameter(engine, "no.such.parameter", 1, 0), LM_ERROR_INVALID_ARGUMENT, "an unknown parameter");
  expect(lm_set_parameter(engine, "health", 0.5, -1), LM_ERROR_INVALID_ARGUMENT, "a negative ramp");
  expect(lm_start(engine, "no.such.state"), LM_ERROR_INVALID_ARGUMENT, "start in an unknown state");
  expect(lm_set_report_timing(engine, (lm_report_timing)7), LM_ERROR_INVALID_ARGUMENT, "an unknown report timing");
  expect(lm_set_report_timing(engine, LM_REPORTS_WHEN_HEARD), LM_OK, "reports when heard, before lm_start");
  expect(lm_set_report_timing(engine, LM_REPORTS_WHEN_DECIDED), LM_OK, "and back to when decided");
  {
    lm_engine *started = NULL;
    lm_config started_config = offline_config(cues);
    expect(lm_engine_create(&started_config, &started), LM_OK, "create a second offline engine");
    expect(lm_start(started, NULL), LM_OK, "start it");
    expect(lm_set_report_timing(started, LM_REPORTS_WHEN_HEARD), LM_ERROR_WRONG_MODE, "report timing after lm_start");
    expect(lm_engine_destroy(started), LM_OK, "destroy it");
  }
  expect(lm_update(engine), LM_ERROR_WRONG_MODE, "lm_update on an offline engine");
  expect(lm_render(engine, NULL, 16), LM_ERROR_INVALID_ARGUMENT, "render into NULL");
  expect(lm_render(engine, NULL, 0), LM_OK, "render 0 frames into NULL");
  {
    double health = -1;
    expect(lm_set_parameter(engine, "health", 0.25, 0), LM_OK, "set health to 0.25");
    expect(lm_get_parameter(engine, "health", &health), LM_OK, "read health back");
    expect_true(health == 0.25, "a parameter set without a ramp reads back at once");
    expect(lm_set_parameter(engine, "health", 1, 0), LM_OK, "set health back to 1");
  }
  lm_now_playing_info info = {0};
  expect(lm_now_playing(engine, &info), LM_ERROR_INVALID_ARGUMENT, "now playing with struct_size 0");
  lm_authorization status = (lm_authorization)-1;
  expect(lm_library_authorization_status(engine, &status), LM_OK, "the library's authorization");
  expect_true(status >= LM_AUTHORIZATION_NOT_DETERMINED && status <= LM_AUTHORIZATION_AUTHORIZED, "a known status");
  {
    /* The victory fanfare is a bridge in the default cue file, not a stinger: not kept in memory
       until preloaded. */
    char fanfare[4096];
    const char *slash = strrchr(cues, '/');
    snprintf(fanfare, sizeof fanfare, "%.*smusic/stinger-victory.ogg", slash ? (int)(slash - cues + 1) : 0, cues);
    expect(lm_preload(engine, fanfare), LM_OK, "preload the victory fanfare");
    expect(lm_unload(engine, fanfare), LM_OK, "unload it");
    expect(lm_preload(engine, "stinger-victory.ogg"), LM_OK, "preload it as the cue file's sources name it");
    expect(lm_unload(engine, "stinger-victory.ogg"), LM_OK, "unload it by that name");
    expect(lm_unload(engine, fanfare), LM_ERROR_INVALID_ARGUMENT, "unload a file no longer preloaded");
    expect(lm_preload(engine, "/no/such/music.ogg"), LM_ERROR_AUDIO_FILE, "preload a missing file");
    expect_true(strstr(lm_engine_last_error(engine), "/no/such/music.ogg") != NULL, "the message names the file");
    expect(lm_preload(engine, NULL), LM_ERROR_INVALID_ARGUMENT, "preload NULL");
    expect(lm_set_preload_budget(engine, 1000), LM_OK, "a preload budget of 1000 bytes");
    expect(lm_preload(engine, fanfare), LM_ERROR_AUDIO_FILE, "preload over the budget");
    expect_true(strstr(lm_engine_last_error(engine), "budget") != NULL, "the message names the budget");
    expect(lm_set_preload_budget(engine, (size_t)64 << 20), LM_OK, "the budget back to 64 MiB");
  }
  expect(lm_set_master_volume(engine, 2.0f, 0), LM_ERROR_INVALID_ARGUMENT, "master volume 2");
  expect(lm_set_master_volume(engine, 0.5f, -1), LM_ERROR_INVALID_ARGUMENT, "master volume with a negative ramp");
  expect(lm_set_master_volume(engine, 0.5f, 1e308), LM_ERROR_INVALID_ARGUMENT, "master volume over 1e308 s");
  if (status != LM_AUTHORIZATION_AUTHORIZED) {
    size_t total = 0;
    expect(lm_library_query(engine, NULL, NULL, 0, NULL, &total), LM_ERROR_LIBRARY, "a query without consent");
  }
  if (getenv("LM_SELF_TEST_LIBRARY")) { /* writes the answer under $HOME: the test sets a temporary HOME */
    int asked = 0, seen = -1;
    expect(lm_set_authorization_callback(engine, on_consent, NULL), LM_OK, "a consent callback");
    prompt_engine = engine;
    expect(lm_library_request_authorization(engine, prompt_yes, &asked, &status), LM_OK, "request authorization");
    prompt_engine = NULL;
    expect_true(asked == 1 && status == LM_AUTHORIZATION_AUTHORIZED, "the game's prompt was asked; yes");
    expect_true(prompt_destroyed == LM_ERROR_WRONG_MODE, "destroying the engine from its prompt is refused");
    for (int waited = 0; waited < 300 && seen != LM_AUTHORIZATION_AUTHORIZED; waited++) { /* up to 3 s */
      struct timespec tick = {0, 10 * 1000 * 1000};
      nanosleep(&tick, NULL);
      pthread_mutex_lock(&consent_lock);
      seen = consent_seen;
      pthread_mutex_unlock(&consent_lock);
    }
    expect_true(seen == LM_AUTHORIZATION_AUTHORIZED, "the consent callback heard the change to authorized");
    expect(lm_set_authorization_callback(engine, NULL, NULL), LM_OK, "remove the consent callback");

    /* The library's queries, picks and queue: bad arguments (the index is empty here). */
    lm_media_item items[2];
    size_t count = 9, total = 9;
    lm_query query = lm_query_defaults();
    lm_predicate bad = lm_predicate_text(LM_PROPERTY_BEATS_PER_MINUTE, LM_COMPARE_CONTAINS, "fast");
    uint64_t unknown = 987654321;
    items[0].struct_size = sizeof items[0];
    expect(lm_library_query(engine, NULL, NULL, 0, &count, &total), LM_OK, "count every song");
    expect_true(count == 0 && total == 0, "counting copies nothing; the index is empty");
    query.predicates = &bad;
    query.predicate_count = 1;
    expect(lm_library_query(engine, &query, items, 2, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "a query with contains on a number");
    expect_true(strstr(lm_engine_last_error(engine), "beatsPerMinute") != NULL, "the message names the property");
    expect_true(strstr(lm_engine_last_error(engine), "\"fast\"") != NULL, "the message quotes the text given");
    query.predicate_count = 0;
    query.playlist_id = 12345;
    expect(lm_library_query(engine, &query, items, 2, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "a query of an unknown playlist");
    expect(lm_library_query(engine, NULL, items, 0, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "items with a capacity of 0");
    items[0].struct_size = 8;
    expect(lm_library_query(engine, NULL, items, 2, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "items with a struct_size too small");
    /* A program built against a header from before `mood` passes the struct without it. */
    items[0].struct_size = offsetof(lm_media_item, mood);
    expect(lm_library_query(engine, NULL, items, 2, &count, &total), LM_OK, "items as an older header had them");
    /* Sizes of 2^63 or more (a negative number cast to size_t): refused, never a crash. */
    items[0].struct_size = sizeof items[0];
    expect(lm_library_query(engine, NULL, items, SIZE_MAX, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "items with a capacity of SIZE_MAX");
    expect_true(strstr(lm_engine_last_error(engine), "18446744073709551615") != NULL,
                "the message gives the capacity as C has it");
    query = lm_query_defaults();
    query.offset = (size_t)1 << 63;
    expect(lm_library_query(engine, &query, items, 2, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "a query from an offset of 2^63");
    query.offset = 0;
    query.predicates = &bad;
    query.predicate_count = SIZE_MAX;
    expect(lm_library_query(engine, &query, items, 2, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "a query of SIZE_MAX predicates");
    query = lm_query_defaults();
    lm_playlist lists[1];
    lists[0].struct_size = sizeof lists[0];
    expect(lm_library_playlists(engine, lists, SIZE_MAX, &count, &total), LM_ERROR_INVALID_ARGUMENT,
           "playlists with a capacity of SIZE_MAX");
    expect(lm_set_queue(engine, &unknown, 1, 1, LM_AT_NOW, LM_REPEAT_ALL), LM_ERROR_INVALID_ARGUMENT,
           "queue an unknown song");
    expect_true(strstr(lm_engine_last_error(engine), "987654321") != NULL, "the message names the id");
    expect(lm_set_queue(engine, NULL, 0, 0, (lm_moment)9, LM_REPEAT_ALL), LM_ERROR_INVALID_ARGUMENT,
           "queue at an unknown moment");
    expect(lm_set_queue(engine, NULL, 0, 0, LM_AT_NOW, (lm_repeat_mode)9), LM_ERROR_INVALID_ARGUMENT,
           "queue with an unknown repeat mode");
    expect(lm_set_queue_shuffled(engine, NULL, 0, 0, LM_AT_NOW, LM_REPEAT_ALL, (lm_shuffle_mode)7),
           LM_ERROR_INVALID_ARGUMENT, "queue with an unknown shuffle mode");
    expect_true(strstr(lm_engine_last_error(engine), "shuffle 7") != NULL, "the message names the shuffle mode");
    expect(lm_set_picks(engine, NULL, 2), LM_ERROR_INVALID_ARGUMENT, "picks: NULL ids with a count");
    expect(lm_set_picks(engine, NULL, 0), LM_OK, "clear the picks");
  }

  /* The engine works: a render plays the start state. */
  expect(lm_set_parameter(engine, "health", 0.5, 0), LM_OK, "a known parameter");
  expect(lm_player_set_rate(engine, 1.0f), LM_OK, "rate 1");
  expect(lm_render(engine, buffer, 512), LM_OK, "render 512 frames");
  char state[64], tiny[3];
  expect(lm_get_state(engine, state, sizeof state, NULL, 0), LM_OK, "get the state");
  expect(lm_get_state(engine, state, SIZE_MAX, NULL, 0), LM_ERROR_INVALID_ARGUMENT, "the state into SIZE_MAX bytes");
  expect_true(strcmp(state, "menu") == 0, "the start state is menu");
  /* The game's commands: a state of its own choosing, a stinger, a stop with a fade. */
  expect(lm_set_state(engine, "combat", 0, LM_AT_NOW), LM_OK, "set the state to combat");
  expect(lm_set_state(engine, "no.such.state", 0, LM_AT_NOW), LM_ERROR_INVALID_ARGUMENT, "set an unknown state");
  expect(lm_set_state(engine, "combat", -1, LM_AT_NOW), LM_ERROR_INVALID_ARGUMENT, "a negative crossfade");
  expect(lm_play_stinger(engine, "no.such.source", LM_AT_NOW, 1), LM_ERROR_INVALID_ARGUMENT, "an unknown stinger");
  expect(lm_play_stinger(engine, "spotted", LM_AT_END, 1), LM_ERROR_INVALID_ARGUMENT, "a stinger at the item's end");
  expect(lm_set_state(engine, "combat", 1e308, LM_AT_NOW), LM_ERROR_INVALID_ARGUMENT, "a crossfade of 1e308 s");
  expect(lm_skip(engine, (lm_skip_direction)42), LM_ERROR_INVALID_ARGUMENT, "an unknown skip direction");
  expect(lm_set_music_volume(engine, 2, 0), LM_ERROR_INVALID_ARGUMENT, "music volume 2");
  expect(lm_render(engine, buffer, 512), LM_OK, "render after the commands");
  expect(lm_get_state(engine, state, sizeof state, NULL, 0), LM_OK, "get the state again");
  expect_true(strcmp(state, "combat") == 0, "lm_set_state moved to combat");
  expect(lm_stop(engine, 0.05), LM_OK, "stop with a 50 ms fade");
  {
    float loudest = 0;
    for (int i = 0; i < 20; i++) lm_render(engine, buffer, 512); /* 0.2 s: past the fade */
    for (int i = 0; i < 512 * 2; i++) loudest = fabsf(buffer[i]) > loudest ? fabsf(buffer[i]) : loudest;
    expect_true(loudest < 1e-4f, "after lm_stop's fade the music is silent");
  }
  expect(lm_get_state(engine, state, sizeof state, NULL, 0), LM_OK, "get the state after the stop");
  expect_true(state[0] == 0, "after lm_stop no state holds (the rules see none)");
  expect(lm_resume(engine, 0), LM_OK, "resume");
  expect(lm_render(engine, buffer, 512), LM_OK, "render: the resume is taken");
  expect(lm_get_state(engine, state, sizeof state, NULL, 0), LM_OK, "get the state after the resume");
  expect_true(strcmp(state, "combat") == 0, "lm_resume starts the stopped state again");
  expect(lm_play_stinger(engine, "spotted", LM_AT_BEAT, 0.8f), LM_OK, "a stinger on the beat");
  info.struct_size = sizeof info;
  expect(lm_now_playing(engine, &info), LM_OK, "now playing");
  expect_true(info.has_item && info.title[0] && info.path[0] == '/' && !info.truncated,
              "now playing: a title and a path, copied into the caller's struct");
  expect(lm_get_state(engine, tiny, sizeof tiny, NULL, 0), LM_OK, "get the state into 3 bytes");
  expect(lm_get_state(engine, state, sizeof state, NULL, 0), LM_OK, "get the state in full");
  expect_true(strlen(state) > 2 && strlen(tiny) == 2 && strncmp(tiny, state, 2) == 0,
              "a state name is cut to fit, NUL-terminated");
  expect(lm_get_state(engine, state, 0, NULL, 0), LM_ERROR_INVALID_ARGUMENT, "a buffer of size 0");
  expect(lm_get_state(engine, NULL, 8, NULL, 0), LM_ERROR_INVALID_ARGUMENT, "a NULL buffer with a size");

  /* A stale handle: destroyed, then its slot reused by a new engine. */
  lm_engine *stale = engine;
  expect(lm_engine_destroy(engine), LM_OK, "destroy");
  expect(lm_post(stale, "level.start", NULL, 0), LM_ERROR_INVALID_HANDLE, "post on a destroyed engine");
  expect(lm_render(stale, buffer, 16), LM_ERROR_INVALID_HANDLE, "render on a destroyed engine");
  expect(lm_engine_destroy(stale), LM_ERROR_INVALID_HANDLE, "destroy twice");
  expect(lm_engine_create(&config, &engine), LM_OK, "a new engine");
  expect_true(engine != stale, "the new handle differs from the stale one");
  expect(lm_post(stale, "level.start", NULL, 0), LM_ERROR_INVALID_HANDLE, "the stale handle stays stale");

  /* Destroying from inside its own callback is refused (it would wait for itself). */
  expect(lm_set_report_callback(engine, destroying_report, engine), LM_OK, "set a report callback");
  expect(lm_render(engine, buffer, 512), LM_OK, "render (reports the start)");
  expect(lm_flush_reports(engine), LM_OK, "flush the reports");
  expect_true(destroy_attempted, "the callback ran");
  expect(destroy_result, LM_ERROR_WRONG_MODE, "destroy from inside the callback");
  expect(lm_engine_destroy(engine), LM_OK, "destroy from the game's thread");

  /* A full bus drops the event and says so. */
  config.bus_capacity = 2;
  expect(lm_engine_create(&config, &engine), LM_OK, "an engine with a bus of 2");
  lm_error last = LM_OK;
  for (int i = 0; i < 4 && last == LM_OK; i++) last = lm_post(engine, "player.hit", NULL, 0);
  expect(last, LM_ERROR_BUS_FULL, "post on a full bus");
  expect(lm_engine_destroy(engine), LM_OK, "destroy");

  /* A real-time engine does not render on demand. */
  config = offline_config(cues);
  config.output = LM_OUTPUT_HEADLESS;
  expect(lm_engine_create(&config, &engine), LM_OK, "create a headless engine");
  expect(lm_render(engine, buffer, 16), LM_ERROR_WRONG_MODE, "render on a real-time engine");
  expect(lm_update(engine), LM_ERROR_WRONG_MODE, "lm_update on an own-thread engine");
  expect(lm_engine_destroy(engine), LM_OK, "destroy the headless engine");

  /* Calls on four threads while the game's thread destroys the engine under them. */
  config = offline_config(cues);
  expect(lm_engine_create(&config, &engine), LM_OK, "an engine to race");
  racer racers[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    racers[i] = (racer){engine, i, 0, 0};
    pthread_create(&threads[i], NULL, race, &racers[i]);
  }
  struct timespec pause = {0, 50 * 1000 * 1000};
  nanosleep(&pause, NULL);
  expect(lm_engine_destroy(engine), LM_OK, "destroy while four threads call it");
  int unexpected = 0;
  long calls = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(threads[i], NULL);
    unexpected += racers[i].unexpected;
    calls += racers[i].calls;
  }
  expect_true(unexpected == 0 && calls > 4, "calls racing with lm_engine_destroy complete or see LM_ERROR_INVALID_HANDLE");

  printf("self-test: %d of %d checks passed\n", checks - failures, checks);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *cues = "Assets/cues.json5";
  const char *offline_path = NULL;
  double seconds = 60;
  int self_testing = 0;
  int paced = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--offline") == 0 && i + 1 < argc) {
      offline_path = argv[++i];
    } else if (strcmp(argv[i], "--cues") == 0 && i + 1 < argc) {
      cues = argv[++i];
    } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--paced") == 0) {
      paced = 1;
    } else if (strcmp(argv[i], "--self-test") == 0) {
      self_testing = 1;
    } else {
      fprintf(stderr, "usage: %s [--offline OUT.wav|OUT.raw [--paced]] [--cues FILE] [--seconds N] [--self-test]\n", argv[0]);
      return 2;
    }
  }
  if (self_testing) return self_test(cues);
  if (!(seconds > 0 && seconds <= 3600)) {
    fprintf(stderr, "game: --seconds expects 0 to 3600\n");
    return 2;
  }
  if (paced && !offline_path) {
    fprintf(stderr, "game: --paced paces an offline render: give --offline OUT.wav too\n");
    return 2;
  }
  return run_game(cues, offline_path, paced, seconds);
}
