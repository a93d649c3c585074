// Strata's FUSE binding: libfuse3's low-level API served on Node's own event loop. This file is the
// requests' way in: libfuse decodes each one and calls the ll_* operation below, which hands it to JS
// (dispatch) unless the C side can answer it (attrs.c, write_behind.c). serve.c reads /dev/fuse and
// owns the session; replies.c carries JS's answers back.
//
// Why (measured, docs/mount.md "The FUSE binding"): with fuse-native (libfuse2, high-level API) every request went
// libfuse thread -> uv_async -> JS -> semaphore -> libfuse thread, ~4 thread wake-ups per request on this
// VM, ~64 us of the ~79 us a request cost; untar of 20,000 files ran at 0.29x bindfs. Here the
// /dev/fuse descriptor is non-blocking and watched by a uv_poll on the JS thread: a request is read,
// decoded by libfuse and handed to JS in the same callback, and JS replies (fuse_reply_*) whenever its
// promise settles. No thread hand-off at all. The low-level API also lets one JS call answer what the
// high-level API turned into two requests (create/mkdir/setattr + getattr).
//
// JS owns the inode table (ino <-> path); this file only moves requests. Requests are identified by
// slot numbers (slots.c); stats travel through the mount's Float64Array (`scratch`) that JS
// reads/fills synchronously around each call.
#include "fuse_ll.h"

// Requests about one inode only (write_behind.c hands over just that file's kept bytes); every other
// request names paths, and could be about any file.
static int about_one_inode(int op) {
  switch (op) {
    case OP_GETATTR: case OP_SETATTR: case OP_READLINK: case OP_OPEN: case OP_READ: case OP_WRITE:
    case OP_FLUSH: case OP_RELEASE: case OP_FSYNC: case OP_ACCESS: case OP_SETXATTR: case OP_GETXATTR:
    case OP_LISTXATTR: case OP_REMOVEXATTR:
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
    // Who creates: a new file, directory, node or link belongs to the calling process's fsuid/fsgid
    // (JS reads them from scratch[14..15], which nothing else uses), and its mode is masked by the
    // process's umask (scratch[11]) unless its directory's default ACL says otherwise: the kernel
    // leaves both to us (FUSE_CAP_DONT_MASK, ll_init).
    if (op == OP_CREATE || op == OP_MKDIR || op == OP_MKNOD || op == OP_SYMLINK) {
      const struct fuse_ctx *ctx = fuse_req_ctx(req);
      m->scratch[14] = (double)ctx->uid;
      m->scratch[15] = (double)ctx->gid;
      m->scratch[11] = m->dont_mask ? (double)ctx->umask : 0;
    }
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
  const char *recv = m->buf.mem;
  if (data != NULL && m->recv_view != NULL && recv != NULL && (const char *)data >= recv && (const char *)data + len <= recv + RECV_BUF_BYTES) {
    // Lent, not copied: the request buffer itself, with the bytes at scratch[12] for scratch[13]. It
    // holds them until this call returns (the next request is read into it); JS copies them before
    // (fuse-lowlevel.ts, Op.Write). A 1 MiB Buffer per write request was a sixth of a dd's CPU in GC.
    napi_get_reference_value(env, m->recv_view, &argv[6]);
    m->scratch[12] = (double)((const char *)data - recv);
    m->scratch[13] = (double)len;
  } else if (data != NULL) {
    void *copy;
    // The request buffer is reused for the next request: JS may keep the bytes until its write settles.
    napi_create_buffer_copy(env, len, data, &copy, &argv[6]);
    m->scratch[12] = -1;
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
  // POSIX ACLs (issue 39 item 4): the kernel enforces them (with default_permissions) and caches them;
  // we keep them (xattrs), keep the mode in step with them, and give new files their directory's
  // default ACL — which is why the umask is ours to apply too (DONT_MASK: a default ACL replaces it).
  if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
    conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
    m->dont_mask = 1;
  }
  conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  if (m->max_write > 0) conn->max_write = m->max_write;
  conn->max_read = 0;
}

// Names reach JS in the project's own form (names.c): a stray byte 0xHH as U+EF00+0xHH. A name that
// form cannot hold (its own text has U+EF80-U+EFFF) names nothing here: a new name -> EILSEQ ("Invalid
// or incomplete multibyte or wide character"), an existing one (lookup, unlink, rmdir, a rename's
// source) -> ENOENT. NAME_IN declares the mapped name `var` or answers the request and returns.
#define NAME_BUF 1024
#define NAME_IN(var, name, err)                                  \
  char var##_buf[NAME_BUF];                                      \
  const char *var = name_in(name, var##_buf, sizeof var##_buf);  \
  if (var == NULL) {                                             \
    fuse_reply_err(req, err);                                    \
    return;                                                      \
  }

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_IN(mapped, name, ENOENT);
  dispatch(req, OP_LOOKUP, (double)parent, 0, 0, mapped, NULL, NULL, 0);
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
  if (cached != NULL && (to_set & ~SETATTR_NOOP_BITS) == 0 && setattr_keeps(attr, to_set, cached)) {
    m->answered[1] += 1;
    fuse_reply_attr(req, cached, timeout);
    return;
  }
  double *scratch = m->scratch;
  scratch[0] = attr->st_mode;
  scratch[1] = attr->st_uid;
  scratch[2] = attr->st_gid;
  scratch[3] = (double)attr->st_size;
  // UTIME_NOW (touch): the time now, to the nanosecond as a local filesystem has it, the same for both.
  struct timespec now = {0, 0};
  if (to_set & (FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)) clock_gettime(CLOCK_REALTIME, &now);
  time_out(scratch, S_ATIME, (to_set & FUSE_SET_ATTR_ATIME_NOW) ? now : attr->st_atim);
  time_out(scratch, S_MTIME, (to_set & FUSE_SET_ATTR_MTIME_NOW) ? now : attr->st_mtim);
  dispatch(req, OP_SETATTR, (double)ino, fh_of(fi), to_set, NULL, NULL, NULL, 0);
}
static void ll_readlink(fuse_req_t req, fuse_ino_t ino) { dispatch(req, OP_READLINK, (double)ino, 0, 0, NULL, NULL, NULL, 0); }
static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
  NAME_IN(mapped, name, EILSEQ);
  dispatch(req, OP_MKNOD, (double)parent, mode, (double)rdev, mapped, NULL, NULL, 0);
}
static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
  NAME_IN(mapped, name, EILSEQ);
  dispatch(req, OP_MKDIR, (double)parent, mode, 0, mapped, NULL, NULL, 0);
}
static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_IN(mapped, name, ENOENT);
  dispatch(req, OP_UNLINK, (double)parent, 0, 0, mapped, NULL, NULL, 0);
}
static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
  NAME_IN(mapped, name, ENOENT);
  dispatch(req, OP_RMDIR, (double)parent, 0, 0, mapped, NULL, NULL, 0);
}
static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
  NAME_IN(mapped, name, EILSEQ);
  // A link's target is its content, bytes already; JS takes it as a string, so a target that is not
  // UTF-8 is still refused rather than stored changed.
  if (!utf8_valid(link)) {
    fuse_reply_err(req, EILSEQ);
    return;
  }
  dispatch(req, OP_SYMLINK, (double)parent, 0, 0, mapped, link, NULL, 0);
}
static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
  NAME_IN(from, name, ENOENT);
  NAME_IN(to, newname, EILSEQ);
  dispatch(req, OP_RENAME, (double)parent, (double)newparent, flags, from, to, NULL, 0);
}
static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname) {
  NAME_IN(mapped, newname, EILSEQ);
  dispatch(req, OP_LINK, (double)ino, (double)newparent, 0, mapped, NULL, NULL, 0);
}
static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
  dispatch(req, OP_OPEN, (double)ino, fi->flags, 0, NULL, NULL, NULL, 0);
}
static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
  mount_t *m = fuse_req_userdata(req);
  if (m->nmaps > 0 && maps_read(m, req, fi->fh, size, off)) return;
  m->scratch[0] = (double)off;
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
void release_deferred(mount_t *m) {
  // Taken off the list first: dispatch() below may come back here (it does not for RELEASE, but the
  // list must never be walked while it changes).
  while (m->nlater > 0) {
    struct deferred_release r = m->later[0];
    m->nlater -= 1;
    memmove(m->later, m->later + 1, m->nlater * sizeof *m->later);
    dispatch(r.req, OP_RELEASE, r.ino, r.fh, 0, NULL, NULL, NULL, 0);
  }
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
  NAME_IN(mapped, name, EILSEQ);
  dispatch(req, OP_CREATE, (double)parent, mode, fi->flags, mapped, NULL, NULL, 0);
}

// Extended attributes (POSIX ACLs among them): the name as the first string, a set's value as the
// request's bytes; the reply buffer's size (0: "how long is it") and a set's flags as numbers.
static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags) {
  dispatch(req, OP_SETXATTR, (double)ino, (double)flags, 0, name, NULL, value == NULL ? "" : value, size);
}
static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
  // Before every write the kernel asks whether the file has file capabilities to drop
  // (security.capability; file_remove_privs): one request per write, which also handed write-behind's
  // file to JS each time. Answered here while no file has any.
  mount_t *m = fuse_req_userdata(req);
  if (!m->caps_in_use && strcmp(name, "security.capability") == 0) {
    fuse_reply_err(req, ENODATA);
    return;
  }
  dispatch(req, OP_GETXATTR, (double)ino, (double)size, 0, name, NULL, NULL, 0);
}
static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  dispatch(req, OP_LISTXATTR, (double)ino, (double)size, 0, NULL, NULL, NULL, 0);
}
static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name) {
  dispatch(req, OP_REMOVEXATTR, (double)ino, 0, 0, name, NULL, NULL, 0);
}

const struct fuse_lowlevel_ops LL_OPS = {
  .init = ll_init, .lookup = ll_lookup, .forget = ll_forget, .getattr = ll_getattr, .setattr = ll_setattr,
  .readlink = ll_readlink, .mknod = ll_mknod, .mkdir = ll_mkdir, .unlink = ll_unlink, .rmdir = ll_rmdir,
  .symlink = ll_symlink, .rename = ll_rename, .link = ll_link, .open = ll_open, .read = ll_read,
  .write = ll_write, .flush = ll_flush, .release = ll_release, .fsync = ll_fsync, .opendir = ll_opendir,
  .readdir = ll_readdir, .releasedir = ll_releasedir, .statfs = ll_statfs, .access = ll_access,
  .create = ll_create, .setxattr = ll_setxattr, .getxattr = ll_getxattr, .listxattr = ll_listxattr,
  .removexattr = ll_removexattr,
};
