// The floor for `make bench`: what reading BlueZ's signal stream costs on this
// machine when nothing else is done with it.
//
//   bench-floor BUS_ADDRESS [BATCH_MS]
//
// Connects to BUS_ADDRESS (unix:path= or unix:abstract=), authenticates (SASL EXTERNAL), says
// Hello and adds the same four match rules as beaconbridge's scan (DiscoverySession.rules), with
// the messages marshalled by libdbus. Then it only reads the socket and frames the messages by
// their fixed header, the way SignalSocket's reader does: poll, read everything the socket holds
// in 64 KiB reads, count each complete message, read again at once while a read found 8 KiB or
// more, and sleep BATCH_MS (default 50, the scan's batch interval) once the socket is drained. Nothing is decoded, nothing allocated per message.
// Prints "ready" once the bus answered; on SIGTERM or SIGINT one JSON line
// {"messages": N, "bytes": B, "wakeups": W, "largestPass": bytes} and exits 0; on SIGUSR1 the same line, and goes on.
#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopping, report;
static void on_signal(int number) { (void)number; stopping = 1; }
static void on_report(int number) { (void)number; report = 1; }

static void die(const char *what) {
  fprintf(stderr, "bench-floor: %s (errno %d)\n", what, errno);
  exit(1);
}

static int connect_bus(const char *address) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  socklen_t length;
  const char *path = strstr(address, "path=");
  const char *abstract = strstr(address, "abstract=");
  if (path) {
    path += 5;
    size_t n = strcspn(path, ",");
    if (n >= sizeof sa.sun_path) die("path too long");
    memcpy(sa.sun_path, path, n);
    length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
  } else if (abstract) {
    abstract += 9;
    size_t n = strcspn(abstract, ",");
    if (n + 1 >= sizeof sa.sun_path) die("name too long");
    memcpy(sa.sun_path + 1, abstract, n);
    length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  } else {
    die("only unix:path= and unix:abstract= addresses");
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, length) != 0) die("connect");
  return fd;
}

static void write_all(int fd, const void *bytes, size_t count) {
  const char *p = bytes;
  while (count > 0) {
    ssize_t n = send(fd, p, count, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die("send");
    p += n;
    count -= (size_t)n;
  }
}

static void authenticate(int fd) {
  char line[128];
  char hex[64] = "";
  char uid[32];
  snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
  for (size_t i = 0; uid[i]; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)uid[i]);
  int n = snprintf(line, sizeof line, "%cAUTH EXTERNAL %s\r\n", 0, hex);
  write_all(fd, line, (size_t)n);
  size_t got = 0;
  while (got < 2 || line[got - 2] != '\r' || line[got - 1] != '\n') {
    if (got + 1 >= sizeof line) die("long SASL line");
    ssize_t r = read(fd, line + got, 1);
    if (r != 1) die("read SASL");
    got += 1;
  }
  if (strncmp(line, "OK ", 3) != 0) die("EXTERNAL refused");
  write_all(fd, "BEGIN\r\n", 7);
}

static void bus_call(int fd, const char *member, const char *argument, uint32_t serial) {
  DBusMessage *m = dbus_message_new_method_call(
      "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member);
  if (!m) die("dbus_message_new_method_call");
  if (argument) dbus_message_append_args(m, DBUS_TYPE_STRING, &argument, DBUS_TYPE_INVALID);
  dbus_message_set_serial(m, serial);
  char *bytes;
  int length;
  if (!dbus_message_marshal(m, &bytes, &length)) die("dbus_message_marshal");
  write_all(fd, bytes, (size_t)length);
  dbus_free(bytes);
  dbus_message_unref(m);
}

static uint32_t load32(const uint8_t *p, int big) {
  uint32_t v;
  memcpy(&v, p, 4);
  return big ? __builtin_bswap32(v) : v;
}

// The whole length of the message at p, or 0 while fewer than 16 bytes are there.
static size_t message_length(const uint8_t *p, size_t available) {
  if (available < 16) return 0;
  int big = p[0] == 'B';
  if (!big && p[0] != 'l') die("not a D-Bus message");
  size_t body = load32(p + 4, big), fields = load32(p + 12, big);
  return 16 + ((fields + 7) & ~(size_t)7) + body;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bench-floor BUS_ADDRESS [BATCH_MS]\n");
    return 2;
  }
  long batch_ms = argc == 3 ? atol(argv[2]) : 50;
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGUSR1, on_report);
  int fd = connect_bus(argv[1]);
  authenticate(fd);
  static const char *rules[] = {
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager',"
      "member='InterfacesAdded'",
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager',"
      "member='InterfacesRemoved'",
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
      "member='PropertiesChanged',path_namespace='/org/bluez'",
      "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
      "member='NameOwnerChanged',arg0='org.bluez'",
  };
  bus_call(fd, "Hello", NULL, 1);
  for (uint32_t i = 0; i < 4; i++) bus_call(fd, "AddMatch", rules[i], i + 2);

  size_t capacity = 1 << 20, filled = 0;
  uint8_t *buffer = malloc(capacity);
  if (!buffer) die("malloc");
  unsigned long long messages = 0, bytes = 0, wakeups = 0, largest = 0;
  int replies = 0, ready = 0;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  while (!stopping) {
    if (report) {
      report = 0;
      printf("{\"messages\": %llu, \"bytes\": %llu, \"wakeups\": %llu, \"largestPass\": %llu}\n", messages, bytes,
             wakeups, largest);
      fflush(stdout);
    }
    int r = poll(&pfd, 1, 200);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("poll");
    if (r == 0) continue;
    wakeups += 1;
    int drained = 0, closed = 0;
    size_t pass = 0, taken = 0;
  again:
    drained = 0;
    taken = 0;
    while (!drained) {
      if (capacity - filled < 65536) {
        capacity *= 2;
        buffer = realloc(buffer, capacity);
        if (!buffer) die("realloc");
      }
      ssize_t n = recv(fd, buffer + filled, capacity - filled, ready ? MSG_DONTWAIT : 0);
      if (n > 0) {
        filled += (size_t)n;
        taken += (size_t)n;
        bytes += (unsigned long long)n;
        if (!ready) drained = 1;
      } else if (n == 0) {
        closed = 1;
        drained = 1;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        drained = 1;
      } else {
        die("recv");
      }
    }
    pass += taken;
    if (pass > largest) largest = pass;
    // Frame: count every complete message, keep a partial one.
    size_t offset = 0, length;
    while ((length = message_length(buffer + offset, filled - offset)) != 0 && length <= filled - offset) {
      if (buffer[offset + 1] == 4) {
        messages += 1;
      } else if (!ready && ++replies == 5) {
        ready = 1;
        printf("ready\n");
        fflush(stdout);
      }
      offset += length;
    }
    memmove(buffer, buffer + offset, filled - offset);
    filled -= offset;
    if (closed) break;
    // As SignalSocket does: a read of 8 KiB or more (the socket holds about 170 small signals,
    // and the bus refills it meanwhile) is followed by another before sleeping, up to 256 KiB.
    if (ready && taken >= 8192 && pass < 262144) goto again;
    if (ready && batch_ms > 0) {
      struct timespec pause = {batch_ms / 1000, (batch_ms % 1000) * 1000000};
      while (nanosleep(&pause, &pause) != 0 && errno == EINTR && !stopping) {
      }
    }
  }
  printf("{\"messages\": %llu, \"bytes\": %llu, \"wakeups\": %llu, \"largestPass\": %llu}\n", messages, bytes,
             wakeups, largest);
  return 0;
}
