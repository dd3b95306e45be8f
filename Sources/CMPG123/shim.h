// The header lives in /usr/include/<triple>/, so it is included by name, not by path.
#include <mpg123.h>
