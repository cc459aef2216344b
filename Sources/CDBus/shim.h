// The libdbus-1 API, as seen from Swift. Only the DBus module imports this.
#ifndef CDBUS_SHIM_H
#define CDBUS_SHIM_H

#include <dbus/dbus.h>

#endif
