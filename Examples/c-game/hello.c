/* hello.c: Leitmotif's C API on one page; the README's C snippet is this file. It renders
 * 8 seconds of Examples/hello-music's cue file offline, one 60 Hz game step at a time, posts two
 * cues along the way and prints what the director did. Run it from the repository's top folder:
 *   make examples && .build/examples/c-game/hello
 */
#include <leitmotif.h>
#include <stdio.h>

/* On Leitmotif's notification thread, never the game's: which rule fired, what plays now. */
static void on_report(const lm_report *report, void *user_data) {
  (void)user_data;
  printf("%s\n", report->text);
}

int main(void) {
  lm_config config = lm_config_defaults(); /* every field its default, struct_size set */
  config.application_id = "com.example.hello";
  config.cue_file = "Examples/hello-music/cues.json5";
  config.output = LM_OUTPUT_OFFLINE; /* renders on demand; LM_OUTPUT_DEFAULT_DEVICE plays live */
  lm_engine *engine = NULL;
  if (lm_engine_create(&config, &engine) != LM_OK) {
    fprintf(stderr, "%s\n", lm_last_error()); /* every problem of the cue file, say */
    return 1;
  }
  lm_set_report_callback(engine, on_report, NULL);
  lm_start(engine, NULL); /* the cue file's start state */

  static float audio[800 * 2]; /* one 60 Hz step at 48 kHz, stereo */
  for (int step = 0; step < 8 * 60; step++) {
    if (step == 2 * 60) {
      lm_value payload[] = {lm_number("threat", 3), lm_string("kind", "patrol")};
      lm_post(engine, "enemy.spotted", payload, 2); /* never blocks; LM_ERROR_BUS_FULL if dropped */
    }
    if (step == 5 * 60) lm_post(engine, "combat.end", NULL, 0);
    if (lm_render(engine, audio, 800) != LM_OK) { /* a game's audio callback would play these */
      fprintf(stderr, "%s\n", lm_engine_last_error(engine));
      return 1;
    }
  }
  lm_flush_reports(engine); /* the reports still on their way */
  lm_engine_destroy(engine);
  printf("hello: done\n");
  return 0;
}
