// libebur128 (MIT): EBU R128 loudness, loudness range and true peak, measured when a song is
// scanned or a bundled file first analysed.
#include <ebur128.h>
