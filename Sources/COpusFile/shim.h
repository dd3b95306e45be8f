// opusfile (BSD-3-Clause, with libopus, BSD-3-Clause): Ogg Opus decoding.
#include <opusfile.h>
