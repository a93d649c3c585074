// The session: mount and close from JS, and the loop that reads /dev/fuse on the JS thread and hands
// each request to libfuse (which calls fuse_ll.c's operations). Why on the JS thread: fuse_ll.c.
#include "fuse_ll.h"

// Before a session goes away every request it still owes is answered (EIO): libfuse frees a request in
// its reply, through the session.
static void fail_pending(mount_t *m) { slots_fail(m, -1); }

// Calls into JS from libuv's callbacks happen inside a callback scope, as for any async resource:
// promises JS settles synchronously (and the replies they send) run when the scope closes.
typedef struct {
  napi_handle_scope handles;
  napi_callback_scope callback;
} js_scope_t;

static void js_enter(mount_t *m, js_scope_t *s) {
  napi_value resource;
  napi_open_handle_scope(m->env, &s->handles);
  napi_get_reference_value(m->env, m->resource, &resource);
  napi_open_callback_scope(m->env, resource, m->actx, &s->callback);
}

static void js_leave(mount_t *m, js_scope_t *s) {
  napi_close_callback_scope(m->env, s->callback);
  napi_close_handle_scope(m->env, s->handles);
}

// Hands the RELEASEs deferred during a batch (fuse_ll.c, ll_release) to JS once the batch is served.
static void dispatch_later(mount_t *m) {
  if (m->nlater == 0) return;
  if (m->destroyed) {
    // JS closed the session during the batch: nobody is left to release anything.
    for (unsigned i = 0; i < m->nlater; i++) fuse_reply_err(m->later[i].req, 0);
    m->nlater = 0;
    return;
  }
  js_scope_t scope;
  js_enter(m, &scope);
  release_deferred(m);
  js_leave(m, &scope);
}

static void free_recv(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  free(data);
}

static void mount_free(mount_t *m) {
  fail_pending(m);
  wb_free_all(m);
  maps_free_all(m);
  attr_table_free(m->attrs);
  m->attrs = NULL;
  free(m->later);
  if (m->se != NULL) fuse_session_destroy(m->se);
  // A buffer lent to JS is freed by its finalizer, when JS lets go of it.
  if (!m->buf_lent) free(m->buf.mem);
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
    js_scope_t scope;
    js_enter(m, &scope);
    fuse_session_process_buf(m->se, &m->buf);
    js_leave(m, &scope);
  }
  m->replied_at = now_us();
  dispatch_later(m);
  if (gone && !m->closed) {
    m->closed = 1;
    stop_polling(m);
    js_scope_t scope;
    napi_value fn, global, argv[7], result;
    js_enter(m, &scope);
    napi_create_int32(env, OP_CLOSED, &argv[0]);
    for (int i = 1; i < 5; i++) napi_create_int32(env, 0, &argv[i]);
    napi_get_null(env, &argv[5]);
    napi_get_null(env, &argv[6]);
    napi_get_reference_value(env, m->dispatch, &fn);
    napi_get_global(env, &global);
    napi_call_function(env, global, fn, 7, argv, &result);
    js_leave(m, &scope);
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
    napi_throw_type_error(env, NULL, "scratch must be a Float64Array(20)");
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
  // Our own receive buffer (libfuse allocates one on the first read when there is none), lent to JS.
  m->buf.mem = malloc(RECV_BUF_BYTES);
  if (m->buf.mem != NULL) {
    napi_value view;
    if (napi_create_external_buffer(env, RECV_BUF_BYTES, m->buf.mem, free_recv, NULL, &view) == napi_ok) {
      if (napi_create_reference(env, view, 1, &m->recv_view) == napi_ok) m->buf_lent = 1;
    }
  }
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
  // The buffer stays valid while JS holds it (its finalizer frees it); nothing reads into it any more.
  if (m->recv_view != NULL) napi_delete_reference(env, m->recv_view);
  m->recv_view = NULL;
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

// A path argument into `path` (PATH_MAX bytes); 0 when it is not a string or does not fit.
static int path_in(napi_env env, napi_value value, char *path) {
  size_t len = 0;
  return napi_get_value_string_utf8(env, value, path, PATH_MAX, &len) == napi_ok && len < PATH_MAX - 1;
}

// mknod(path, mode, dev) -> 0 or errno: FIFOs, sockets and device nodes live in the mount's backing
// directory (Node has no mknod). One local syscall, on the JS thread like the rest of this binding.
static napi_value js_mknod(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char path[PATH_MAX];
  double mode = 0, dev = 0;
  if (argc < 3 || !path_in(env, argv[0], path) || napi_get_value_double(env, argv[1], &mode) != napi_ok ||
      napi_get_value_double(env, argv[2], &dev) != napi_ok) {
    napi_throw_type_error(env, NULL, "mknod(path, mode, dev)");
    return NULL;
  }
  int rc = mknod(path, (mode_t)mode, (dev_t)dev) == 0 ? 0 : errno;
  CHECK(napi_create_int32(env, rc, &out));
  return out;
}

// lutimens(path, atimeMs, atimeNs, mtimeMs, mtimeNs) -> 0 or errno: utimensat(2) on a real path, never
// through a link (touch -h), to the nanosecond (fuse_ll.h's time_out form; NaN ms leaves that time as
// it is). Node's utimes takes seconds in a double: `.123456789` became `.123456716`. For the backing
// directory's files and an in-place mount's write-back; one local syscall, on the JS thread like mknod.
static napi_value js_lutimens(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char path[PATH_MAX];
  double t[4] = {0, 0, 0, 0};
  int ok = argc >= 5 && path_in(env, argv[0], path);
  for (int i = 0; ok && i < 4; i++) ok = napi_get_value_double(env, argv[1 + i], &t[i]) == napi_ok;
  if (!ok) {
    napi_throw_type_error(env, NULL, "lutimens(path, atimeMs, atimeNs, mtimeMs, mtimeNs)");
    return NULL;
  }
  struct timespec times[2];
  for (int i = 0; i < 2; i++) {
    if (isnan(t[2 * i])) times[i] = (struct timespec){.tv_sec = 0, .tv_nsec = UTIME_OMIT};
    else times[i] = timespec_of(t[2 * i], t[2 * i + 1]);
  }
  int rc = utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
  CHECK(napi_create_int32(env, rc, &out));
  return out;
}

// startWriteback(fd, offset, length) -> 0 or errno: starts writing a range of a file to disk without
// waiting (sync_file_range, SYNC_FILE_RANGE_WRITE). The staging worker calls it behind a long
// sequential write (Node has no binding): the disk then works while the tool still writes, instead of
// all at its fsync (a 2 GiB dd with conv=fsync).
static napi_value js_start_writeback(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd = -1;
  double offset = 0, length = 0;
  if (argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_double(env, argv[1], &offset) != napi_ok ||
      napi_get_value_double(env, argv[2], &length) != napi_ok || offset < 0 || length < 0) {
    napi_throw_type_error(env, NULL, "startWriteback(fd, offset, length)");
    return NULL;
  }
  int rc = sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE) == 0 ? 0 : errno;
  CHECK(napi_create_int32(env, rc, &out));
  return out;
}

static napi_value init_module(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"mount", NULL, js_mount, NULL, NULL, NULL, napi_enumerable, NULL},
    {"close", NULL, js_close, NULL, NULL, NULL, napi_enumerable, NULL},
    {"mknod", NULL, js_mknod, NULL, NULL, NULL, napi_enumerable, NULL},
    {"lutimens", NULL, js_lutimens, NULL, NULL, NULL, napi_enumerable, NULL},
    {"startWriteback", NULL, js_start_writeback, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  define_replies(env, exports);
  define_attr_exports(env, exports);
  define_write_behind_exports(env, exports);
  define_xattr_exports(env, exports);
  define_read_map_exports(env, exports);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init_module)
