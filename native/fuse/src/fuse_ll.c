// Strata's FUSE binding: libfuse3's low-level API served on Node's own event loop.
//
// Why (measured, README "Mount mode"): with fuse-native (libfuse2, high-level API) every request went
// libfuse thread -> uv_async -> JS -> semaphore -> libfuse thread, ~4 thread wake-ups per request on this
// VM, ~64 us of the ~79 us a request cost; untar of 20,000 files ran at 0.29x bindfs. Here the
// /dev/fuse descriptor is non-blocking and watched by a uv_poll on the JS thread: a request is read,
// decoded by libfuse and handed to JS in the same callback, and JS replies (fuse_reply_*) whenever its
// promise settles. No thread hand-off at all. The low-level API also lets one JS call answer what the
// high-level API turned into two requests (create/mkdir/setattr + getattr).
//
// JS owns the inode table (ino <-> path); this file only moves requests and replies. Requests are
// identified by slot numbers into `g_reqs`; stats travel through the mount's Float64Array (`scratch`)
// that JS reads/fills synchronously around each call.
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
#include <uv.h>

enum {
  OP_LOOKUP = 0, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_READLINK, OP_MKNOD, OP_MKDIR, OP_UNLINK, OP_RMDIR,
  OP_SYMLINK, OP_RENAME, OP_LINK, OP_OPEN, OP_READ, OP_WRITE, OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR,
  OP_READDIR, OP_RELEASEDIR, OP_STATFS, OP_ACCESS, OP_CREATE, OP_CLOSED
};

#define SCRATCH_LEN 16

typedef struct mount_s {
  napi_env env;
  struct fuse_session *se;
  uv_poll_t poll;
  int polling;
  int closed;           // the kernel side is gone (unmounted or aborted)
  int destroyed;        // JS called close(); freed when no notification is in flight
  int inflight;         // notifications running on the thread pool
  struct fuse_buf buf;
  napi_ref dispatch;
  napi_ref resource;
  napi_async_context actx;
  unsigned max_write;
  double *scratch;      // the session's Float64Array(16), kept alive by scratch_ref
  napi_ref scratch_ref;
  uv_timer_t timer;
  int timer_open;
  double op_timeout_ms;
} mount_t;

// A request id is generation * 2^20 + slot: a late or duplicate reply to a reused slot is ignored
// instead of answering someone else's request.
#define SLOT_BITS 20
static fuse_req_t *g_reqs = NULL;
static double *g_gen = NULL;
static double *g_started = NULL;
static unsigned *g_free = NULL;
static unsigned g_cap = 0, g_nfree = 0;

#define CHECK(call)                                                        \
  do {                                                                     \
    if ((call) != napi_ok) {                                               \
      napi_throw_error(env, NULL, "strata_fuse: N-API call failed: " #call); \
      return NULL;                                                         \
    }                                                                      \
  } while (0)

static double coarse_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static double slot_put(fuse_req_t req) {
  if (g_nfree == 0) {
    unsigned cap = g_cap == 0 ? 64 : g_cap * 2;
    if (cap > (1u << SLOT_BITS)) return -1;
    fuse_req_t *reqs = realloc(g_reqs, cap * sizeof *reqs);
    if (reqs == NULL) return -1;
    g_reqs = reqs;
    double *gen = realloc(g_gen, cap * sizeof *gen);
    if (gen == NULL) return -1;
    g_gen = gen;
    double *started = realloc(g_started, cap * sizeof *started);
    if (started == NULL) return -1;
    g_started = started;
    unsigned *fr = realloc(g_free, cap * sizeof *fr);
    if (fr == NULL) return -1;
    g_free = fr;
    for (unsigned i = cap; i > g_cap; i--) {
      g_reqs[i - 1] = NULL;
      g_gen[i - 1] = 0;
      g_free[g_nfree++] = i - 1;
    }
    g_cap = cap;
  }
  unsigned slot = g_free[--g_nfree];
  g_reqs[slot] = req;
  g_gen[slot] += 1;
  g_started[slot] = coarse_ms();
  return g_gen[slot] * (double)(1u << SLOT_BITS) + slot;
}

static fuse_req_t slot_take(double id) {
  if (!(id >= 0)) return NULL;
  double gen = floor(id / (double)(1u << SLOT_BITS));
  unsigned slot = (unsigned)(id - gen * (double)(1u << SLOT_BITS));
  if (slot >= g_cap || g_reqs[slot] == NULL || g_gen[slot] != gen) return NULL;
  fuse_req_t req = g_reqs[slot];
  g_reqs[slot] = NULL;
  g_free[g_nfree++] = slot;
  return req;
}

// Before a session goes away every request it still owes is answered (EIO): libfuse frees a request in
// its reply, through the session.
static void fail_pending(mount_t *m) {
  for (unsigned slot = 0; slot < g_cap; slot++) {
    fuse_req_t req = g_reqs[slot];
    if (req == NULL || fuse_req_userdata(req) != m) continue;
    g_reqs[slot] = NULL;
    g_free[g_nfree++] = slot;
    fuse_reply_err(req, EIO);
  }
}

// Calls the mount's JS dispatcher: (op, id, ino, n1, n2, s1, s2). Runs inside the poll callback's
// callback scope. If JS throws (it is written not to), the request is failed with EIO so the caller in
// the kernel is never left waiting, and the exception is rethrown as uncaught.
static void dispatch(fuse_req_t req, int op, double ino, double n1, double n2, const char *s1, const char *s2,
                     const void *data, size_t len) {
  mount_t *m = fuse_req_userdata(req);
  napi_env env = m->env;
  double id = -1;
  if (op != OP_FORGET) {
    id = slot_put(req);
    if (id < 0) {
      fuse_reply_err(req, ENOMEM);
      return;
    }
  }
  napi_value argv[7], fn, global, result;
  napi_create_int32(env, op, &argv[0]);
  napi_create_double(env, id, &argv[1]);
  napi_create_double(env, ino, &argv[2]);
  napi_create_double(env, n1, &argv[3]);
  napi_create_double(env, n2, &argv[4]);
  if (s1 != NULL) napi_create_string_utf8(env, s1, NAPI_AUTO_LENGTH, &argv[5]);
  else napi_get_null(env, &argv[5]);
  if (data != NULL) {
    void *copy;
    // The request buffer is reused for the next request: JS may keep the bytes until its write settles.
    napi_create_buffer_copy(env, len, data, &copy, &argv[6]);
  } else if (s2 != NULL) {
    napi_create_string_utf8(env, s2, NAPI_AUTO_LENGTH, &argv[6]);
  } else {
    napi_get_null(env, &argv[6]);
  }
  napi_get_reference_value(env, m->dispatch, &fn);
  napi_get_global(env, &global);
  if (napi_call_function(env, global, fn, 7, argv, &result) != napi_ok) {
    if (id >= 0) {
      fuse_req_t pending = slot_take(id);
      if (pending != NULL) fuse_reply_err(pending, EIO);
    }
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
  if (op == OP_FORGET) fuse_reply_none(req);
}

static double fh_of(struct fuse_file_info *fi) { return fi == NULL ? -1 : (double)fi->fh; }

static void ll_init(void *userdata, struct fuse_conn_info *conn) {
  mount_t *m = userdata;
  // O_TRUNC arrives with open(): `cp` over a file is one capture, not a truncate capture plus a write.
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  // The kernel drops a file's cached pages when a getattr reply shows a new mtime/size (a restore).
  if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
  conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  if (m->max_write > 0) conn->max_write = m->max_write;
  conn->max_read = 0;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dispatch(req, OP_LOOKUP, (double)parent, 0, 0, name, NULL, NULL, 0);
}
static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  dispatch(req, OP_FORGET, (double)ino, (double)nlookup, 0, NULL, NULL, NULL, 0);
}
static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_GETATTR, (double)ino, fh_of(fi), 0, NULL, NULL, NULL, 0);
}
static double ms_of(struct timespec ts) { return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6; }
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
  double *scratch = ((mount_t *)fuse_req_userdata(req))->scratch;
  scratch[0] = attr->st_mode;
  scratch[1] = attr->st_uid;
  scratch[2] = attr->st_gid;
  scratch[3] = (double)attr->st_size;
  scratch[4] = ms_of(attr->st_atim);
  scratch[5] = ms_of(attr->st_mtim);
  dispatch(req, OP_SETATTR, (double)ino, fh_of(fi), to_set, NULL, NULL, NULL, 0);
}
static void ll_readlink(fuse_req_t req, fuse_ino_t ino) { dispatch(req, OP_READLINK, (double)ino, 0, 0, NULL, NULL, NULL, 0); }
static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  dispatch(req, OP_MKNOD, (double)parent, mode, (double)rdev, name, NULL, NULL, 0);
}
static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  dispatch(req, OP_MKDIR, (double)parent, mode, 0, name, NULL, NULL, 0);
}
static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dispatch(req, OP_UNLINK, (double)parent, 0, 0, name, NULL, NULL, 0);
}
static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
  dispatch(req, OP_RMDIR, (double)parent, 0, 0, name, NULL, NULL, 0);
}
static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  dispatch(req, OP_SYMLINK, (double)parent, 0, 0, name, link, NULL, 0);
}
static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
  dispatch(req, OP_RENAME, (double)parent, (double)newparent, flags, name, newname, NULL, 0);
}
static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  dispatch(req, OP_LINK, (double)ino, (double)newparent, 0, newname, NULL, NULL, 0);
}
static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_OPEN, (double)ino, fi->flags, 0, NULL, NULL, NULL, 0);
}
static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  ((mount_t *)fuse_req_userdata(req))->scratch[0] = (double)off;
  dispatch(req, OP_READ, (double)ino, (double)fi->fh, (double)size, NULL, NULL, NULL, 0);
}
static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  dispatch(req, OP_WRITE, (double)ino, (double)fi->fh, (double)off, NULL, NULL, buf, size);
}
static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_FLUSH, (double)ino, (double)fi->fh, 0, NULL, NULL, NULL, 0);
}
static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_RELEASE, (double)ino, (double)fi->fh, 0, NULL, NULL, NULL, 0);
}
static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
  dispatch(req, OP_FSYNC, (double)ino, (double)fi->fh, datasync, NULL, NULL, NULL, 0);
}
static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  (void)fi;
  dispatch(req, OP_OPENDIR, (double)ino, 0, 0, NULL, NULL, NULL, 0);
}
static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  ((mount_t *)fuse_req_userdata(req))->scratch[0] = (double)off;
  dispatch(req, OP_READDIR, (double)ino, (double)fi->fh, (double)size, NULL, NULL, NULL, 0);
}
static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_RELEASEDIR, (double)ino, (double)fi->fh, 0, NULL, NULL, NULL, 0);
}
static void ll_statfs(fuse_req_t req, fuse_ino_t ino) { dispatch(req, OP_STATFS, (double)ino, 0, 0, NULL, NULL, NULL, 0); }
static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask) {
  dispatch(req, OP_ACCESS, (double)ino, mask, 0, NULL, NULL, NULL, 0);
}
static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
  dispatch(req, OP_CREATE, (double)parent, mode, fi->flags, name, NULL, NULL, 0);
}

static const struct fuse_lowlevel_ops LL_OPS = {
  .init = ll_init, .lookup = ll_lookup, .forget = ll_forget, .getattr = ll_getattr, .setattr = ll_setattr,
  .readlink = ll_readlink, .mknod = ll_mknod, .mkdir = ll_mkdir, .unlink = ll_unlink, .rmdir = ll_rmdir,
  .symlink = ll_symlink, .rename = ll_rename, .link = ll_link, .open = ll_open, .read = ll_read,
  .write = ll_write, .flush = ll_flush, .release = ll_release, .fsync = ll_fsync, .opendir = ll_opendir,
  .readdir = ll_readdir, .releasedir = ll_releasedir, .statfs = ll_statfs, .access = ll_access,
  .create = ll_create,
};

static void mount_free(mount_t *m) {
  fail_pending(m);
  if (m->se != NULL) fuse_session_destroy(m->se);
  free(m->buf.mem);
  free(m);
}

static void maybe_free(mount_t *m) {
  if (m->destroyed && m->inflight == 0 && m->polling == 0 && m->timer_open == 0) mount_free(m);
}

static void on_poll_closed(uv_handle_t *handle) {
  mount_t *m = handle->data;
  m->polling = 0;
  maybe_free(m);
}

static void on_timer_closed(uv_handle_t *handle) {
  mount_t *m = handle->data;
  m->timer_open = 0;
  maybe_free(m);
}

// Safety net kept from fuse-native's per-operation timeout: a request JS has not answered within
// op_timeout_ms fails with EIO, so a bug or a stalled engine cannot leave a tool hanging on the mount
// forever. A late reply from JS then finds its slot answered and is ignored.
static void on_timer(uv_timer_t *handle) {
  mount_t *m = handle->data;
  double limit = coarse_ms() - m->op_timeout_ms;
  for (unsigned slot = 0; slot < g_cap; slot++) {
    fuse_req_t req = g_reqs[slot];
    if (req == NULL || g_started[slot] > limit || fuse_req_userdata(req) != m) continue;
    g_reqs[slot] = NULL;
    g_free[g_nfree++] = slot;
    fuse_reply_err(req, EIO);
  }
}

static void stop_polling(mount_t *m) {
  if (m->polling == 1) {
    m->polling = 2;
    uv_poll_stop(&m->poll);
    uv_close((uv_handle_t *)&m->poll, on_poll_closed);
  }
}

// Reads every request the kernel has queued (the fd is non-blocking) and hands each to JS, one callback
// scope per batch of up to 64: promises JS settled synchronously reply when the scope closes. (Busy-
// polling the fd for the next request before returning to epoll was tried: no gain, 5.61 s vs 5.56 s
// with 50 us, 6.27 s with 200 us for the 20,000-file untar; the cost is CPU per request, not wake-ups.)
static void on_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  mount_t *m = handle->data;
  napi_env env = m->env;
  int gone = status < 0;
  while (!gone && !m->closed) {
    int res = fuse_session_receive_buf(m->se, &m->buf);
    if (res == -EINTR) continue;
    if (res == -EAGAIN) break;
    if (res <= 0 || fuse_session_exited(m->se)) {
      gone = 1;
      break;
    }
    napi_handle_scope scope;
    napi_callback_scope cscope;
    napi_value resource;
    napi_open_handle_scope(env, &scope);
    napi_get_reference_value(env, m->resource, &resource);
    napi_open_callback_scope(env, resource, m->actx, &cscope);
    for (int i = 0; i < 64; i++) {
      fuse_session_process_buf(m->se, &m->buf);
      if (m->closed) break;
      res = fuse_session_receive_buf(m->se, &m->buf);
      if (res == -EINTR) res = fuse_session_receive_buf(m->se, &m->buf);
      if (res == -EAGAIN) break;
      if (res <= 0 || fuse_session_exited(m->se)) {
        gone = 1;
        break;
      }
    }
    napi_close_callback_scope(env, cscope);
    napi_close_handle_scope(env, scope);
  }
  if (gone && !m->closed) {
    m->closed = 1;
    stop_polling(m);
    napi_handle_scope scope;
    napi_callback_scope cscope;
    napi_value resource, fn, global, argv[7], result;
    napi_open_handle_scope(env, &scope);
    napi_get_reference_value(env, m->resource, &resource);
    napi_open_callback_scope(env, resource, m->actx, &cscope);
    napi_create_int32(env, OP_CLOSED, &argv[0]);
    for (int i = 1; i < 5; i++) napi_create_int32(env, 0, &argv[i]);
    napi_get_null(env, &argv[5]);
    napi_get_null(env, &argv[6]);
    napi_get_reference_value(env, m->dispatch, &fn);
    napi_get_global(env, &global);
    napi_call_function(env, global, fn, 7, argv, &result);
    napi_close_callback_scope(env, cscope);
    napi_close_handle_scope(env, scope);
  }
}

static mount_t *mount_of(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || p == NULL) {
    napi_throw_type_error(env, NULL, "strata_fuse: not a mount handle");
    return NULL;
  }
  return p;
}

static char *string_arg(napi_env env, napi_value v) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *s = malloc(len + 1);
  if (s != NULL) napi_get_value_string_utf8(env, v, s, len + 1, &len);
  return s;
}

// mount(mountpoint, options: string, dispatch, maxWrite, scratch: Float64Array, opTimeoutMs) -> handle
static napi_value js_mount(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) {
    napi_throw_type_error(env, NULL, "mount(mountpoint, options, dispatch, maxWrite, scratch, opTimeoutMs)");
    return NULL;
  }
  napi_typedarray_type type;
  size_t length;
  void *data;
  CHECK(napi_get_typedarray_info(env, argv[4], &type, &length, &data, NULL, NULL));
  if (type != napi_float64_array || length < SCRATCH_LEN) {
    napi_throw_type_error(env, NULL, "scratch must be a Float64Array(16)");
    return NULL;
  }

  char *mnt = string_arg(env, argv[0]);
  char *opts = string_arg(env, argv[1]);
  uint32_t max_write = 0;
  napi_get_value_uint32(env, argv[3], &max_write);
  mount_t *m = calloc(1, sizeof *m);
  if (mnt == NULL || opts == NULL || m == NULL) {
    free(mnt), free(opts), free(m);
    napi_throw_error(env, "ENOMEM", "strata_fuse: out of memory");
    return NULL;
  }
  m->env = env;
  m->max_write = max_write;
  m->scratch = data;
  napi_get_value_double(env, argv[5], &m->op_timeout_ms);

  char *args[] = {"strata", "-o", opts, NULL};
  struct fuse_args fargs = FUSE_ARGS_INIT(opts[0] == '\0' ? 1 : 3, args);
  m->se = fuse_session_new(&fargs, &LL_OPS, sizeof LL_OPS, m);
  fuse_opt_free_args(&fargs);
  free(opts);
  if (m->se == NULL) {
    free(mnt), free(m);
    napi_throw_error(env, "EINVAL", "fuse_session_new failed (bad mount options?)");
    return NULL;
  }
  if (fuse_session_mount(m->se, mnt) != 0) {
    free(mnt);
    fuse_session_destroy(m->se);
    free(m);
    napi_throw_error(env, "EMOUNT", "fuse_session_mount failed (see stderr)");
    return NULL;
  }
  free(mnt);
  int fd = fuse_session_fd(m->se);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  uv_loop_t *loop;
  CHECK(napi_get_uv_event_loop(env, &loop));
  CHECK(napi_create_reference(env, argv[2], 1, &m->dispatch));
  CHECK(napi_create_reference(env, argv[4], 1, &m->scratch_ref));
  napi_value resource, name;
  CHECK(napi_create_object(env, &resource));
  CHECK(napi_create_reference(env, resource, 1, &m->resource));
  CHECK(napi_create_string_utf8(env, "StrataFuse", NAPI_AUTO_LENGTH, &name));
  CHECK(napi_async_init(env, resource, name, &m->actx));
  uv_poll_init(loop, &m->poll, fd);
  m->poll.data = m;
  m->polling = 1;
  uv_poll_start(&m->poll, UV_READABLE, on_readable);
  if (m->op_timeout_ms > 0) {
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
    m->timer_open = 1;
    uint64_t every = (uint64_t)(m->op_timeout_ms / 4);
    uv_timer_start(&m->timer, on_timer, every < 1000 ? 1000 : every, every < 1000 ? 1000 : every);
    uv_unref((uv_handle_t *)&m->timer);
  }
  CHECK(napi_create_external(env, m, NULL, NULL, &out));
  return out;
}

// close(handle): stops serving and closes /dev/fuse (the kernel fails what is still queued). The caller
// has already detached the mount point (lazy unmount), so nothing new can arrive.
static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL || m->destroyed) return NULL;
  m->destroyed = 1;
  m->closed = 1;
  fail_pending(m);
  napi_delete_reference(env, m->dispatch);
  napi_delete_reference(env, m->resource);
  napi_delete_reference(env, m->scratch_ref);
  napi_async_destroy(env, m->actx);
  if (m->timer_open == 1) {
    m->timer_open = 2;
    uv_timer_stop(&m->timer);
    uv_close((uv_handle_t *)&m->timer, on_timer_closed);
  }
  if (m->polling == 1) stop_polling(m);
  maybe_free(m);
  return NULL;
}

static void fill_stat(fuse_req_t req, struct stat *st, double ino) {
  memset(st, 0, sizeof *st);
  const double *s = ((mount_t *)fuse_req_userdata(req))->scratch;
  st->st_mode = (mode_t)s[0];
  st->st_uid = (uid_t)s[1];
  st->st_gid = (gid_t)s[2];
  st->st_size = (off_t)s[3];
  st->st_nlink = (nlink_t)s[4];
  st->st_blksize = (blksize_t)s[5];
  st->st_blocks = (blkcnt_t)s[6];
  struct timespec *ts[3] = {&st->st_atim, &st->st_mtim, &st->st_ctim};
  for (int i = 0; i < 3; i++) {
    double ms = s[7 + i];
    double sec = floor(ms / 1000.0);
    ts[i]->tv_sec = (time_t)sec;
    ts[i]->tv_nsec = (long)((ms - sec * 1000.0) * 1e6);
  }
  st->st_ino = (ino_t)ino;
}

// Reply helpers: the first argument is the request slot. A slot already answered is ignored (returns false).
static fuse_req_t req_arg(napi_env env, napi_value v) {
  double id = -1;
  if (napi_get_value_double(env, v, &id) != napi_ok) return NULL;
  return slot_take(id);
}

static napi_value bool_value(napi_env env, int ok) {
  napi_value out;
  napi_get_boolean(env, ok, &out);
  return out;
}

#define ARGS(n)                                                   \
  size_t argc = n;                                                \
  napi_value argv[n];                                             \
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));   \
  fuse_req_t req = req_arg(env, argv[0]);                         \
  if (req == NULL) return bool_value(env, 0);

static double num(napi_env env, napi_value v) {
  double d = 0;
  napi_get_value_double(env, v, &d);
  return d;
}

// replyErr(id, errno)
static napi_value js_reply_err(napi_env env, napi_callback_info info) {
  ARGS(2)
  fuse_reply_err(req, (int)num(env, argv[1]));
  return bool_value(env, 1);
}

static void entry_of(napi_env env, fuse_req_t req, napi_value *argv, struct fuse_entry_param *e) {
  memset(e, 0, sizeof *e);
  e->ino = (fuse_ino_t)num(env, argv[1]);
  e->generation = 1;
  e->entry_timeout = num(env, argv[2]);
  e->attr_timeout = num(env, argv[3]);
  if (e->ino != 0) fill_stat(req, &e->attr, (double)e->ino);
}

// replyEntry(id, ino, entryTimeout, attrTimeout) with the stat in scratch; ino 0 = negative entry.
static napi_value js_reply_entry(napi_env env, napi_callback_info info) {
  ARGS(4)
  struct fuse_entry_param e;
  entry_of(env, req, argv, &e);
  fuse_reply_entry(req, &e);
  return bool_value(env, 1);
}

// replyCreate(id, ino, entryTimeout, attrTimeout, fh, keepCache) with the stat in scratch.
static napi_value js_reply_create(napi_env env, napi_callback_info info) {
  ARGS(6)
  struct fuse_entry_param e;
  entry_of(env, req, argv, &e);
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  fi.fh = (uint64_t)num(env, argv[4]);
  fi.keep_cache = num(env, argv[5]) != 0;
  if (fuse_reply_create(req, &e, &fi) == -ENOENT) return bool_value(env, 0);
  return bool_value(env, 1);
}

// replyAttr(id, ino, attrTimeout) with the stat in scratch.
static napi_value js_reply_attr(napi_env env, napi_callback_info info) {
  ARGS(3)
  struct stat st;
  fill_stat(req, &st, num(env, argv[1]));
  fuse_reply_attr(req, &st, num(env, argv[2]));
  return bool_value(env, 1);
}

// replyOpen(id, fh, keepCache) -> false if the open was interrupted (no release will follow).
static napi_value js_reply_open(napi_env env, napi_callback_info info) {
  ARGS(3)
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  fi.fh = (uint64_t)num(env, argv[1]);
  fi.keep_cache = num(env, argv[2]) != 0;
  return bool_value(env, fuse_reply_open(req, &fi) != -ENOENT);
}

// replyWrite(id, count)
static napi_value js_reply_write(napi_env env, napi_callback_info info) {
  ARGS(2)
  fuse_reply_write(req, (size_t)num(env, argv[1]));
  return bool_value(env, 1);
}

// replyBuf(id, buffer, length)
static napi_value js_reply_buf(napi_env env, napi_callback_info info) {
  ARGS(3)
  void *data = NULL;
  size_t len = 0;
  CHECK(napi_get_buffer_info(env, argv[1], &data, &len));
  size_t n = (size_t)num(env, argv[2]);
  fuse_reply_buf(req, data, n < len ? n : len);
  return bool_value(env, 1);
}

// replyReadlink(id, target)
static napi_value js_reply_readlink(napi_env env, napi_callback_info info) {
  ARGS(2)
  char *target = string_arg(env, argv[1]);
  if (target == NULL) fuse_reply_err(req, ENOMEM);
  else fuse_reply_readlink(req, target);
  free(target);
  return bool_value(env, 1);
}

// replyStatfs(id) with [bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax] in scratch.
static napi_value js_reply_statfs(napi_env env, napi_callback_info info) {
  ARGS(1)
  struct statvfs sv;
  memset(&sv, 0, sizeof sv);
  const double *s = ((mount_t *)fuse_req_userdata(req))->scratch;
  sv.f_bsize = (unsigned long)s[0];
  sv.f_frsize = (unsigned long)s[1];
  sv.f_blocks = (fsblkcnt_t)s[2];
  sv.f_bfree = (fsblkcnt_t)s[3];
  sv.f_bavail = (fsblkcnt_t)s[4];
  sv.f_files = (fsfilcnt_t)s[5];
  sv.f_ffree = (fsfilcnt_t)s[6];
  sv.f_favail = (fsfilcnt_t)s[7];
  sv.f_fsid = (unsigned long)s[8];
  sv.f_flag = (unsigned long)s[9];
  sv.f_namemax = (unsigned long)s[10];
  fuse_reply_statfs(req, &sv);
  return bool_value(env, 1);
}

// replyDir(id, names: string[], start, size): entries from names[start] on, each with offset index+1.
static napi_value js_reply_dir(napi_env env, napi_callback_info info) {
  ARGS(4)
  uint32_t count = 0;
  CHECK(napi_get_array_length(env, argv[1], &count));
  size_t start = (size_t)num(env, argv[2]);
  size_t size = (size_t)num(env, argv[3]);
  char *buf = malloc(size == 0 ? 1 : size);
  if (buf == NULL) {
    fuse_reply_err(req, ENOMEM);
    return bool_value(env, 1);
  }
  size_t used = 0;
  char name[1024];
  struct stat st;
  memset(&st, 0, sizeof st);
  st.st_ino = 0xffffffff;
  for (size_t i = start; i < count; i++) {
    napi_value v;
    size_t len = 0;
    if (napi_get_element(env, argv[1], (uint32_t)i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, name, sizeof name, &len) != napi_ok)
      break;
    size_t need = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf, used);
  free(buf);
  return bool_value(env, 1);
}

typedef struct {
  mount_t *m;
  fuse_ino_t ino;
  char *name;
  int result;
  napi_async_work work;
  napi_deferred deferred;
} notify_t;

// Runs on the thread pool: the kernel may wait for a request of ours (a page lock held by a pending read,
// a directory lock held by a pending lookup) before it completes a notification; the JS thread must keep
// answering meanwhile, so it never calls these itself.
static void notify_execute(napi_env env, void *data) {
  (void)env;
  notify_t *n = data;
  if (n->m->closed) {
    n->result = 0;
  } else if (n->name == NULL) {
    n->result = fuse_lowlevel_notify_inval_inode(n->m->se, n->ino, 0, 0);
  } else {
    n->result = fuse_lowlevel_notify_inval_entry(n->m->se, n->ino, n->name, strlen(n->name));
  }
}

static void notify_complete(napi_env env, napi_status status, void *data) {
  (void)status;
  notify_t *n = data;
  napi_value result;
  // ENOENT: the kernel did not know the inode or name, which is what we wanted.
  napi_create_int32(env, n->result == -ENOENT ? 0 : n->result, &result);
  napi_resolve_deferred(env, n->deferred, result);
  napi_delete_async_work(env, n->work);
  mount_t *m = n->m;
  m->inflight -= 1;
  maybe_free(m);
  free(n->name);
  free(n);
}

// invalidate(handle, ino, name | null) -> Promise<0 | -errno>: name null drops the inode's attributes and
// cached pages; a name drops the directory entry `name` in directory `ino`.
static napi_value js_invalidate(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], promise, resource_name;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL) return NULL;
  notify_t *n = calloc(1, sizeof *n);
  if (n == NULL) {
    napi_throw_error(env, "ENOMEM", "strata_fuse: out of memory");
    return NULL;
  }
  n->m = m;
  n->ino = (fuse_ino_t)num(env, argv[1]);
  napi_valuetype t;
  napi_typeof(env, argv[2], &t);
  if (t == napi_string) n->name = string_arg(env, argv[2]);
  CHECK(napi_create_promise(env, &n->deferred, &promise));
  CHECK(napi_create_string_utf8(env, "StrataFuseInvalidate", NAPI_AUTO_LENGTH, &resource_name));
  CHECK(napi_create_async_work(env, NULL, resource_name, notify_execute, notify_complete, n, &n->work));
  m->inflight += 1;
  CHECK(napi_queue_async_work(env, n->work));
  return promise;
}

static napi_value init_module(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"mount", NULL, js_mount, NULL, NULL, NULL, napi_enumerable, NULL},
    {"close", NULL, js_close, NULL, NULL, NULL, napi_enumerable, NULL},
    {"invalidate", NULL, js_invalidate, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyErr", NULL, js_reply_err, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyEntry", NULL, js_reply_entry, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyCreate", NULL, js_reply_create, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyAttr", NULL, js_reply_attr, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyOpen", NULL, js_reply_open, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyWrite", NULL, js_reply_write, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyBuf", NULL, js_reply_buf, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyReadlink", NULL, js_reply_readlink, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyStatfs", NULL, js_reply_statfs, NULL, NULL, NULL, napi_enumerable, NULL},
    {"replyDir", NULL, js_reply_dir, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init_module)
