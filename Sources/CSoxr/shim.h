// libsoxr (LGPL-2.1, linked dynamically): the decode threads' fixed-ratio resampler, from a
// file's rate to the mix rate.
#include <soxr.h>
