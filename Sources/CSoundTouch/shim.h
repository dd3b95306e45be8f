// SoundTouch (LGPL-2.1, linked dynamically): the voices' time-stretcher, tempo without pitch.
// Its C API (SoundTouchDLL.h, libSoundTouchDll.so) ships in Debian's libsoundtouch-dev beside
// the C++ one, so no C++ shim is needed.
#include <SoundTouchDLL.h>
