// Replies from JS to the kernel (fuse_reply_*), and kernel cache invalidation. The first argument of a
// reply is the request id from slots.c's table; a request already answered (or timed out) is
// ignored and the call returns false.
#include "fuse_ll.h"

static void stat_of_scratch(const double *s, struct stat *st, double ino) {
  memset(st, 0, sizeof *st);
  st->st_mode = (mode_t)s[0];
  st->st_uid = (uid_t)s[1];
  st->st_gid = (gid_t)s[2];
  st->st_size = (off_t)s[3];
  st->st_nlink = (nlink_t)s[4];
  st->st_blksize = (blksize_t)s[5];
  st->st_blocks = (blkcnt_t)s[6];
  st->st_atim = time_in(s, S_ATIME);
  st->st_mtim = time_in(s, S_MTIME);
  st->st_ctim = time_in(s, S_CTIME);
  st->st_rdev = (dev_t)s[10];
  st->st_ino = (ino_t)ino;
}

static void fill_stat(fuse_req_t req, struct stat *st, double ino) {
  stat_of_scratch(((mount_t *)fuse_req_userdata(req))->scratch, st, ino);
}

// attrFill(handle, ino, attrTimeout) with the stat in scratch: JS vouches for these attributes of
// `ino` without a request (a directory's, right after a create in it answered: the kernel asks for
// them before its next permission check there). Ignored while a request about `ino` is in flight.
static napi_value js_attr_fill(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL || m->destroyed) return NULL;
  double ino = 0, timeout = 0;
  napi_get_value_double(env, argv[1], &ino);
  napi_get_value_double(env, argv[2], &timeout);
  struct stat st;
  stat_of_scratch(m->scratch, &st, ino);
  attr_fill(m->attrs, (fuse_ino_t)ino, &st, timeout);
  return NULL;
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

// Remembers the attributes a reply carries when JS says they stay true until the next request about
// the inode (attrs.c).
static void maybe_cache(napi_env env, fuse_req_t req, napi_value cacheable, fuse_ino_t ino, const struct stat *st, double timeout) {
  if (ino == 0 || num(env, cacheable) == 0) return;
  attr_fill(((mount_t *)fuse_req_userdata(req))->attrs, ino, st, timeout);
}

// replyEntry(id, ino, entryTimeout, attrTimeout, cacheable?) with the stat in scratch; ino 0 = negative entry.
static napi_value js_reply_entry(napi_env env, napi_callback_info info) {
  ARGS(5)
  struct fuse_entry_param e;
  entry_of(env, req, argv, &e);
  maybe_cache(env, req, argv[4], e.ino, &e.attr, e.attr_timeout);
  fuse_reply_entry(req, &e);
  return bool_value(env, 1);
}

// replyCreate(id, ino, entryTimeout, attrTimeout, fh, keepCache, cacheable?, writeBehind?, journalFd?,
// journalPrefix?) with the stat in scratch. writeBehind 1: a new empty file open once, whose writes and
// times write_behind.c may keep; with the journal's fd and the file's record header up to its size,
// write_behind.c also journals and answers its close.
static napi_value js_reply_create(napi_env env, napi_callback_info info) {
  ARGS(10)
  struct fuse_entry_param e;
  entry_of(env, req, argv, &e);
  maybe_cache(env, req, argv[6], e.ino, &e.attr, e.attr_timeout);
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  fi.fh = (uint64_t)num(env, argv[4]);
  fi.keep_cache = num(env, argv[5]) != 0;
  mount_t *m = fuse_req_userdata(req);
  if (fuse_reply_create(req, &e, &fi) == -ENOENT) return bool_value(env, 0);
  if (argc >= 8 && num(env, argv[7]) != 0 && e.ino != 0 && num(env, argv[6]) != 0) {
    napi_valuetype t = napi_undefined;
    if (argc >= 10) napi_typeof(env, argv[9], &t);
    wb_register(m, e.ino, fi.fh, argc >= 9 ? (int)num(env, argv[8]) : -1, t == napi_string ? string_arg(env, argv[9]) : NULL);
  }
  return bool_value(env, 1);
}

// replyAttr(id, ino, attrTimeout, cacheable?) with the stat in scratch.
static napi_value js_reply_attr(napi_env env, napi_callback_info info) {
  ARGS(4)
  struct stat st;
  fill_stat(req, &st, num(env, argv[1]));
  maybe_cache(env, req, argv[3], (fuse_ino_t)num(env, argv[1]), &st, num(env, argv[2]));
  fuse_reply_attr(req, &st, num(env, argv[2]));
  return bool_value(env, 1);
}

// replyOpen(id, fh, flags) -> false if the open was interrupted (no release will follow). flags: 1 keep
// the cached pages, 2 (a directory) let the kernel keep its listing (see fuse-lowlevel.ts, Opendir).
static napi_value js_reply_open(napi_env env, napi_callback_info info) {
  ARGS(3)
  struct fuse_file_info fi;
  memset(&fi, 0, sizeof fi);
  fi.fh = (uint64_t)num(env, argv[1]);
  int flags = (int)num(env, argv[2]);
  fi.keep_cache = (flags & 1) != 0;
  fi.cache_readdir = (flags & 2) != 0;
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
    name_out(name);
    size_t need = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf, used);
  free(buf);
  return bool_value(env, 1);
}

typedef struct notify_s {
  mount_t *m;
  fuse_ino_t ino;
  char *name;
  int result;
  napi_async_work work;
  napi_deferred deferred;
  struct notify_s *next;
} notify_t;

// Runs on the thread pool: the kernel may wait for a request of ours (a page lock held by a pending read,
// a directory lock held by a pending lookup: a mkdir holds its parent's lock while it revalidates the
// new name) before it completes a notification; the JS thread must keep answering meanwhile, so it
// never calls these itself. And one at a time: the requests the kernel waits for are answered with the
// thread pool's help (JS's fs calls, read_maps.c), and four notifications blocked at once took all of
// libuv's four threads — the lookup never got its answer and the mount hung (fsstress, seed 9).
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

// Settles the notification's promise with `result` and frees it; the queue moves on (notify_next).
static void notify_settle(napi_env env, notify_t *n, int result) {
  napi_value value;
  napi_create_int32(env, result, &value);
  napi_resolve_deferred(env, n->deferred, value);
  napi_delete_async_work(env, n->work);
  n->m->notify_running = 0;
  n->m->inflight -= 1;
  free(n->name);
  free(n);
}

static void notify_next(napi_env env, mount_t *m) {
  while (!m->notify_running && m->notify_head != NULL) {
    notify_t *n = m->notify_head;
    m->notify_head = n->next;
    if (m->notify_head == NULL) m->notify_tail = NULL;
    m->notify_running = 1;
    // Not expected to fail; what matters then is that the promise settles and the queue moves on.
    if (napi_queue_async_work(env, n->work) != napi_ok) notify_settle(env, n, -EIO);
  }
}

static void notify_complete(napi_env env, napi_status status, void *data) {
  (void)status;
  notify_t *n = data;
  mount_t *m = n->m;
  // ENOENT: the kernel did not know the inode or name, which is what we wanted.
  notify_settle(env, n, n->result == -ENOENT ? 0 : n->result);
  notify_next(env, m);
  maybe_free(m);
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
  if (t == napi_string) {
    n->name = string_arg(env, argv[2]);
    if (n->name != NULL) name_out(n->name);  // the kernel's name: bytes (names.c)
  }
  CHECK(napi_create_promise(env, &n->deferred, &promise));
  CHECK(napi_create_string_utf8(env, "StrataFuseInvalidate", NAPI_AUTO_LENGTH, &resource_name));
  CHECK(napi_create_async_work(env, NULL, resource_name, notify_execute, notify_complete, n, &n->work));
  m->inflight += 1;
  if (m->notify_tail == NULL) m->notify_head = n;
  else m->notify_tail->next = n;
  m->notify_tail = n;
  notify_next(env, m);
  return promise;
}

void define_replies(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"invalidate", NULL, js_invalidate, NULL, NULL, NULL, napi_enumerable, NULL},
    {"attrFill", NULL, js_attr_fill, NULL, NULL, NULL, napi_enumerable, NULL},
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
}
