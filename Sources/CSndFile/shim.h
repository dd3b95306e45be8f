// libsndfile (LGPL-2.1-or-later, linked dynamically): WAV (RIFF, RF64, WAVE_FORMAT_EXTENSIBLE) and
// AIFF/AIFF-C decoding, with their loop points (smpl / INST chunks) and LIST INFO strings.
#include <sndfile.h>
#include <string.h>

// SF_INSTRUMENT's loops are an array of an anonymous struct, which Swift does not import: the
// first loop through this. Returns 1 with its mode, start and end (the frame after its last, as
// libsndfile gives it), 0 when the file has no loop.
static inline int lm_sf_first_loop(SNDFILE *file, int *mode, uint32_t *start, uint32_t *end) {
  SF_INSTRUMENT instrument;
  memset(&instrument, 0, sizeof instrument);
  if (sf_command(file, SFC_GET_INSTRUMENT, &instrument, (int)sizeof instrument) == SF_FALSE) return 0;
  if (instrument.loop_count < 1) return 0;
  *mode = instrument.loops[0].mode;
  *start = instrument.loops[0].start;
  *end = instrument.loops[0].end;
  return 1;
}
