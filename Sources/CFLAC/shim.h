// libFLAC (BSD-3-Clause): FLAC decoding (and, for the test and benchmark material, encoding).
#include <FLAC/stream_decoder.h>
#include <FLAC/stream_encoder.h>
#include <FLAC/metadata.h>
