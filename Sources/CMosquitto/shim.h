// libmosquitto (MQTT 5 client), as seen from Swift. Only BridgeDaemon/Upload/MQTTClient.swift
// imports this.
//
// libmosquitto is not linked: it is loaded with dlopen("libmosquitto.so.1") when the MQTT sink
// is first used, so that it (and its OpenSSL) stays out of a daemon that does not publish. Swift
// calls it through the function pointers in bb_mosquitto(), found with dlsym.
#ifndef CMOSQUITTO_SHIM_H
#define CMOSQUITTO_SHIM_H

#include <dlfcn.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>

struct bb_mosquitto_api {
  __typeof__(&mosquitto_connect_bind_v5) connect_bind_v5;
  __typeof__(&mosquitto_connect_v5_callback_set) connect_v5_callback_set;
  __typeof__(&mosquitto_destroy) destroy;
  __typeof__(&mosquitto_disconnect) disconnect;
  __typeof__(&mosquitto_disconnect_v5_callback_set) disconnect_v5_callback_set;
  __typeof__(&mosquitto_int_option) int_option;
  __typeof__(&mosquitto_lib_init) lib_init;
  __typeof__(&mosquitto_message_v5_callback_set) message_v5_callback_set;
  __typeof__(&mosquitto_loop) loop;
  __typeof__(&mosquitto_new) new;
  __typeof__(&mosquitto_property_add_int32) property_add_int32;
  __typeof__(&mosquitto_property_add_string_pair) property_add_string_pair;
  __typeof__(&mosquitto_property_free_all) property_free_all;
  __typeof__(&mosquitto_publish_v5) publish_v5;
  __typeof__(&mosquitto_publish_v5_callback_set) publish_v5_callback_set;
  __typeof__(&mosquitto_reason_string) reason_string;
  __typeof__(&mosquitto_strerror) strerror;
  __typeof__(&mosquitto_subscribe_v5) subscribe_v5;
  __typeof__(&mosquitto_threaded_set) threaded_set;
  __typeof__(&mosquitto_tls_set) tls_set;
  __typeof__(&mosquitto_user_data_set) user_data_set;
  __typeof__(&mosquitto_username_pw_set) username_pw_set;
  __typeof__(&mosquitto_will_set_v5) will_set_v5;
  const char *error;
  int loaded;
};

static inline void bb_mosquitto_fill(struct bb_mosquitto_api *api);

// The table, filled on first use. Each function that reads the table gets it from here: a
// `static` inside a `static inline` function is one copy per LLVM module that emits the function
// (a release build may emit it more than once), so the table is filled by the copy that is read.
static inline struct bb_mosquitto_api *bb_mosquitto_api(void) {
  static struct bb_mosquitto_api api;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static int filled;
  if (!__atomic_load_n(&filled, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&lock);
    if (!filled) {
      bb_mosquitto_fill(&api);
      __atomic_store_n(&filled, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
  }
  return &api;
}

static inline void bb_mosquitto_fill(struct bb_mosquitto_api *api) {
  void *lib = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    api->error = dlerror();
    return;
  }
#define BB_MOSQUITTO_SYMBOL(name)                                \
  *(void **)(&api->name) = dlsym(lib, "mosquitto_" #name);       \
  if (!api->name) {                                              \
    api->error = "libmosquitto.so.1 lacks mosquitto_" #name;     \
    return;                                                      \
  }
  BB_MOSQUITTO_SYMBOL(connect_bind_v5)
  BB_MOSQUITTO_SYMBOL(connect_v5_callback_set)
  BB_MOSQUITTO_SYMBOL(destroy)
  BB_MOSQUITTO_SYMBOL(disconnect)
  BB_MOSQUITTO_SYMBOL(disconnect_v5_callback_set)
  BB_MOSQUITTO_SYMBOL(int_option)
  BB_MOSQUITTO_SYMBOL(lib_init)
  BB_MOSQUITTO_SYMBOL(message_v5_callback_set)
  BB_MOSQUITTO_SYMBOL(loop)
  BB_MOSQUITTO_SYMBOL(new)
  BB_MOSQUITTO_SYMBOL(property_add_int32)
  BB_MOSQUITTO_SYMBOL(property_add_string_pair)
  BB_MOSQUITTO_SYMBOL(property_free_all)
  BB_MOSQUITTO_SYMBOL(publish_v5)
  BB_MOSQUITTO_SYMBOL(publish_v5_callback_set)
  BB_MOSQUITTO_SYMBOL(reason_string)
  BB_MOSQUITTO_SYMBOL(strerror)
  BB_MOSQUITTO_SYMBOL(subscribe_v5)
  BB_MOSQUITTO_SYMBOL(threaded_set)
  BB_MOSQUITTO_SYMBOL(tls_set)
  BB_MOSQUITTO_SYMBOL(user_data_set)
  BB_MOSQUITTO_SYMBOL(username_pw_set)
  BB_MOSQUITTO_SYMBOL(will_set_v5)
#undef BB_MOSQUITTO_SYMBOL
  if (api->lib_init() != MOSQ_ERR_SUCCESS) {
    api->error = "mosquitto_lib_init failed";
    return;
  }
  api->loaded = 1;
}

/// Loads libmosquitto once (thread-safe): its functions, or NULL with `*error` set.
static inline const struct bb_mosquitto_api *bb_mosquitto(const char **error) {
  struct bb_mosquitto_api *api = bb_mosquitto_api();
  if (api->loaded) return api;
  *error = api->error ? api->error : "libmosquitto.so.1 could not be loaded";
  return NULL;
}

#endif
