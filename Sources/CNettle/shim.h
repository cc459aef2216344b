#ifndef BEACONBRIDGE_CNETTLE_SHIM_H
#define BEACONBRIDGE_CNETTLE_SHIM_H
// nettle (Debian nettle-dev, 3.8 in Debian 12): AES-128, EAX and CMAC for Eddystone-EID, the
// encrypted TLM and resolvable private addresses. Only BeaconCrypto imports this.
#include <string.h>
#include <nettle/aes.h>
#include <nettle/cmac.h>
#include <nettle/eax.h>
#include <nettle/memops.h>

// A wipe the compiler may not drop as a dead store: key bytes and key schedules are cleared with
// it before their memory is freed. glibc's explicit_bzero (2.25 and later).
static inline void cnettle_wipe(void *buffer, size_t length) { explicit_bzero(buffer, length); }
#endif
