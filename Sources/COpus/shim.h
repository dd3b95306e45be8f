// libopus (BSD-3-Clause): its encoder makes the Ogg Opus test material.
#include <opus.h>

// opus_encoder_ctl is variadic, which Swift cannot call: the two requests the fixtures need.
static inline int lm_opus_set_bitrate(OpusEncoder *encoder, opus_int32 bitrate) {
  return opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
}
static inline int lm_opus_get_lookahead(OpusEncoder *encoder, opus_int32 *lookahead) {
  return opus_encoder_ctl(encoder, OPUS_GET_LOOKAHEAD(lookahead));
}
