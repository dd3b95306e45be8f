/* pak.c: a game's music from its own archive, not from loose files.
 *
 * Games ship their data packed: one file with an index and the bytes of everything in it. This
 * program packs Assets/music into game.pak as a game's build would, then plays the demo's cue
 * file with its music read out of the pak through the game's own reader (lm_mount_files: stdio
 * on the pak, one FILE per open file) and the cue file from memory (lm_mount_memory: a cue file
 * the game downloaded or generated). It renders the same 30 s twice, once from the loose files and
 * once from the pak, and says whether they are the same to the sample. Run it from the
 * repository's top folder:
 *   make examples && .build/examples/c-game/pak [Assets/cues.json5] [.build/game.pak]
 */
#include <leitmotif.h>

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE 48000
#define SECONDS 30
#define MAX_FILES 64

/* ---- The game's archive: "LMPK", a count, then each file's name, offset and size ---------- */

typedef struct pak_entry {
  char name[128];
  long offset;
  long size;
} pak_entry;

typedef struct pak {
  const char *path;
  int count;
  pak_entry entries[MAX_FILES];
  /* The reader's own bookkeeping: files open now, and opens in all. Leitmotif calls the reader
     from its loader and decoding threads, so the counts take a lock. */
  pthread_mutex_t lock;
  int opened;
  int opens;
} pak;

/* One open file of the pak: its own FILE (Leitmotif may read two files on two threads at once). */
typedef struct pak_file {
  FILE *file;
  const pak_entry *entry;
} pak_file;

static int pack(const char *pak_path, const char *folder) {
  pak index;
  memset(&index, 0, sizeof index);
  DIR *dir = opendir(folder);
  if (!dir) {
    perror(folder);
    return 1;
  }
  struct dirent *item;
  while ((item = readdir(dir)) != NULL && index.count < MAX_FILES) {
    size_t length = strlen(item->d_name);
    if (item->d_name[0] == '.' || length >= sizeof index.entries[0].name) continue;
    memcpy(index.entries[index.count++].name, item->d_name, length + 1);
  }
  closedir(dir);
  FILE *out = fopen(pak_path, "wb");
  if (!out) {
    perror(pak_path);
    return 1;
  }
  long offset = (long)(8 + index.count * sizeof(pak_entry));
  fwrite("LMPK", 1, 4, out);
  fwrite(&index.count, sizeof index.count, 1, out);
  fseek(out, offset, SEEK_SET);
  for (int i = 0; i < index.count; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, index.entries[i].name);
    FILE *in = fopen(path, "rb");
    if (!in) {
      perror(path);
      return 1;
    }
    index.entries[i].offset = offset;
    char buffer[65536];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, in)) > 0) {
      fwrite(buffer, 1, got, out);
      offset += (long)got;
    }
    index.entries[i].size = offset - index.entries[i].offset;
    fclose(in);
  }
  fseek(out, 8, SEEK_SET);
  fwrite(index.entries, sizeof(pak_entry), (size_t)index.count, out);
  fclose(out);
  printf("pak: packed %d files of %s into %s (%ld bytes)\n", index.count, folder, pak_path, offset);
  return 0;
}

static int load_index(pak *archive, const char *path) {
  memset(archive, 0, sizeof *archive);
  archive->path = path;
  FILE *in = fopen(path, "rb");
  char magic[4];
  if (!in || fread(magic, 1, 4, in) != 4 || memcmp(magic, "LMPK", 4) != 0 ||
      fread(&archive->count, sizeof archive->count, 1, in) != 1 || archive->count > MAX_FILES ||
      fread(archive->entries, sizeof(pak_entry), (size_t)archive->count, in) != (size_t)archive->count) {
    fprintf(stderr, "pak: %s is not a pak\n", path);
    if (in) fclose(in);
    return 1;
  }
  fclose(in);
  pthread_mutex_init(&archive->lock, NULL);
  return 0;
}

/* ---- The game's reader, as Leitmotif calls it (lm_file_callbacks) ------------------------- */

static void *pak_open(const char *name, int64_t *size_bytes, void *user_data) {
  pak *archive = user_data;
  for (int i = 0; i < archive->count; i++) {
    if (strcmp(archive->entries[i].name, name) != 0) continue;
    pak_file *open = malloc(sizeof *open);
    if (!open) return NULL;
    open->file = fopen(archive->path, "rb");
    if (!open->file) {
      free(open);
      return NULL;
    }
    open->entry = &archive->entries[i];
    *size_bytes = open->entry->size;
    pthread_mutex_lock(&archive->lock);
    archive->opened++;
    archive->opens++;
    pthread_mutex_unlock(&archive->lock);
    return open;
  }
  return NULL;
}

static int64_t pak_read(void *file, int64_t offset, void *buffer, size_t count, void *user_data) {
  (void)user_data;
  pak_file *open = file;
  if (offset >= open->entry->size) return 0;
  if ((int64_t)count > open->entry->size - offset) count = (size_t)(open->entry->size - offset);
  if (fseek(open->file, open->entry->offset + (long)offset, SEEK_SET) != 0) return -1;
  size_t got = fread(buffer, 1, count, open->file);
  return got == 0 && ferror(open->file) ? -1 : (int64_t)got;
}

static void pak_close(void *file, void *user_data) {
  pak *archive = user_data;
  pak_file *open = file;
  fclose(open->file);
  free(open);
  pthread_mutex_lock(&archive->lock);
  archive->opened--;
  pthread_mutex_unlock(&archive->lock);
}

/* ---- The level, rendered offline: the same script from either place ----------------------- */

static float *render(const char *cue_file, lm_engine **kept) {
  lm_config config = lm_config_defaults();
  config.application_id = "org.leitmotif.pak";
  config.cue_file = cue_file;
  config.output = LM_OUTPUT_OFFLINE;
  config.sample_rate = RATE;
  lm_engine *engine = NULL;
  if (lm_engine_create(&config, &engine) != LM_OK) {
    fprintf(stderr, "pak: %s\n", lm_last_error());
    return NULL;
  }
  lm_start(engine, NULL);
  float *audio = malloc(sizeof(float) * 2 * RATE * SECONDS);
  const struct {
    int second;
    const char *cue;
  } script[] = {{1, "level.start"}, {8, "area.dark"}, {15, "player.hit"}, {18, "enemy.spotted"}, {26, "combat.end"}};
  size_t next = 0;
  for (int step = 0; audio && step < SECONDS * 60; step++) {
    while (next < sizeof script / sizeof script[0] && script[next].second * 60 == step) {
      lm_post(engine, script[next++].cue, NULL, 0);
    }
    if (lm_render(engine, audio + (size_t)step * 800 * 2, 800) != LM_OK) {
      fprintf(stderr, "pak: %s\n", lm_engine_last_error(engine));
      free(audio);
      audio = NULL;
    }
  }
  lm_flush_reports(engine);
  if (kept) {
    *kept = engine;
  } else {
    lm_engine_destroy(engine);
  }
  return audio;
}

static char *read_all(const char *path, size_t *size) {
  FILE *in = fopen(path, "rb");
  if (!in) return NULL;
  fseek(in, 0, SEEK_END);
  *size = (size_t)ftell(in);
  fseek(in, 0, SEEK_SET);
  char *bytes = malloc(*size ? *size : 1);
  if (bytes && fread(bytes, 1, *size, in) != *size) {
    free(bytes);
    bytes = NULL;
  }
  fclose(in);
  return bytes;
}

int main(int argc, char **argv) {
  const char *cues = argc > 1 ? argv[1] : "Assets/cues.json5";
  const char *pak_path = argc > 2 ? argv[2] : ".build/game.pak";
  /* The cue file's folder holds its assets ("assets: \"music\"" in the demo's). */
  char folder[512];
  snprintf(folder, sizeof folder, "%s", cues);
  char *slash = strrchr(folder, '/');
  if (slash) {
    *slash = 0;
  } else {
    snprintf(folder, sizeof folder, ".");
  }
  char music[600];
  snprintf(music, sizeof music, "%s/music", folder);

  /* The game's build step: pack the music. */
  if (pack(pak_path, music) != 0) return 1;

  /* At run time: the music from the pak at /pak/music, the cue file from memory beside it. */
  pak archive;
  if (load_index(&archive, pak_path) != 0) return 1;
  const char *names[MAX_FILES];
  for (int i = 0; i < archive.count; i++) names[i] = archive.entries[i].name;
  lm_file_callbacks reader;
  memset(&reader, 0, sizeof reader);
  reader.struct_size = sizeof reader;
  reader.open = pak_open;
  reader.read = pak_read;
  reader.close = pak_close;
  reader.user_data = &archive;
  size_t cue_size = 0;
  char *cue_text = read_all(cues, &cue_size);
  if (!cue_text || lm_mount_files("/pak/music", names, (size_t)archive.count, &reader) != LM_OK ||
      lm_mount_memory("/pak/cues.json5", cue_text, cue_size) != LM_OK) {
    fprintf(stderr, "pak: %s\n", cue_text ? lm_last_error() : "cannot read the cue file");
    return 1;
  }
  free(cue_text); /* the mount keeps its own copy */

  float *loose = render(cues, NULL);
  lm_engine *engine = NULL;
  float *packed = render("/pak/cues.json5", &engine);
  if (!loose || !packed) return 1;

  /* While the engine plays from the pak it stays mounted. */
  lm_error busy = lm_unmount("/pak/music");
  printf("pak: unmount while playing: %s (%s)\n", lm_error_name(busy), lm_last_error());
  lm_engine_destroy(engine);
  lm_error music_gone = lm_unmount("/pak/music");
  lm_error cues_gone = lm_unmount("/pak/cues.json5");
  printf("pak: unmount after: %s, %s\n", lm_error_name(music_gone), lm_error_name(cues_gone));

  size_t samples = (size_t)2 * RATE * SECONDS, differing = 0;
  double power = 0;
  for (size_t i = 0; i < samples; i++) {
    if (loose[i] != packed[i]) differing++;
    power += (double)packed[i] * packed[i];
  }
  printf("pak: %d s from the pak, RMS %.4f, %zu of %zu samples differ from the loose files\n", SECONDS,
         sqrt(power / (double)samples), differing, samples);
  printf("pak: the reader opened %d files and closed all but %d\n", archive.opens, archive.opened);
  free(loose);
  free(packed);
  return differing == 0 && busy == LM_ERROR_INVALID_ARGUMENT && music_gone == LM_OK && cues_gone == LM_OK &&
                 archive.opened == 0 && archive.opens > 0
             ? 0
             : 1;
}
