// A fast fake bluetoothd for `make bench`: owns org.bluez on a (private) bus with libdbus-1 and
// streams Device1 PropertiesChanged (ManufacturerData a{qv} with an iBeacon, plus RSSI n).
//
//   bench-emitter BUS_ADDRESS DEVICES
//
// Serves ObjectManager.GetManagedObjects (hci0 plus DEVICES devices), Adapter1.SetDiscoveryFilter,
// StartDiscovery, StopDiscovery and RemoveDevice. Commands on stdin, one per line; each answers
// one line on stdout:
//   starts K               wait until K StartDiscovery calls have arrived  -> "ok"
//   stream N RATE TOTAL    TOTAL PropertiesChanged round-robin over devices 0..N-1, RATE per
//                          second (0: flat out)                            -> "done SENT SECONDS"
//   flood F RATE           InterfacesAdded for F new random devices, each with a random iBeacon
//                                                                          -> "done SENT SECONDS"
//   unflood                InterfacesRemoved for every flood device (BlueZ's TemporaryTimeout)
//   stats                  -> "calls GETMANAGED STARTS STOPS REMOVES"
//   quit
#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static DBusConnection *conn;
static int ndevices;
static int starts, stops, removes, getmanaged;
static uint8_t (*flood_addr)[6];
static int nflood;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void device_address(int i, uint8_t a[6]) {
  a[0] = 0xC0; a[1] = 0xFF; a[2] = 0xEE; a[3] = (uint8_t)(i >> 16); a[4] = (uint8_t)(i >> 8); a[5] = (uint8_t)i;
}

static void path_of(const uint8_t a[6], char *out, size_t n) {
  snprintf(out, n, "/org/bluez/hci0/dev_%02X_%02X_%02X_%02X_%02X_%02X", a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void text_of(const uint8_t a[6], char *out, size_t n) {
  snprintf(out, n, "%02X:%02X:%02X:%02X:%02X:%02X", a[0], a[1], a[2], a[3], a[4], a[5]);
}

// The 23 bytes after Apple's company ID: type, length, UUID, major, minor, measured power.
static const uint8_t fixed_uuid[16] = {0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2,
                                       0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0};
static void ibeacon(const uint8_t uuid[16], uint16_t major, uint16_t minor, uint8_t out[23]) {
  out[0] = 0x02; out[1] = 0x15;
  memcpy(out + 2, uuid, 16);
  out[18] = major >> 8; out[19] = major & 0xFF; out[20] = minor >> 8; out[21] = minor & 0xFF;
  out[22] = (uint8_t)(int8_t)-59;
}

static void variant_string(DBusMessageIter *dict, const char *key, const char *value) {
  DBusMessageIter e, v;
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "s", &v);
  dbus_message_iter_append_basic(&v, DBUS_TYPE_STRING, &value);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

static void variant_bool(DBusMessageIter *dict, const char *key, dbus_bool_t value) {
  DBusMessageIter e, v;
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "b", &v);
  dbus_message_iter_append_basic(&v, DBUS_TYPE_BOOLEAN, &value);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

static void variant_roles(DBusMessageIter *dict) {
  DBusMessageIter e, v, arr;
  const char *key = "Roles", *central = "central", *peripheral = "peripheral";
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "as", &v);
  dbus_message_iter_open_container(&v, DBUS_TYPE_ARRAY, "s", &arr);
  dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &central);
  dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &peripheral);
  dbus_message_iter_close_container(&v, &arr);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

static void variant_path(DBusMessageIter *dict, const char *key, const char *value) {
  DBusMessageIter e, v;
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "o", &v);
  dbus_message_iter_append_basic(&v, DBUS_TYPE_OBJECT_PATH, &value);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

static void variant_rssi(DBusMessageIter *dict, int16_t rssi) {
  DBusMessageIter e, v;
  const char *key = "RSSI";
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "n", &v);
  dbus_message_iter_append_basic(&v, DBUS_TYPE_INT16, &rssi);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

// ManufacturerData: a{qv} {0x004C: <ay>}
static void variant_manufacturer(DBusMessageIter *dict, const uint8_t data[23]) {
  DBusMessageIter e, v, m, me, mv, bytes;
  const char *key = "ManufacturerData";
  uint16_t apple = 0x004C;
  const uint8_t *p = data;
  dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &e);
  dbus_message_iter_append_basic(&e, DBUS_TYPE_STRING, &key);
  dbus_message_iter_open_container(&e, DBUS_TYPE_VARIANT, "a{qv}", &v);
  dbus_message_iter_open_container(&v, DBUS_TYPE_ARRAY, "{qv}", &m);
  dbus_message_iter_open_container(&m, DBUS_TYPE_DICT_ENTRY, NULL, &me);
  dbus_message_iter_append_basic(&me, DBUS_TYPE_UINT16, &apple);
  dbus_message_iter_open_container(&me, DBUS_TYPE_VARIANT, "ay", &mv);
  dbus_message_iter_open_container(&mv, DBUS_TYPE_ARRAY, "y", &bytes);
  dbus_message_iter_append_fixed_array(&bytes, DBUS_TYPE_BYTE, &p, 23);
  dbus_message_iter_close_container(&mv, &bytes);
  dbus_message_iter_close_container(&me, &mv);
  dbus_message_iter_close_container(&m, &me);
  dbus_message_iter_close_container(&v, &m);
  dbus_message_iter_close_container(&e, &v);
  dbus_message_iter_close_container(dict, &e);
}

// One Device1 interface dictionary entry: {"org.bluez.Device1": {...}}
static void device_interfaces(DBusMessageIter *ifaces, const uint8_t a[6], const uint8_t data[23], int16_t rssi) {
  DBusMessageIter ie, props;
  const char *iface = "org.bluez.Device1";
  char text[18];
  text_of(a, text, sizeof text);
  dbus_message_iter_open_container(ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &ie);
  dbus_message_iter_append_basic(&ie, DBUS_TYPE_STRING, &iface);
  dbus_message_iter_open_container(&ie, DBUS_TYPE_ARRAY, "{sv}", &props);
  variant_string(&props, "Address", text);
  variant_string(&props, "AddressType", "random");
  variant_string(&props, "Alias", text);
  variant_path(&props, "Adapter", "/org/bluez/hci0");
  variant_bool(&props, "Paired", 0);
  variant_bool(&props, "Trusted", 0);
  variant_bool(&props, "Connected", 0);
  variant_bool(&props, "Blocked", 0);
  variant_bool(&props, "LegacyPairing", 0);
  variant_rssi(&props, rssi);
  variant_manufacturer(&props, data);
  dbus_message_iter_close_container(&ie, &props);
  dbus_message_iter_close_container(ifaces, &ie);
}

static DBusHandlerResult handle(DBusConnection *c, DBusMessage *msg, void *user) {
  (void)user;
  if (dbus_message_get_type(msg) != DBUS_MESSAGE_TYPE_METHOD_CALL) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
  const char *iface = dbus_message_get_interface(msg), *member = dbus_message_get_member(msg);
  const char *path = dbus_message_get_path(msg);
  if (!member || !path) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
  DBusMessage *reply = NULL;
  if (strcmp(member, "GetManagedObjects") == 0 && strcmp(path, "/") == 0) {
    getmanaged++;
    reply = dbus_message_new_method_return(msg);
    DBusMessageIter it, objs, oe, ifaces, ie, props;
    dbus_message_iter_init_append(reply, &it);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{oa{sa{sv}}}", &objs);
    const char *adapter = "/org/bluez/hci0", *aiface = "org.bluez.Adapter1";
    dbus_message_iter_open_container(&objs, DBUS_TYPE_DICT_ENTRY, NULL, &oe);
    dbus_message_iter_append_basic(&oe, DBUS_TYPE_OBJECT_PATH, &adapter);
    dbus_message_iter_open_container(&oe, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
    dbus_message_iter_open_container(&ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &ie);
    dbus_message_iter_append_basic(&ie, DBUS_TYPE_STRING, &aiface);
    dbus_message_iter_open_container(&ie, DBUS_TYPE_ARRAY, "{sv}", &props);
    variant_string(&props, "Address", "00:11:22:33:44:55");
    variant_string(&props, "AddressType", "public");
    variant_string(&props, "Name", "bench");
    variant_string(&props, "Alias", "bench");
    variant_bool(&props, "Powered", 1);
    variant_bool(&props, "Discoverable", 0);
    variant_bool(&props, "Pairable", 0);
    variant_bool(&props, "Discovering", starts > stops);
    variant_roles(&props);
    dbus_message_iter_close_container(&ie, &props);
    dbus_message_iter_close_container(&ifaces, &ie);
    dbus_message_iter_close_container(&oe, &ifaces);
    dbus_message_iter_close_container(&objs, &oe);
    for (int i = 0; i < ndevices; i++) {
      uint8_t a[6], data[23];
      char p[64];
      device_address(i, a);
      path_of(a, p, sizeof p);
      const char *pp = p;
      ibeacon(fixed_uuid, 1, (uint16_t)i, data);
      dbus_message_iter_open_container(&objs, DBUS_TYPE_DICT_ENTRY, NULL, &oe);
      dbus_message_iter_append_basic(&oe, DBUS_TYPE_OBJECT_PATH, &pp);
      dbus_message_iter_open_container(&oe, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
      device_interfaces(&ifaces, a, data, -70);
      dbus_message_iter_close_container(&oe, &ifaces);
      dbus_message_iter_close_container(&objs, &oe);
    }
    dbus_message_iter_close_container(&it, &objs);
  } else if (iface && strcmp(iface, "org.bluez.Adapter1") == 0) {
    if (strcmp(member, "StartDiscovery") == 0) starts++;
    else if (strcmp(member, "StopDiscovery") == 0) stops++;
    else if (strcmp(member, "RemoveDevice") == 0) {
      removes++;
      const char *dev = NULL;
      if (dbus_message_get_args(msg, NULL, DBUS_TYPE_OBJECT_PATH, &dev, DBUS_TYPE_INVALID) && dev) {
        DBusMessage *sig = dbus_message_new_signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved");
        DBusMessageIter it, arr;
        const char *name = "org.bluez.Device1";
        dbus_message_iter_init_append(sig, &it);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_OBJECT_PATH, &dev);
        dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &arr);
        dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &name);
        dbus_message_iter_close_container(&it, &arr);
        dbus_connection_send(c, sig, NULL);
        dbus_message_unref(sig);
      }
    }
    reply = dbus_message_new_method_return(msg);
  } else if (iface && strcmp(iface, "org.freedesktop.DBus.Properties") == 0) {
    reply = dbus_message_new_error(msg, "org.freedesktop.DBus.Error.UnknownProperty", "bench emitter: no properties");
  } else {
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
  }
  dbus_connection_send(c, reply, NULL);
  dbus_message_unref(reply);
  return DBUS_HANDLER_RESULT_HANDLED;
}

static void pump(int timeout_ms) { dbus_connection_read_write_dispatch(conn, timeout_ms); }

static void send_changed(int i, int16_t rssi) {
  uint8_t a[6], data[23];
  char p[64];
  device_address(i, a);
  path_of(a, p, sizeof p);
  ibeacon(fixed_uuid, 1, (uint16_t)i, data);
  DBusMessage *sig = dbus_message_new_signal(p, "org.freedesktop.DBus.Properties", "PropertiesChanged");
  DBusMessageIter it, dict, inv;
  const char *iface = "org.bluez.Device1";
  dbus_message_iter_init_append(sig, &it);
  dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
  dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &dict);
  variant_manufacturer(&dict, data);
  variant_rssi(&dict, rssi);
  dbus_message_iter_close_container(&it, &dict);
  dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &inv);
  dbus_message_iter_close_container(&it, &inv);
  dbus_connection_send(conn, sig, NULL);
  dbus_message_unref(sig);
}

static void send_added(const uint8_t a[6], const uint8_t data[23]) {
  char p[64];
  path_of(a, p, sizeof p);
  const char *pp = p;
  DBusMessage *sig = dbus_message_new_signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded");
  DBusMessageIter it, ifaces;
  dbus_message_iter_init_append(sig, &it);
  dbus_message_iter_append_basic(&it, DBUS_TYPE_OBJECT_PATH, &pp);
  dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
  device_interfaces(&ifaces, a, data, -80);
  dbus_message_iter_close_container(&it, &ifaces);
  dbus_connection_send(conn, sig, NULL);
  dbus_message_unref(sig);
}

// Keeps the outgoing queue short so the emitter measures what it sends, not what it buffers.
static void drain_outgoing(void) {
  while (dbus_connection_has_messages_to_send(conn)) pump(1);
}

// Sends `total` messages from `make(k)` at `rate` per second (0: flat out).
static double paced(long total, double rate, void (*make)(long)) {
  double t0 = now();
  long sent = 0;
  while (sent < total) {
    long due = rate > 0 ? (long)((now() - t0) * rate) + 1 : sent + 256;
    if (due > total) due = total;
    while (sent < due) make(sent++);
    drain_outgoing();
    pump(0);
    if (rate > 0 && sent < total) {
      double next = t0 + sent / rate;
      double wait = next - now();
      if (wait > 0) usleep((useconds_t)(wait * 1e6 > 1000 ? 1000 : wait * 1e6));
    }
  }
  drain_outgoing();
  return now() - t0;
}

static int stream_n;
static void make_changed(long k) { send_changed((int)(k % stream_n), (int16_t)(-55 - (k / stream_n) % 20)); }
static void make_added(long k) {
  uint8_t uuid[16], data[23];
  uint8_t *a = flood_addr[nflood + k];
  for (int j = 0; j < 6; j++) a[j] = (uint8_t)random();
  a[0] |= 0xC0;  // a static random address
  for (int j = 0; j < 16; j++) uuid[j] = (uint8_t)random();
  ibeacon(uuid, (uint16_t)random(), (uint16_t)random(), data);
  send_added(a, data);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s BUS_ADDRESS DEVICES\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  ndevices = atoi(argv[2]);
  srandom(42);
  DBusError err;
  dbus_error_init(&err);
  conn = dbus_connection_open_private(argv[1], &err);
  if (!conn || !dbus_bus_register(conn, &err)) {
    fprintf(stderr, "bench-emitter: %s\n", err.message);
    return 1;
  }
  if (dbus_bus_request_name(conn, "org.bluez", DBUS_NAME_FLAG_DO_NOT_QUEUE, &err) !=
      DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
    fprintf(stderr, "bench-emitter: cannot own org.bluez\n");
    return 1;
  }
  DBusObjectPathVTable vtable = {.message_function = handle};
  dbus_connection_register_fallback(conn, "/", &vtable, NULL);
  printf("ready\n");
  char line[256];
  struct pollfd pfd = {.fd = 0, .events = POLLIN};
  for (;;) {
    pump(5);
    if (poll(&pfd, 1, 0) <= 0) continue;
    if (!fgets(line, sizeof line, stdin)) break;
    long a = 0, c = 0;
    double b = 0;
    if (sscanf(line, "starts %ld", &a) == 1) {
      while (starts < a) pump(10);
      printf("ok\n");
    } else if (sscanf(line, "stream %ld %lf %ld", &a, &b, &c) == 3) {
      stream_n = (int)a;
      double s = paced(c, b, make_changed);
      printf("done %ld %.6f\n", c, s);
    } else if (sscanf(line, "flood %ld %lf", &a, &b) == 2) {
      flood_addr = realloc(flood_addr, sizeof *flood_addr * (size_t)(nflood + a));
      double s = paced(a, b, make_added);
      nflood += (int)a;
      printf("done %ld %.6f\n", a, s);
    } else if (strncmp(line, "unflood", 7) == 0) {
      double t0 = now();
      for (int i = 0; i < nflood; i++) {
        char p[64];
        path_of(flood_addr[i], p, sizeof p);
        const char *pp = p, *name = "org.bluez.Device1";
        DBusMessage *sig = dbus_message_new_signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved");
        DBusMessageIter it, arr;
        dbus_message_iter_init_append(sig, &it);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_OBJECT_PATH, &pp);
        dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &arr);
        dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &name);
        dbus_message_iter_close_container(&it, &arr);
        dbus_connection_send(conn, sig, NULL);
        dbus_message_unref(sig);
        if (i % 256 == 0) drain_outgoing();
      }
      drain_outgoing();
      printf("done %d %.6f\n", nflood, now() - t0);
      nflood = 0;
    } else if (strncmp(line, "stats", 5) == 0) {
      printf("calls %d %d %d %d\n", getmanaged, starts, stops, removes);
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    } else {
      printf("error unknown command\n");
    }
  }
  return 0;
}
