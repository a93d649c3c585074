// Write-behind for new small files: their writes, times and close stay here until JS needs the file.
//
// Why (measured, docs/benchmarks.md): tar extracts a file as lookup, create, write (1.5 on average),
// utimens, getattr, chown, chmod, flush, release. attrs.c already answers the getattr, chown and chmod;
// the writes, the utimens and the close were still a full trip into JS each (~3.5 of ~6.5 per file),
// for bytes JS only needs at close. A file JS has just created (empty, in memory, open once:
// fuse-lowlevel.ts decides) now keeps its appended bytes and its times here. Its close (FLUSH) is
// journaled here, in journal.ts's format, answered, and only then handed to JS (OP_ABSORB), in the same
// call, so JS knows the file before anything else runs.
//
// Coherence:
// - A request about the file that we do not answer here hands the bytes over first; so does every
//   request that names paths (lookup, create, rename, readdir, ...): one of them could be this file.
//   Only forget, and requests about another inode, leave it alone. JS's own paths that look at open
//   files without a request (unmount) call spillAll first.
// - Only writes that append (offset == bytes kept) and stay within MEMORY_LIMIT are kept, and only
//   while attrs.c holds the file's attributes (so getattr answers from them stay true: we update them).
//   A restore drops them (attrDrop): the close then goes to JS, which knows what the restore changed.
// - While we keep a file, its path and exec bit cannot change without a request that hands it back
//   (rename, chmod of the exec bit): the record header JS gave us at create stays true. Other mode
//   bits are kept here and handed over with the bytes (JS keeps them per path, attrs.ts).
// - Durability is unchanged: a write's bytes lived in JS memory until close journaled them; the close
//   record is written to the journal (page cache, as JS did) before the close is answered.
#include "fuse_ll.h"

#define WB_LIMIT (64 * 1024)  // MEMORY_LIMIT in daemon/mount/file-node.ts

struct wb_file {
  fuse_ino_t ino;
  uint64_t fh;
  char *data;
  size_t len, cap;
  struct timespec mtime, ctime;
  // An atime set by utimensat (cp -p, tar); until then the file's atime reads as its mtime, as JS's
  // node has it (atime undefined).
  struct timespec atime;
  int atime_set;
  // A chmod kept here (tar creates 0600, then sets the archive's mode): handed to JS with the bytes.
  int perm_set;
  mode_t perm;
  // The mount's journal (journal.ts) and the start of this file's record header, up to its size:
  // close journals the file here, as JS would (fd -1: close goes to JS).
  int journal_fd;
  char *journal_prefix;
  struct wb_file *next;
};

static struct timespec now_ms(void) {
  // Whole milliseconds, as JS's writes set times (Date.now()): the attributes JS reports after the
  // hand-over are then exactly the ones we reported (a different mtime would make the kernel drop the
  // file's pages).
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec = ts.tv_nsec / 1000000 * 1000000;
  return ts;
}

static wb_file_t **find_link(mount_t *m, fuse_ino_t ino) {
  wb_file_t **link = &m->wb;
  while (*link != NULL && (*link)->ino != ino) link = &(*link)->next;
  return link;
}

void wb_register(mount_t *m, fuse_ino_t ino, uint64_t fh, int journal_fd, char *journal_prefix) {
  double timeout;
  const struct stat *st = attr_get(m->attrs, ino, &timeout);
  wb_file_t *f = st == NULL || *find_link(m, ino) != NULL ? NULL : calloc(1, sizeof *f);
  if (f == NULL) {  // the file's requests simply go to JS
    free(journal_prefix);
    return;
  }
  f->ino = ino;
  f->fh = fh;
  f->journal_fd = journal_prefix == NULL ? -1 : journal_fd;
  f->journal_prefix = journal_prefix;
  f->mtime = st->st_mtim;
  f->ctime = st->st_ctim;
  f->next = m->wb;
  m->wb = f;
}

// Hands the file's bytes and times to JS (dispatch: op, id -1, ino, fh, journaled, null, bytes; times
// in the scratch array, which is saved around the call: the request being dispatched may have filled
// it). `journaled`: bytes of the close record written to the journal here, or -errno if that failed.
static void hand_over(mount_t *m, wb_file_t *f, double journaled) {
  napi_env env = m->env;
  double saved[SCRATCH_LEN];
  memcpy(saved, m->scratch, sizeof saved);
  // Where a stat's times go (fuse_ll.h); an atime never set is NaN.
  if (f->atime_set) time_out(m->scratch, S_ATIME, f->atime);
  else m->scratch[S_ATIME] = NAN;
  time_out(m->scratch, S_MTIME, f->mtime);
  time_out(m->scratch, S_CTIME, f->ctime);
  m->scratch[2] = f->perm_set ? (double)f->perm : -1;
  napi_value argv[7], fn, global, result;
  void *copy;
  napi_create_int32(env, OP_ABSORB, &argv[0]);
  napi_create_double(env, -1, &argv[1]);
  napi_create_double(env, (double)f->ino, &argv[2]);
  napi_create_double(env, (double)f->fh, &argv[3]);
  napi_create_double(env, journaled, &argv[4]);
  napi_get_null(env, &argv[5]);
  napi_create_buffer_copy(env, f->len, f->len > 0 ? f->data : "", &copy, &argv[6]);
  napi_get_reference_value(env, m->dispatch, &fn);
  napi_get_global(env, &global);
  if (napi_call_function(env, global, fn, 7, argv, &result) != napi_ok) {
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
  memcpy(m->scratch, saved, sizeof saved);
  m->wb_counts[2] += 1;
}

static void free_file(wb_file_t *f) {
  free(f->data);
  free(f->journal_prefix);
  free(f);
}

static void drop(wb_file_t **link) {
  wb_file_t *f = *link;
  *link = f->next;
  free_file(f);
}

void wb_spill(mount_t *m, fuse_ino_t ino) {
  wb_file_t **link = find_link(m, ino);
  if (*link == NULL) return;
  wb_file_t *f = *link;
  *link = f->next;  // unlinked first: nothing JS does during the hand-over can find it again
  f->next = NULL;
  if (!m->destroyed) hand_over(m, f, 0);
  free_file(f);
}

// Appends the file's close record to the journal, in the format of journal.ts ([u32 LE header
// length][JSON header][bytes]), in as many write(2)s as it takes. Returns the bytes written, or -errno
// (a record may then be torn, as when JS's own append fails: journal.ts reports the journal broken).
static double append_record(wb_file_t *f) {
  char size[32];
  int size_len = snprintf(size, sizeof size, "%zu}", f->len);
  size_t prefix_len = strlen(f->journal_prefix);
  uint32_t header_len = (uint32_t)(prefix_len + (size_t)size_len);
  unsigned char length[4] = {header_len & 0xff, (header_len >> 8) & 0xff, (header_len >> 16) & 0xff, header_len >> 24};
  struct iovec iov[4] = {{length, 4}, {f->journal_prefix, prefix_len}, {size, (size_t)size_len}, {f->data, f->len}};
  size_t total = 4 + header_len + f->len, done = 0;
  int first = 0;
  while (done < total) {
    ssize_t n = writev(f->journal_fd, iov + first, 4 - first);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -(double)(n < 0 ? errno : EIO);
    done += (size_t)n;
    while (first < 4 && (size_t)n >= iov[first].iov_len) n -= (ssize_t)iov[first++].iov_len;
    if (first < 4) {
      iov[first].iov_base = (char *)iov[first].iov_base + n;
      iov[first].iov_len -= (size_t)n;
    }
  }
  return (double)total;
}

// close(2) of a file we keep: journaled here, answered, then handed to JS at once (synchronously, so
// JS never sees a journal that holds a record of a file it does not know was closed).
int wb_flush(mount_t *m, fuse_req_t req, fuse_ino_t ino, uint64_t fh) {
  wb_file_t **link = find_link(m, ino);
  wb_file_t *f = *link;
  double timeout;
  // Without its attributes JS no longer vouches for the file as we know it (a restore): JS decides.
  if (f == NULL || f->fh != fh || f->journal_fd < 0 || attr_get(m->attrs, ino, &timeout) == NULL) return 0;
  double journaled = append_record(f);
  *link = f->next;
  f->next = NULL;
  if (journaled < 0) {
    // Not journaled (a full disk): answered 0, the bytes would live only in memory until their
    // capture. JS gets the file first and answers this close itself (it versions the file now, or the
    // close fails).
    if (!m->destroyed) hand_over(m, f, journaled);
    free_file(f);
    return 0;
  }
  fuse_reply_err(req, 0);
  m->wb_counts[3] += 1;
  if (!m->destroyed) hand_over(m, f, journaled);
  free_file(f);
  return 1;
}

void wb_spill_all(mount_t *m) {
  while (m->wb != NULL) wb_spill(m, m->wb->ino);
}

void wb_free_all(mount_t *m) {
  while (m->wb != NULL) drop(&m->wb);
}

int wb_write(mount_t *m, fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, uint64_t fh) {
  wb_file_t *f = *find_link(m, ino);
  if (f == NULL || f->fh != fh || off < 0 || (size_t)off != f->len || size > WB_LIMIT - f->len) return 0;
  double timeout;
  struct stat *st = (struct stat *)attr_get(m->attrs, ino, &timeout);
  if (st == NULL) return 0;
  if (f->len + size > f->cap) {
    size_t cap = f->cap == 0 ? 4096 : f->cap;
    while (cap < f->len + size) cap *= 2;
    if (cap > WB_LIMIT) cap = WB_LIMIT;
    char *data = realloc(f->data, cap);
    if (data == NULL) return 0;
    f->data = data;
    f->cap = cap;
  }
  memcpy(f->data + f->len, buf, size);
  f->len += size;
  // What JS's writeNode does to the node: size, and mtime = ctime = now.
  f->mtime = f->ctime = now_ms();
  st->st_size = (off_t)f->len;
  st->st_blocks = (blkcnt_t)((f->len + 511) / 512);
  st->st_mtim = f->mtime;
  st->st_atim = f->atime_set ? f->atime : f->mtime;
  st->st_ctim = f->ctime;
  m->wb_counts[0] += 1;
  fuse_reply_write(req, size);
  return 1;
}

#define WB_TIME_BITS (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)

// Times, and a chmod that keeps the owner's exec bit (that bit is part of a version: JS decides), are
// kept; a chown only when it changes nothing. Anything else hands the file over.
int wb_setattr(mount_t *m, fuse_req_t req, fuse_ino_t ino, const struct stat *attr, int to_set, int noop_bits) {
  wb_file_t *f = *find_link(m, ino);
  if (f == NULL || (to_set & (WB_TIME_BITS | FUSE_SET_ATTR_MODE)) == 0 || (to_set & ~(WB_TIME_BITS | noop_bits)) != 0) return 0;
  double timeout;
  struct stat *st = (struct stat *)attr_get(m->attrs, ino, &timeout);
  if (st == NULL) return 0;
  if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != st->st_uid) return 0;
  if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != st->st_gid) return 0;
  if ((to_set & FUSE_SET_ATTR_MODE) && ((attr->st_mode ^ st->st_mode) & S_IXUSR) != 0) return 0;
  // What JS's utimens does to a node: the times as given, to the nanosecond (UTIME_NOW: the clock's,
  // as ll_setattr gives JS), ctime now (whole milliseconds, as JS's).
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) f->mtime = now;
  else if (to_set & FUSE_SET_ATTR_MTIME) f->mtime = attr->st_mtim;
  if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
    f->atime = (to_set & FUSE_SET_ATTR_ATIME_NOW) ? now : attr->st_atim;
    f->atime_set = 1;
  }
  if (to_set & FUSE_SET_ATTR_MODE) {
    f->perm = attr->st_mode & 07777;
    f->perm_set = 1;
    st->st_mode = (st->st_mode & S_IFMT) | f->perm;
  }
  f->ctime = now_ms();
  st->st_mtim = f->mtime;
  st->st_atim = f->atime_set ? f->atime : f->mtime;
  st->st_ctim = f->ctime;
  m->wb_counts[1] += 1;
  fuse_reply_attr(req, st, timeout);
  return 1;
}

// spillAll(handle): JS is about to look at open files without a request (unmount): hand over what we kept.
static napi_value js_spill_all(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  mount_t *m = mount_of(env, argv[0]);
  if (m == NULL || m->destroyed) return NULL;
  wb_spill_all(m);
  return NULL;
}

void define_write_behind_exports(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"spillAll", NULL, js_spill_all, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
