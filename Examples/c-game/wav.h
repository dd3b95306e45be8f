/*
 * wav.h: the examples' WAV writer, 32-bit float stereo (what lm_render gives), header only.
 * Write the header with 0 frames first, the samples after it, then the header again with the
 * number of frames written.
 */
#ifndef LEITMOTIF_EXAMPLE_WAV_H
#define LEITMOTIF_EXAMPLE_WAV_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline void wav_put_u32(unsigned char *at, uint32_t value) {
  for (int i = 0; i < 4; i++) at[i] = (unsigned char)(value >> (8 * i));
}

static inline void wav_put_u16(unsigned char *at, uint16_t value) {
  at[0] = (unsigned char)value;
  at[1] = (unsigned char)(value >> 8);
}

/* Writes (or, at the end, rewrites) the 44-byte header for `frames` frames. */
static inline void write_wav_header(FILE *file, uint32_t frames, uint32_t sample_rate) {
  unsigned char header[44];
  uint32_t data_bytes = frames * 2 * 4;
  memcpy(header, "RIFF", 4);
  wav_put_u32(header + 4, 36 + data_bytes);
  memcpy(header + 8, "WAVEfmt ", 8);
  wav_put_u32(header + 16, 16);
  wav_put_u16(header + 20, 3); /* WAVE_FORMAT_IEEE_FLOAT */
  wav_put_u16(header + 22, 2);
  wav_put_u32(header + 24, sample_rate);
  wav_put_u32(header + 28, sample_rate * 2 * 4);
  wav_put_u16(header + 32, 2 * 4);
  wav_put_u16(header + 34, 32);
  memcpy(header + 36, "data", 4);
  wav_put_u32(header + 40, data_bytes);
  fseek(file, 0, SEEK_SET);
  fwrite(header, 1, sizeof header, file);
}

#endif /* LEITMOTIF_EXAMPLE_WAV_H */
