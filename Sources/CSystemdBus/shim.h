// sd-bus, libsystemd's D-Bus library (LGPL-2.1, linked dynamically): the session bus, for MPRIS
// (the desktop's media keys and "now playing", and the player's own music app).
#include <systemd/sd-bus.h>
