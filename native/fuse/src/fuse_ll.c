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
// identified by slot numbers (slots.c); stats travel through the mount's Float64Array (`scratch`)
// that JS reads/fills synchronously around each call. Replies live in replies.c.
#include "fuse_ll.h"

// Before a session goes away every request it still owes is answered (EIO): libfuse frees a request in
// its reply, through the session.
static void fail_pending(mount_t *m) { slots_fail(m, -1); }

static void release_deferred(mount_t *m);

// Requests about one inode only (write_behind.c hands over just that file's kept bytes); every other
// request names paths, and could be about any file.
static int about_one_inode(int op) {
  switch (op) {
    case OP_GETATTR: case OP_SETATTR: case OP_READLINK: case OP_OPEN: case OP_READ: case OP_WRITE:
    case OP_FLUSH: case OP_RELEASE: case OP_FSYNC: case OP_ACCESS:
      return 1;
    default:
      return 0;
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
  // A file the tool closed before it renamed or removed something must not look open to JS then (it
  // would be hidden as .fuse_hidden*, as if still in use): deferred RELEASEs go first.
  if (m->nlater > 0 && (op == OP_RENAME || op == OP_UNLINK || op == OP_RMDIR || op == OP_LINK)) release_deferred(m);
  // JS must see every byte the tool wrote before it answers anything that could look at the file.
  if (m->wb != NULL && op != OP_FORGET) {
    if (about_one_inode(op)) wb_spill(m, (fuse_ino_t)ino);
    else wb_spill_all(m);
  }
  if (op != OP_FORGET) {
    id = slot_put(req, ino);
    if (id < 0) {
      fuse_reply_err(req, ENOMEM);
      return;
    }
    attr_forwarded(m->attrs, (fuse_ino_t)ino);
  } else {
    attr_drop(m->attrs, (fuse_ino_t)ino);
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
  mount_t *m = fuse_req_userdata(req);
  double timeout;
  const struct stat *cached = attr_get(m->attrs, ino, &timeout);
  if (cached != NULL) {
    m->answered[0] += 1;
    fuse_reply_attr(req, cached, timeout);
    return;
  }
  dispatch(req, OP_GETATTR, (double)ino, fh_of(fi), 0, NULL, NULL, NULL, 0);
}
static double ms_of(struct timespec ts) { return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6; }
// Owners are not stored and modes are only the owner's exec bit: a chown, or a chmod that keeps that
// bit, changes nothing JS would answer differently (ops-meta.ts).
#define SETATTR_NOOP_BITS                                                                                   \
  (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_CTIME | FUSE_SET_ATTR_KILL_SUID | \
   FUSE_SET_ATTR_KILL_SGID | FUSE_SET_ATTR_KILL_PRIV | FUSE_SET_ATTR_FILE)
static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
  mount_t *m = fuse_req_userdata(req);
  if (m->wb != NULL && wb_setattr(m, req, ino, attr, to_set, SETATTR_NOOP_BITS)) return;
  double timeout;
  const struct stat *cached = attr_get(m->attrs, ino, &timeout);
  if (cached != NULL && (to_set & ~SETATTR_NOOP_BITS) == 0 &&
      (!(to_set & FUSE_SET_ATTR_MODE) || ((attr->st_mode ^ cached->st_mode) & S_IXUSR) == 0)) {
    m->answered[1] += 1;
    fuse_reply_attr(req, cached, timeout);
    return;
  }
  double *scratch = m->scratch;
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
  mount_t *m = fuse_req_userdata(req);
  if (m->wb != NULL && wb_write(m, req, ino, buf, size, off, fi->fh)) return;
  dispatch(req, OP_WRITE, (double)ino, (double)fi->fh, (double)off, NULL, NULL, buf, size);
}
static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mount_t *m = fuse_req_userdata(req);
  if (m->wb != NULL && wb_flush(m, req, ino, fi->fh)) return;
  dispatch(req, OP_FLUSH, (double)ino, (double)fi->fh, 0, NULL, NULL, NULL, 0);
}
// The kernel sends RELEASE after close(2) has returned (nobody waits for it), typically together with
// the tool's next request (tar: the next file's lookup). Handing it to JS first made that request wait
// for it; it now goes to JS once the requests read with it have been handed over (on_readable), or
// before a rename or removal (dispatch), which must not see the file still open.
static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  mount_t *m = fuse_req_userdata(req);
  if (m->nlater == m->caplater) {
    unsigned cap = m->caplater == 0 ? 16 : m->caplater * 2;
    struct deferred_release *later = realloc(m->later, cap * sizeof *later);
    if (later == NULL) {
      dispatch(req, OP_RELEASE, (double)ino, (double)fi->fh, 0, NULL, NULL, NULL, 0);
      return;
    }
    m->later = later;
    m->caplater = cap;
  }
  m->later[m->nlater++] = (struct deferred_release){req, (double)ino, (double)fi->fh};
}

// Hands the deferred RELEASEs to JS; the caller is inside a callback scope.
static void release_deferred(mount_t *m) {
  // Taken off the list first: dispatch() below may come back here (it does not for RELEASE, but the
  // list must never be walked while it changes).
  while (m->nlater > 0) {
    struct deferred_release r = m->later[0];
    m->nlater -= 1;
    memmove(m->later, m->later + 1, m->nlater * sizeof *m->later);
    dispatch(r.req, OP_RELEASE, r.ino, r.fh, 0, NULL, NULL, NULL, 0);
  }
}

static void dispatch_later(mount_t *m) {
  if (m->nlater == 0) return;
  if (m->destroyed) {
    // JS closed the session during the batch: nobody is left to release anything.
    for (unsigned i = 0; i < m->nlater; i++) fuse_reply_err(m->later[i].req, 0);
    m->nlater = 0;
    return;
  }
  napi_env env = m->env;
  napi_handle_scope scope;
  napi_callback_scope cscope;
  napi_value resource;
  napi_open_handle_scope(env, &scope);
  napi_get_reference_value(env, m->resource, &resource);
  napi_open_callback_scope(env, resource, m->actx, &cscope);
  release_deferred(m);
  napi_close_callback_scope(env, cscope);
  napi_close_handle_scope(env, scope);
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
  wb_free_all(m);
  attr_table_free(m->attrs);
  m->attrs = NULL;
  free(m->later);
  if (m->se != NULL) fuse_session_destroy(m->se);
  free(m->buf.mem);
  free(m);
}

void maybe_free(mount_t *m) {
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
  slots_fail(m, m->op_timeout_ms);
}

static void stop_polling(mount_t *m) {
  if (m->polling == 1) {
    m->polling = 2;
    uv_poll_stop(&m->poll);
    uv_close((uv_handle_t *)&m->poll, on_poll_closed);
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

// The next request, or -EAGAIN. While a tool sends requests back to back (tar: each one ~10-30 us
// after our reply), it waits up to spin_us for it instead of going back to sleep in epoll: sleeping
// and being woken again is a context switch each way, and on this VM (Intel, PVM) that was ~20% of
// the serving thread (perf: finish_task_switch under epoll_pwait). Measured, 20,000-file untar with
// fast wakeups, 6 interleaved rounds: 4.68 s with 100 us vs 5.11 s without (300 us: 5.09 s); on the
// AMD machine of earlier sessions 50 us gained nothing. Adaptive, so an idle or slow-paced mount does
// not burn CPU: a wait that ends empty stops the waiting, and it resumes only when a request comes
// within spin_us of the moment we went to sleep.
static int next_request(mount_t *m, int first) {
  int res = fuse_session_receive_buf(m->se, &m->buf);
  if (res == -EINTR) res = fuse_session_receive_buf(m->se, &m->buf);
  if (res == -EINTR) return -EAGAIN;
  if (first) {
    if (res != -EAGAIN && m->spin_us > 0 && now_us() - m->replied_at <= m->spin_us) m->spinning = 1;
    return res;
  }
  if (res != -EAGAIN || !m->spinning) return res;
  double until = now_us() + m->spin_us;
  do {
    res = fuse_session_receive_buf(m->se, &m->buf);
    if (res != -EAGAIN && res != -EINTR) return res;
  } while (now_us() < until);
  m->spinning = 0;
  return -EAGAIN;
}

// Reads every request the kernel has queued (the fd is non-blocking) and hands each to JS in a callback
// scope of its own: promises JS settled synchronously reply when the scope closes, so the answer is on
// its way before we ask the kernel for the next request. (One scope per batch of 64 used to read the
// next request first: one more read(2), usually failing with EAGAIN, before every reply of a tool that
// waits for each answer, as tar does.) After 64 requests we return to the event loop (epoll is level-
// triggered and comes straight back), so timers and messages are not starved.
static void on_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  mount_t *m = handle->data;
  napi_env env = m->env;
  int gone = status < 0;
  for (int i = 0; i < 64 && !gone && !m->closed; i++) {
    int res = next_request(m, i == 0);
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
    fuse_session_process_buf(m->se, &m->buf);
    napi_close_callback_scope(env, cscope);
    napi_close_handle_scope(env, scope);
  }
  m->replied_at = now_us();
  dispatch_later(m);
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

mount_t *mount_of(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok || p == NULL) {
    napi_throw_type_error(env, NULL, "strata_fuse: not a mount handle");
    return NULL;
  }
  return p;
}

char *string_arg(napi_env env, napi_value v) {
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
  m->attrs = attr_table_new();
  m->max_write = max_write;
  m->scratch = data;
  napi_get_value_double(env, argv[5], &m->op_timeout_ms);
  // STRATA_FUSE_SPIN_US: how long to wait for a tool's next request before sleeping (0 turns it off).
  const char *spin = getenv("STRATA_FUSE_SPIN_US");
  m->spin_us = spin != NULL && spin[0] != '\0' ? atof(spin) : 100;
  if (!(m->spin_us >= 0 && m->spin_us <= 10000)) m->spin_us = 100;

  char *args[] = {"strata", "-o", opts, NULL};
  struct fuse_args fargs = FUSE_ARGS_INIT(opts[0] == '\0' ? 1 : 3, args);
  m->se = fuse_session_new(&fargs, &LL_OPS, sizeof LL_OPS, m);
  fuse_opt_free_args(&fargs);
  free(opts);
  if (m->se == NULL) {
    attr_table_free(m->attrs);
    free(mnt), free(m);
    napi_throw_error(env, "EINVAL", "fuse_session_new failed (bad mount options?)");
    return NULL;
  }
  if (fuse_session_mount(m->se, mnt) != 0) {
    free(mnt);
    fuse_session_destroy(m->se);
    attr_table_free(m->attrs);
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

static napi_value init_module(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"mount", NULL, js_mount, NULL, NULL, NULL, napi_enumerable, NULL},
    {"close", NULL, js_close, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  define_replies(env, exports);
  define_attr_exports(env, exports);
  define_write_behind_exports(env, exports);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init_module)
