// Shared by the binding's files: serve.c (the session: mount/close, the poll loop), fuse_ll.c (requests
// in), replies.c (replies out, cache invalidation), attrs.c, write_behind.c, read_maps.c and slots.c.
// Everything runs on the JS thread except notify_execute and read_maps.c's read_execute.
#ifndef STRATA_FUSE_LL_H
#define STRATA_FUSE_LL_H
#define FUSE_USE_VERSION 314
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <math.h>
#include <node_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <uv.h>

enum {
  OP_LOOKUP = 0, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_READLINK, OP_MKNOD, OP_MKDIR, OP_UNLINK, OP_RMDIR,
  OP_SYMLINK, OP_RENAME, OP_LINK, OP_OPEN, OP_READ, OP_WRITE, OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR,
  OP_READDIR, OP_RELEASEDIR, OP_STATFS, OP_ACCESS, OP_CREATE, OP_CLOSED,
  OP_ABSORB,  // not a kernel request: write_behind.c hands a new file's kept bytes and times to JS
  OP_SETXATTR, OP_GETXATTR, OP_LISTXATTR, OP_REMOVEXATTR
};

#define SCRATCH_LEN 20

// Times cross in the scratch array as a stat's do, whichever way: atime, mtime, ctime in s[7..9] as
// whole milliseconds, and the nanoseconds past them (0..999,999) in s[16..18], as daemon/mount/file-time.ts
// keeps them. One double of milliseconds cannot hold nanoseconds: `touch -d '… .123456789'` read back
// `.123456787`.
enum { S_ATIME = 7, S_MTIME = 8, S_CTIME = 9, TIME_NS = 9 };
static inline void time_out(double *s, int slot, struct timespec ts) {
  s[slot] = (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
  s[slot + TIME_NS] = (double)(ts.tv_nsec % 1000000);
}
static inline struct timespec timespec_of(double whole_ms, double ns) {
  long long ms = (long long)whole_ms;
  long long sec = ms / 1000, rest = ms % 1000;
  if (rest < 0) rest += 1000, sec -= 1;
  struct timespec ts = {.tv_sec = (time_t)sec, .tv_nsec = (long)(rest * 1000000 + (long long)ns)};
  return ts;
}
static inline struct timespec time_in(const double *s, int slot) { return timespec_of(s[slot], s[slot + TIME_NS]); }

// names.c: names that are not UTF-8, in the project's form on the JS side and as bytes to the kernel.
const char *name_in(const char *name, char *out, size_t outsz);
void name_out(char *name);
int utf8_valid(const char *text);

// attrs.c: attributes answered without JS (see there for when that is coherent).
typedef struct attr_table attr_table_t;
attr_table_t *attr_table_new(void);
void attr_table_free(attr_table_t *t);
void attr_forwarded(attr_table_t *t, fuse_ino_t ino);
void attr_answered(attr_table_t *t, fuse_ino_t ino);
void attr_fill(attr_table_t *t, fuse_ino_t ino, const struct stat *st, double timeout);
void attr_drop(attr_table_t *t, fuse_ino_t ino);
const struct stat *attr_get(attr_table_t *t, fuse_ino_t ino, double *timeout);
// A setattr's mode, uid and gid (those it sets) are what the cached attributes say already: it changes
// nothing JS keeps, and the C side may answer it (tar's fchown and fchmod to the values it created).
static inline int setattr_keeps(const struct stat *attr, int to_set, const struct stat *cached) {
  if ((to_set & FUSE_SET_ATTR_MODE) && ((attr->st_mode ^ cached->st_mode) & 07777) != 0) return 0;
  if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != cached->st_uid) return 0;
  if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != cached->st_gid) return 0;
  return 1;
}

typedef struct wb_file wb_file_t;

typedef struct mount_s {
  napi_env env;
  struct fuse_session *se;
  uv_poll_t poll;
  int polling;
  int closed;           // the kernel side is gone (unmounted or aborted)
  int destroyed;        // JS called close(); freed when no notification is in flight
  int inflight;         // notifications and mapped reads queued or running on the thread pool
  // Cache notifications wait here and run on the thread pool one at a time (replies.c says why).
  struct notify_s *notify_head, *notify_tail;
  int notify_running;
  struct fuse_buf buf;
  napi_ref dispatch;
  napi_ref resource;
  napi_async_context actx;
  unsigned max_write;
  double *scratch;      // the session's Float64Array(SCRATCH_LEN), kept alive by scratch_ref
  napi_ref scratch_ref;
  uv_timer_t timer;
  int timer_open;
  double op_timeout_ms;
  attr_table_t *attrs;
  double answered[2];   // getattr and setattr requests answered from `attrs`, without JS
  // RELEASE requests read in the current batch, handed to JS after the requests behind them (fuse_ll.c,
  // serve.c).
  struct deferred_release { fuse_req_t req; double ino; double fh; } *later;
  unsigned nlater, caplater;
  double spin_us;       // how long on_readable (serve.c) waits for a tool's next request before sleeping (0: never)
  int spinning;         // requests are coming back to back: wait for the next one (on_readable)
  double replied_at;    // when on_readable last went back to sleep (us, CLOCK_MONOTONIC)
  wb_file_t *wb;        // new files whose writes and times write_behind.c keeps (usually 0 or 1)
  double wb_counts[4];  // writes kept, setattrs answered, hand-overs to JS, closes journaled here
  struct map_slot *maps;  // read_maps.c: handles whose reads are served here, by fh
  unsigned nmaps, capmaps;
  double maps_read;     // READs read_maps.c answered
  // The buffer requests are read into, lent to JS as one Buffer (recv_view) so a WRITE's bytes reach
  // it without a copy: see dispatch in fuse_ll.c. NULL where external buffers are refused (then copied).
  napi_ref recv_view;
  int buf_lent;         // buf.mem belongs to recv_view's finalizer, not to mount_free
  int dont_mask;        // the kernel sends modes without the umask applied (POSIX ACLs: fuse_ll.c ll_init)
  int caps_in_use;      // some file may have a security.capability xattr (JS says so: xattrs.c capsInUse)
} mount_t;

// Requests are read into a buffer of our own this large; libfuse reads at most its bufsize (1 MiB of
// pages plus a 4 KiB header in 3.14) into it.
#define RECV_BUF_BYTES (4u << 20)

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != napi_ok) {                                               \
      napi_throw_error(env, NULL, "strata_fuse: N-API call failed: " #call); \
      return NULL;                                                         \
    }                                                                      \
  } while (0)

// fuse_ll.c: the operations libfuse calls for each request, and the RELEASEs held back during a batch.
extern const struct fuse_lowlevel_ops LL_OPS;
void release_deferred(mount_t *m);

// slots.c: the requests JS still owes an answer.
double slot_put(fuse_req_t req, double ino);
fuse_req_t slot_take(double id);
void slots_fail(mount_t *m, double older_than_ms);
char *string_arg(napi_env env, napi_value v);
mount_t *mount_of(napi_env env, napi_value v);
void maybe_free(mount_t *m);
void define_replies(napi_env env, napi_value exports);
void define_attr_exports(napi_env env, napi_value exports);

// write_behind.c: a new small file's appended bytes and times, kept until JS needs the file.
void wb_register(mount_t *m, fuse_ino_t ino, uint64_t fh, int journal_fd, char *journal_prefix);
int wb_flush(mount_t *m, fuse_req_t req, fuse_ino_t ino, uint64_t fh);
int wb_write(mount_t *m, fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, uint64_t fh);
int wb_setattr(mount_t *m, fuse_req_t req, fuse_ino_t ino, const struct stat *attr, int to_set, int noop_bits);
void wb_spill(mount_t *m, fuse_ino_t ino);
void wb_spill_all(mount_t *m);
void wb_free_all(mount_t *m);
void define_write_behind_exports(napi_env env, napi_value exports);

// xattrs.c: replyXattr, and xattr calls on the backing directory's files.
void define_xattr_exports(napi_env env, napi_value exports);

// read_maps.c: reads of stored content served on the thread pool, without JS.
int maps_read(mount_t *m, fuse_req_t req, uint64_t fh, size_t size, off_t off);
void maps_free_all(mount_t *m);
void define_read_map_exports(napi_env env, napi_value exports);

#endif
