// libsamplerate (Secret Rabbit Code, BSD-2-Clause): the voices' resampler.
#include <samplerate.h>
