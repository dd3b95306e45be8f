/*
 * The player's own music as the soundtrack, from C: a game's music menu on Leitmotif's C API.
 * It asks for the player's consent, scans their music folder, lists their playlists and the
 * songs a query finds (a page at a time, as a menu shows them), takes the songs of the picker's
 * search as the player's picks, and plays the query's songs as the game's queue: crossfading
 * in on the bar over the state's music, the cue file's rules going on around it, and a fade of
 * the master volume at the end.
 *
 *   jukebox --library DIR [--cues FILE] [--offline OUT.wav] [--seconds N] [--yes]
 *           [--artist TEXT] [--mood TEXT] [--pick TEXT] [--post SECONDS CUE] [--shuffle songs|albums]
 *
 *   --library DIR      the player's music folder (Ogg Vorbis, Opus, MP3, FLAC, WAV, AIFF; M3U playlists)
 *   --cues FILE        the cue file (default Assets/cues.json5)
 *   --offline OUT.wav  renders with lm_render and writes the WAV (else plays live: the default
 *                      device, headless without a sound card)
 *   --seconds N        how long (default 20); the master volume fades out over the last 3 s
 *   --yes              answers the consent question yes (else it is asked on the terminal)
 *   --artist TEXT      the queue: songs whose artist contains TEXT (default: every song)
 *   --mood TEXT        the queue: songs whose MOOD tag is TEXT (with --artist: both hold)
 *   --pick TEXT        the picker's search: the songs it finds become the player's picks,
 *                      the music of the cue file's `picks` sources
 *   --post SECONDS CUE posts CUE at that time (one that enters a state playing the picks)
 *   --shuffle MODE     shuffles the queue song by song or album by album (each lap afresh)
 *
 * Build: make c-game (see README.md here).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep in strict C99 */

#include <leitmotif.h>

#include "wav.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SAMPLE_RATE 48000
/* One game step of audio at 60 steps a second. */
#define FRAMES_PER_STEP (SAMPLE_RATE / 60)
/* A menu page: how many songs one lm_library_query call copies. */
#define PAGE 4
/* The most songs this example queues or picks. */
#define MAX_SONGS 256

static void fail(lm_engine *engine, lm_error error, const char *what) {
  fprintf(stderr, "jukebox: %s failed: %s: %s\n", what, lm_error_name(error),
          engine ? lm_engine_last_error(engine) : lm_last_error());
  exit(1);
}

static void check(lm_engine *engine, lm_error error, const char *what) {
  if (error != LM_OK) fail(engine, error, what);
}

static int answer_yes(const char *application, const char *usage, void *user_data) {
  (void)user_data;
  printf("jukebox: %s asks: %s -> yes\n", application, usage);
  return 1;
}

static void on_progress(int files_read, int files_to_read, void *user_data) {
  (void)user_data;
  if (files_read == files_to_read || files_read % 50 == 0) printf("jukebox: scanned %d of %d files\n", files_read, files_to_read);
}

static void on_report(const lm_report *report, void *user_data) {
  (void)user_data;
  if (report->kind == LM_REPORT_NOW_PLAYING || report->kind == LM_REPORT_STATE_CHANGED) {
    printf("report %.3f %s %s\n", report->sounding_seconds,
           report->kind == LM_REPORT_NOW_PLAYING ? "NOW_PLAYING" : "STATE_CHANGED", report->title ? report->title : "-");
  } else if (report->kind == LM_REPORT_FIRED || report->kind == LM_REPORT_PROBLEM) {
    printf("report %.3f %s %s\n", report->time_seconds, report->kind == LM_REPORT_FIRED ? "FIRED" : "PROBLEM", report->text);
  }
  fflush(stdout);
}

/* Lists the songs `query` finds, a page at a time as a menu would, and keeps their ids. */
static size_t list_songs(lm_engine *engine, lm_query *query, const char *heading, uint64_t *ids, size_t capacity) {
  lm_media_item page[PAGE];
  size_t total = 0, kept = 0;
  page[0].struct_size = sizeof page[0];
  query->offset = 0;
  do {
    size_t count = 0;
    check(engine, lm_library_query(engine, query, page, PAGE, &count, &total), "lm_library_query");
    for (size_t i = 0; i < count; i++) {
      printf("jukebox: %s %zu/%zu: \"%s\" by \"%s\", %.1f s, %.0f BPM%s%s%s (id %" PRIu64 ")\n", heading,
             query->offset + i + 1, total, page[i].title, page[i].artist, page[i].duration_seconds,
             page[i].beats_per_minute, page[i].mood[0] ? ", mood \"" : "", page[i].mood, page[i].mood[0] ? "\"" : "",
             page[i].persistent_id);
      if (kept < capacity) ids[kept++] = page[i].persistent_id;
    }
    query->offset += count;
    if (count == 0) break;
  } while (query->offset < total);
  if (total == 0) printf("jukebox: %s: none\n", heading);
  return kept;
}

static void print_now_playing(lm_engine *engine, double seconds) {
  lm_now_playing_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  check(engine, lm_now_playing(engine, &info), "lm_now_playing");
  printf("jukebox %.3f now playing \"%s\" from %s\n", seconds, info.has_item ? info.title : "-",
         info.source[0] ? info.source : "-");
}

int main(int argc, char **argv) {
  const char *library = NULL, *cues = "Assets/cues.json5", *offline = NULL, *artist = NULL, *mood = NULL, *pick = NULL;
  const char *post_cue = NULL;
  double seconds = 20, post_at = -1;
  int yes = 0;
  lm_shuffle_mode shuffle = LM_SHUFFLE_OFF;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--library") == 0 && i + 1 < argc) library = argv[++i];
    else if (strcmp(argv[i], "--cues") == 0 && i + 1 < argc) cues = argv[++i];
    else if (strcmp(argv[i], "--offline") == 0 && i + 1 < argc) offline = argv[++i];
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--artist") == 0 && i + 1 < argc) artist = argv[++i];
    else if (strcmp(argv[i], "--mood") == 0 && i + 1 < argc) mood = argv[++i];
    else if (strcmp(argv[i], "--pick") == 0 && i + 1 < argc) pick = argv[++i];
    else if (strcmp(argv[i], "--post") == 0 && i + 2 < argc) {
      post_at = atof(argv[++i]);
      post_cue = argv[++i];
    } else if (strcmp(argv[i], "--shuffle") == 0 && i + 1 < argc) {
      i++;
      if (strcmp(argv[i], "songs") == 0) shuffle = LM_SHUFFLE_SONGS;
      else if (strcmp(argv[i], "albums") == 0) shuffle = LM_SHUFFLE_ALBUMS;
      else {
        fprintf(stderr, "jukebox: --shuffle takes songs or albums, not %s\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--yes") == 0) yes = 1;
    else {
      fprintf(stderr, "usage: %s --library DIR [--cues FILE] [--offline OUT.wav] [--seconds N] [--yes] "
                      "[--artist TEXT] [--mood TEXT] [--pick TEXT] [--post SECONDS CUE] [--shuffle songs|albums]\n",
              argv[0]);
      return 2;
    }
  }
  if (!library || seconds < 6) {
    fprintf(stderr, "jukebox: give --library DIR, and --seconds of 6 or more\n");
    return 2;
  }

  lm_config config = lm_config_defaults();
  config.application_id = "org.leitmotif.jukebox";
  config.usage_description = "The jukebox plays your own songs as the game's music.";
  config.cue_file = cues;
  config.library_folder = library;
  config.output = offline ? LM_OUTPUT_OFFLINE : LM_OUTPUT_DEFAULT_DEVICE;
  config.sample_rate = SAMPLE_RATE;
  config.clocking = LM_CLOCKING_OWN_THREAD;
  lm_engine *engine = NULL;
  check(NULL, lm_engine_create(&config, &engine), "lm_engine_create");
  check(engine, lm_set_report_callback(engine, on_report, NULL), "lm_set_report_callback");

  /* Consent first: without it, nothing of the player's is read (the game's music still plays). */
  lm_authorization status = LM_AUTHORIZATION_NOT_DETERMINED;
  check(engine, lm_library_request_authorization(engine, yes ? answer_yes : NULL, NULL, &status),
        "lm_library_request_authorization");
  if (status != LM_AUTHORIZATION_AUTHORIZED) {
    printf("jukebox: no access to your music (%d): the game's own music plays\n", (int)status);
  } else {
    lm_scan_result scan;
    scan.struct_size = sizeof scan;
    check(engine, lm_library_scan(engine, on_progress, NULL, &scan), "lm_library_scan");
    printf("jukebox: scan: %d added, %d updated, %d moved, %d removed, %d unchanged, %d failed, %d playlists\n",
           scan.added, scan.updated, scan.moved, scan.removed, scan.unchanged, scan.failed, scan.playlists);
  }

  uint64_t queue[MAX_SONGS], picks[MAX_SONGS];
  size_t queued = 0, picked = 0;
  if (status == LM_AUTHORIZATION_AUTHORIZED) {
    /* The playlists, and each one's songs in its own order. */
    lm_playlist lists[8];
    size_t list_count = 0, list_total = 0;
    lists[0].struct_size = sizeof lists[0];
    check(engine, lm_library_playlists(engine, lists, 8, &list_count, &list_total), "lm_library_playlists");
    for (size_t i = 0; i < list_count; i++) {
      lm_query in_list = lm_query_defaults();
      in_list.playlist_id = lists[i].persistent_id;
      printf("jukebox: playlist \"%s\": %d songs\n", lists[i].name, lists[i].item_count);
      list_songs(engine, &in_list, "  in it", NULL, 0);
    }

    /* The queue: a query with predicates (all must hold), by title. */
    lm_query query = lm_query_defaults();
    lm_predicate conditions[2];
    size_t condition_count = 0;
    if (artist) conditions[condition_count++] = lm_predicate_text(LM_PROPERTY_ARTIST, LM_COMPARE_CONTAINS, artist);
    if (mood) conditions[condition_count++] = lm_predicate_text(LM_PROPERTY_MOOD, LM_COMPARE_EQUAL_TO, mood);
    query.predicates = conditions;
    query.predicate_count = condition_count;
    queued = list_songs(engine, &query, "song", queue, MAX_SONGS);

    /* The picker: its search box, then the player takes what it found. */
    if (pick) {
      lm_query search = lm_query_defaults();
      search.search_text = pick;
      picked = list_songs(engine, &search, "picker finds", picks, MAX_SONGS);
      check(engine, lm_set_picks(engine, picks, picked), "lm_set_picks");
      printf("jukebox: picked %zu songs\n", picked);
    }
  }

  /* The level: the state's music, the queue on the bar at 4 s, the cue, the fade at the end. */
  check(engine, lm_start(engine, NULL), "lm_start");
  FILE *out = NULL;
  if (offline) {
    out = fopen(offline, "wb");
    if (!out) {
      fprintf(stderr, "jukebox: cannot write %s\n", offline);
      return 1;
    }
    write_wav_header(out, 0, SAMPLE_RATE);
  }
  float buffer[FRAMES_PER_STEP * 2];
  uint32_t frames = 0;
  int queue_set = 0, posted = 0, faded = 0;
  double next_print = 1;
  for (long step = 0; step < (long)(seconds * 60); step++) {
    double now = step / 60.0;
    if (!queue_set && now >= 4) {
      queue_set = 1;
      if (queued > 0) {
        check(engine, lm_set_queue_shuffled(engine, queue, queued, 1.0, LM_AT_BAR, LM_REPEAT_ALL, shuffle),
              "lm_set_queue_shuffled");
        printf("jukebox %.3f queue set: %zu songs%s, crossfading in on the bar\n", now, queued,
               shuffle == LM_SHUFFLE_SONGS ? ", shuffled" : shuffle == LM_SHUFFLE_ALBUMS ? ", shuffled by album" : "");
      }
    }
    if (post_cue && !posted && now >= post_at) {
      posted = 1;
      check(engine, lm_post(engine, post_cue, NULL, 0), "lm_post");
      printf("jukebox %.3f post %s\n", now, post_cue);
    }
    if (!faded && now >= seconds - 3) {
      faded = 1;
      check(engine, lm_set_master_volume(engine, 0, 2.5), "lm_set_master_volume");
      printf("jukebox %.3f master volume to 0 over 2.5 s\n", now);
    }
    if (now >= next_print) {
      print_now_playing(engine, now);
      next_print += 1;
    }
    if (offline) {
      check(engine, lm_render(engine, buffer, FRAMES_PER_STEP), "lm_render");
      fwrite(buffer, sizeof(float), FRAMES_PER_STEP * 2, out);
      frames += FRAMES_PER_STEP;
    } else {
      struct timespec step_time = {0, 1000000000L / 60};
      nanosleep(&step_time, NULL);
    }
  }
  if (out) {
    write_wav_header(out, frames, SAMPLE_RATE);
    fclose(out);
    printf("jukebox: rendered %u frames to %s\n", frames, offline);
  }
  check(engine, lm_flush_reports(engine), "lm_flush_reports");
  check(engine, lm_engine_destroy(engine), "lm_engine_destroy");
  return 0;
}
