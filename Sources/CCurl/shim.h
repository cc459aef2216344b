// libcurl's easy interface, as seen from Swift, for BridgeDaemon's Upload/ files.
//
// libcurl runs only in `beaconbridged --http-transfer`, the child that serves one HTTP request
// (CurlTransferProcess.swift): the daemon spawns it so that libcurl and what it loads never map
// into the daemon. The child is the daemon's own executable, so libcurl cannot be linked (a
// -lcurl would be mapped and relocated in the daemon at every start, 5.4 MB measured,
// docs/PERFORMANCE.md): the child loads it with dlopen("libcurl.so.4"). Every call goes through
// a bb_ wrapper over the symbol dlsym found; bb_curl_load() must have succeeded first.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: the typed
// wrappers are the only way in.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stddef.h>

typedef size_t (*bb_curl_data_callback)(char *data, size_t size, size_t count, void *context);

struct bb_curl_api {
  CURLcode (*global_init)(long);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *);
  CURLcode (*easy_perform)(CURL *);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  const char *(*easy_strerror)(CURLcode);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
  CURLU *(*url)(void);
  void (*url_cleanup)(CURLU *);
  CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
  CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
  const char *(*url_strerror)(CURLUcode);
  void (*free)(void *);
  const char *error;
};

static inline struct bb_curl_api *bb_curl_api(void) {
  static struct bb_curl_api api;
  return &api;
}

static inline void bb_curl_load_once(void) {
  struct bb_curl_api *api = bb_curl_api();
  void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    api->error = dlerror();
    return;
  }
#define BB_CURL_SYMBOL(field, name)                       \
  *(void **)(&api->field) = dlsym(lib, name);             \
  if (!api->field) {                                      \
    api->error = "libcurl.so.4 lacks " name;              \
    return;                                               \
  }
  BB_CURL_SYMBOL(easy_init, "curl_easy_init")
  BB_CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup")
  BB_CURL_SYMBOL(easy_perform, "curl_easy_perform")
  BB_CURL_SYMBOL(easy_setopt, "curl_easy_setopt")
  BB_CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo")
  BB_CURL_SYMBOL(easy_strerror, "curl_easy_strerror")
  BB_CURL_SYMBOL(slist_append, "curl_slist_append")
  BB_CURL_SYMBOL(slist_free_all, "curl_slist_free_all")
  BB_CURL_SYMBOL(url, "curl_url")
  BB_CURL_SYMBOL(url_cleanup, "curl_url_cleanup")
  BB_CURL_SYMBOL(url_set, "curl_url_set")
  BB_CURL_SYMBOL(url_get, "curl_url_get")
  BB_CURL_SYMBOL(url_strerror, "curl_url_strerror")
  BB_CURL_SYMBOL(free, "curl_free")
  BB_CURL_SYMBOL(global_init, "curl_global_init")
#undef BB_CURL_SYMBOL
  if (api->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    api->global_init = NULL;
    api->error = "curl_global_init failed";
  }
}

/// Loads libcurl once (thread-safe). Returns NULL when it is usable, else why not.
static inline const char *bb_curl_load(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, bb_curl_load_once);
  struct bb_curl_api *api = bb_curl_api();
  return api->global_init ? NULL : (api->error ? api->error : "libcurl.so.4 could not be loaded");
}

/// For `beaconbridged --http-transfer`: SIGKILL when the daemon's thread that spawned this
/// process ends (prctl is variadic, which Swift cannot call).
static inline void bb_die_with_parent(void) { prctl(PR_SET_PDEATHSIG, SIGKILL); }

static inline CURL *bb_curl_easy_init(void) { return bb_curl_api()->easy_init(); }
static inline void bb_curl_easy_cleanup(CURL *handle) { bb_curl_api()->easy_cleanup(handle); }
static inline CURLcode bb_curl_easy_perform(CURL *handle) { return bb_curl_api()->easy_perform(handle); }
static inline const char *bb_curl_easy_strerror(CURLcode code) { return bb_curl_api()->easy_strerror(code); }
static inline struct curl_slist *bb_curl_slist_append(struct curl_slist *list, const char *line) {
  return bb_curl_api()->slist_append(list, line);
}
static inline void bb_curl_slist_free_all(struct curl_slist *list) { bb_curl_api()->slist_free_all(list); }

// libcurl's URL API (curl_url), which parses a URL as transfers will use it.
static inline CURLU *bb_curl_url(void) { return bb_curl_api()->url(); }
static inline void bb_curl_url_cleanup(CURLU *url) { bb_curl_api()->url_cleanup(url); }
static inline CURLUcode bb_curl_url_set(CURLU *url, CURLUPart part, const char *text, unsigned int flags) {
  return bb_curl_api()->url_set(url, part, text, flags);
}
static inline CURLUcode bb_curl_url_get(CURLU *url, CURLUPart part, char **text, unsigned int flags) {
  return bb_curl_api()->url_get(url, part, text, flags);
}
static inline const char *bb_curl_url_strerror(CURLUcode code) { return bb_curl_api()->url_strerror(code); }
static inline void bb_curl_free(void *pointer) { bb_curl_api()->free(pointer); }
/// CURLU_NON_SUPPORT_SCHEME: a scheme libcurl has no transfer for (mqtts) is parsed too.
static inline unsigned int bb_curlu_non_support_scheme(void) { return CURLU_NON_SUPPORT_SCHEME; }

static inline CURLcode bb_curl_set_long(CURL *handle, CURLoption option, long value) {
  return bb_curl_api()->easy_setopt(handle, option, value);
}

static inline CURLcode bb_curl_set_string(CURL *handle, CURLoption option, const char *value) {
  return bb_curl_api()->easy_setopt(handle, option, value);
}

static inline CURLcode bb_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
  return bb_curl_api()->easy_setopt(handle, option, value);
}

static inline CURLcode bb_curl_set_off(CURL *handle, CURLoption option, curl_off_t value) {
  return bb_curl_api()->easy_setopt(handle, option, value);
}

static inline CURLcode bb_curl_set_headers(CURL *handle, struct curl_slist *headers) {
  return bb_curl_api()->easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
}

static inline CURLcode bb_curl_set_write_callback(CURL *handle, bb_curl_data_callback callback) {
  return bb_curl_api()->easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode bb_curl_set_header_callback(CURL *handle, bb_curl_data_callback callback) {
  return bb_curl_api()->easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode bb_curl_get_long(CURL *handle, CURLINFO info, long *value) {
  return bb_curl_api()->easy_getinfo(handle, info, value);
}

#endif
