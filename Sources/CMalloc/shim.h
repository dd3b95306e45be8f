// glibc's malloc statistics (part of the C library, LGPL-2.1, always linked): the soak
// benchmark reads the bytes the program holds (mallinfo2), which tells a leak from RSS that
// only the allocator's free lists keep.
#include <malloc.h>
