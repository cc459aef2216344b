#ifndef BEACONBRIDGE_CHOGWEED_SHIM_H
#define BEACONBRIDGE_CHOGWEED_SHIM_H
// nettle's public-key half, libhogweed (Debian nettle-dev, 3.8 in Debian 12): X25519, with
// nettle's HKDF-SHA256, for provisioning an Eddystone-EID beacon (the key exchange of
// google/eddystone eddystone-eid/eid-computation.md). Only EIDProvisioning imports this, so the
// daemon, which never provisions, does not link libhogweed.
#include <string.h>
#include <nettle/curve25519.h>
#include <nettle/hkdf.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

// A wipe the compiler may not drop as a dead store. glibc's explicit_bzero (2.25 and later).
static inline void chogweed_wipe(void *buffer, size_t length) { explicit_bzero(buffer, length); }

// HKDF-SHA256 (RFC 5869) as nettle's manual writes it: HMAC-SHA256 keyed by the salt for
// `hkdf_extract`, then keyed by the pseudorandom key for `hkdf_expand`. Only the calling
// convention is here (nettle takes its HMAC functions as `void *` function pointers, which Swift
// cannot cast); the MAC context and the pseudorandom key are wiped before returning. `length` is
// at most 255 * 32 bytes (RFC 5869 2.3); the caller checks it.
static inline void chogweed_hkdf_sha256(const uint8_t *salt, size_t salt_length, const uint8_t *ikm,
                                        size_t ikm_length, const uint8_t *info, size_t info_length,
                                        uint8_t *out, size_t length) {
  struct hmac_sha256_ctx context;
  uint8_t prk[SHA256_DIGEST_SIZE];
  hmac_sha256_set_key(&context, salt_length, salt);
  hkdf_extract(&context, (nettle_hash_update_func *)hmac_sha256_update,
               (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE, ikm_length, ikm, prk);
  hmac_sha256_set_key(&context, SHA256_DIGEST_SIZE, prk);
  hkdf_expand(&context, (nettle_hash_update_func *)hmac_sha256_update,
              (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE, info_length, info, length,
              out);
  explicit_bzero(&context, sizeof context);
  explicit_bzero(prk, sizeof prk);
}

// HKDF-Extract alone (RFC 5869 2.2): the pseudorandom key, which RFC 5869's test cases list.
static inline void chogweed_hkdf_sha256_extract(const uint8_t *salt, size_t salt_length, const uint8_t *ikm,
                                                size_t ikm_length, uint8_t *prk) {
  struct hmac_sha256_ctx context;
  hmac_sha256_set_key(&context, salt_length, salt);
  hkdf_extract(&context, (nettle_hash_update_func *)hmac_sha256_update,
               (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE, ikm_length, ikm, prk);
  explicit_bzero(&context, sizeof context);
}
#endif
