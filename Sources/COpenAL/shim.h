// OpenAL Soft's core and extension headers. AL_ALEXT_PROTOTYPES makes alext.h declare the
// extension functions (loopback, device clock, source latency) so Swift can call them directly;
// it does the same for efx.h's filter functions (alGenFilters, ...: ALC_EXT_EFX, in 1.19.1).
#define AL_ALEXT_PROTOTYPES 1
#include <AL/al.h>
#include <AL/alc.h>
#include <AL/alext.h>
#include <AL/efx.h>
