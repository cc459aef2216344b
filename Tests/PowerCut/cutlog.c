// cutlog: an LD_PRELOAD library that records, for the files under one directory, every write,
// truncation, sync, rename and unlink a process makes, in the order it makes them, so that
// replay.py can rebuild what a disk would hold after a power cut at any moment: what was synced
// is kept, what was not may be lost, kept in part, torn or kept out of order (the model of
// SQLite's own crash tests, src/test6.c).
//
// The log is written with the real write(2) before the operation it records (a write the process
// was killed before making is, to the model, an unsynced write: it may or may not have reached
// the disk), and a sync is logged only after fsync(2) returned (until then nothing is durable).
// A SIGKILL leaves the log whole: the kernel keeps what write(2) gave it. Several processes may
// share one log (each record is one appending write).
//
// Environment: CUTLOG_DIR, the directory watched (its files, not its subdirectories);
// CUTLOG_FILE, the log. Record: u8 op, u32 name length, name, u64 offset, u64 length, data.
// Ops: 'W' write (offset, data), 'T' truncate (length), 'S' sync of a file, 'D' sync of the
// directory, 'R' rename (name, then the target name as data), 'U' unlink, 'C' create or open with
// O_TRUNC ('length' 1 when truncated).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 4096
static char *names[MAX_FD];  // the watched file each descriptor is open on ("" for the directory)
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static char watched[PATH_MAX];
static size_t watched_len;
static int ready;

static void init(void) {
  if (ready) return;
  ready = 1;
  const char *dir = getenv("CUTLOG_DIR"), *file = getenv("CUTLOG_FILE");
  if (!dir || !file) return;
  if (!realpath(dir, watched)) return;
  watched_len = strlen(watched);
  log_fd = (int)syscall(SYS_openat, AT_FDCWD, file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

// One record is one write(2) to a file opened with O_APPEND, so the records of processes that
// share the log (the daemon, and a CLI that writes the store while the daemon is down) never
// interleave.
static void record(char op, const char *name, uint64_t offset, uint64_t length, const void *data,
                   size_t data_length) {
  uint32_t name_length = (uint32_t)strlen(name);
  size_t size = 1 + 4 + name_length + 16 + data_length;
  char *buffer = malloc(size), *p = buffer;
  if (!buffer) abort();
  *p++ = op;
  memcpy(p, &name_length, 4), p += 4;
  memcpy(p, name, name_length), p += name_length;
  memcpy(p, &offset, 8), p += 8;
  memcpy(p, &length, 8), p += 8;
  if (data_length) memcpy(p, data, data_length);
  for (;;) {
    ssize_t n = syscall(SYS_write, log_fd, buffer, size);
    if (n == (ssize_t)size) break;
    if (n < 0 && errno == EINTR) continue;
    abort();  // a log with a hole would make the model lie
  }
  free(buffer);
}

// The name of `path` inside the watched directory, "" for the directory itself, or NULL.
static const char *watched_name(int dirfd, const char *path, char *buffer) {
  char joined[PATH_MAX * 2];
  if (path[0] != '/') {
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return NULL;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof base - 1);
      if (n < 0) return NULL;
      base[n] = 0;
    }
    snprintf(joined, sizeof joined, "%s/%s", base, path);
    path = joined;
  }
  // The file may not exist yet: resolve its directory, keep its last component.
  const char *slash = strrchr(path, '/');
  char parent[PATH_MAX], resolved[PATH_MAX];
  size_t parent_length = (size_t)(slash - path);
  if (parent_length >= sizeof parent) return NULL;
  memcpy(parent, path, parent_length);
  parent[parent_length] = 0;
  if (!realpath(parent_length ? parent : "/", resolved)) return NULL;
  const char *last = slash + 1;
  if (strcmp(resolved, watched) == 0) {
    if (*last == 0 || strcmp(last, ".") == 0) return "";
    if (strchr(last, '/') || strlen(last) >= NAME_MAX) return NULL;
    strcpy(buffer, last);
    return buffer;
  }
  // The directory itself, named by its own path.
  char full[PATH_MAX * 2];
  snprintf(full, sizeof full, "%s/%s", resolved, last);
  if (realpath(full, resolved) && strcmp(resolved, watched) == 0) return "";
  return NULL;
}

#define REAL(name) \
  static __typeof__(&name) real_##name; \
  if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

static int opened(int fd, int dirfd, const char *path, int flags) {
  if (fd < 0 || fd >= MAX_FD) return fd;
  init();
  if (log_fd < 0) return fd;
  char buffer[NAME_MAX + 1];
  const char *name = watched_name(dirfd, path, buffer);
  pthread_mutex_lock(&lock);
  free(names[fd]);
  names[fd] = name ? strdup(name) : NULL;
  if (name && *name && (flags & (O_CREAT | O_TRUNC))) record('C', name, 0, (flags & O_TRUNC) ? 1 : 0, NULL, 0);
  pthread_mutex_unlock(&lock);
  return fd;
}

static int open_mode(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, int) : 0; }

int open(const char *path, int flags, ...) {
  va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
  REAL(open);
  return opened(real_open(path, flags, mode), AT_FDCWD, path, flags);
}
int open64(const char *path, int flags, ...) {
  va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
  REAL(open64);
  return opened(real_open64(path, flags, mode), AT_FDCWD, path, flags);
}
int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
  REAL(openat);
  return opened(real_openat(dirfd, path, flags, mode), dirfd, path, flags);
}
int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap; va_start(ap, flags); int mode = open_mode(flags, ap); va_end(ap);
  REAL(openat64);
  return opened(real_openat64(dirfd, path, flags, mode), dirfd, path, flags);
}

int close(int fd) {
  REAL(close);
  if (fd >= 0 && fd < MAX_FD && names[fd]) {
    pthread_mutex_lock(&lock);
    free(names[fd]);
    names[fd] = NULL;
    pthread_mutex_unlock(&lock);
  }
  return real_close(fd);
}

static const char *file_of(int fd) { return (fd >= 0 && fd < MAX_FD && log_fd >= 0) ? names[fd] : NULL; }

static void logged_write(int fd, off_t offset, const void *data, size_t length) {
  pthread_mutex_lock(&lock);
  const char *name = file_of(fd);
  if (name && *name) record('W', name, (uint64_t)offset, length, data, length);
  pthread_mutex_unlock(&lock);
}

ssize_t pwrite(int fd, const void *data, size_t length, off_t offset) {
  REAL(pwrite);
  logged_write(fd, offset, data, length);
  return real_pwrite(fd, data, length, offset);
}
ssize_t pwrite64(int fd, const void *data, size_t length, off_t offset) {
  REAL(pwrite64);
  logged_write(fd, offset, data, length);
  return real_pwrite64(fd, data, length, offset);
}
ssize_t write(int fd, const void *data, size_t length) {
  REAL(write);
  if (file_of(fd)) {
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (fcntl(fd, F_GETFL) & O_APPEND) at = lseek(fd, 0, SEEK_END);
    if (at >= 0) logged_write(fd, at, data, length);
  }
  return real_write(fd, data, length);
}
ssize_t writev(int fd, const struct iovec *vector, int count) {
  REAL(writev);
  if (file_of(fd)) {
    off_t at = lseek(fd, 0, SEEK_CUR);
    for (int i = 0; i < count && at >= 0; i++) {
      logged_write(fd, at, vector[i].iov_base, vector[i].iov_len);
      at += (off_t)vector[i].iov_len;
    }
  }
  return real_writev(fd, vector, count);
}

static void logged_truncate(int fd, off_t length) {
  pthread_mutex_lock(&lock);
  const char *name = file_of(fd);
  if (name && *name) record('T', name, 0, (uint64_t)length, NULL, 0);
  pthread_mutex_unlock(&lock);
}
int ftruncate(int fd, off_t length) {
  REAL(ftruncate);
  logged_truncate(fd, length);
  return real_ftruncate(fd, length);
}
int ftruncate64(int fd, off_t length) {
  REAL(ftruncate64);
  logged_truncate(fd, length);
  return real_ftruncate64(fd, length);
}

static int synced(int fd, int result) {
  if (result != 0) return result;
  pthread_mutex_lock(&lock);
  const char *name = file_of(fd);
  if (name) record(*name ? 'S' : 'D', name, 0, 0, NULL, 0);
  pthread_mutex_unlock(&lock);
  return result;
}
int fsync(int fd) { REAL(fsync); return synced(fd, real_fsync(fd)); }
int fdatasync(int fd) { REAL(fdatasync); return synced(fd, real_fdatasync(fd)); }

static int renamed(int olddirfd, const char *from, int newdirfd, const char *to, int result) {
  if (result != 0) return result;
  init();
  if (log_fd < 0) return result;
  char a[NAME_MAX + 1], b[NAME_MAX + 1];
  const char *source = watched_name(olddirfd, from, a), *target = watched_name(newdirfd, to, b);
  if (source && target && *source && *target) {
    pthread_mutex_lock(&lock);
    record('R', source, 0, strlen(target), target, strlen(target));
    pthread_mutex_unlock(&lock);
  }
  return result;
}
int rename(const char *from, const char *to) {
  REAL(rename);
  return renamed(AT_FDCWD, from, AT_FDCWD, to, real_rename(from, to));
}
int renameat(int olddirfd, const char *from, int newdirfd, const char *to) {
  REAL(renameat);
  return renamed(olddirfd, from, newdirfd, to, real_renameat(olddirfd, from, newdirfd, to));
}

static int unlinked(int dirfd, const char *path, int result) {
  if (result != 0) return result;
  init();
  if (log_fd < 0) return result;
  char buffer[NAME_MAX + 1];
  const char *name = watched_name(dirfd, path, buffer);
  if (name && *name) {
    pthread_mutex_lock(&lock);
    record('U', name, 0, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
  }
  return result;
}
int unlink(const char *path) { REAL(unlink); return unlinked(AT_FDCWD, path, real_unlink(path)); }
int unlinkat(int dirfd, const char *path, int flags) {
  REAL(unlinkat);
  return unlinked(dirfd, path, real_unlinkat(dirfd, path, flags));
}
