#ifndef BEACONBRIDGE_CSQLITE_SHIM_H
#define BEACONBRIDGE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro around a cast of -1 that Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
